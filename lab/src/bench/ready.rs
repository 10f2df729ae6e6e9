//! Waiting, in the benches, for what a server builds after its writes:
//! the HNSW graphs and the full-text partitions, as `/health` shows them
//! (a search starts a SQLite build; Postgres's graph grows in the
//! background).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{query, recall_once_in};

/// The HNSW index as `/health` shows it now.
fn ann_health(agent: &ureq::Agent, base: &str) -> anyhow::Result<Value> {
    let health: Value = agent.get(&format!("{base}/health")).call()?.into_json()?;
    Ok(health["ann"].clone())
}

/// HNSW builds running now.
pub(super) fn ann_building(base: &str) -> anyhow::Result<u64> {
    let ann = ann_health(&ureq::AgentBuilder::new().build(), base)?;
    Ok(ann["building"].as_u64().unwrap_or(0))
}

/// Recalls until the HNSW index is settled: no build running, and a graph
/// for a large partition whose fresh (exactly scanned) vectors are too few
/// to start a rebuild (when `large`: the namespace is past the exact
/// threshold). A SQLite build starts on the first search of a partition
/// that needs one, so the recalls ask in `ns` (the default namespace:
/// `None`); Postgres's move runs in the background. Returns the time
/// taken.
pub(super) fn ann_ready(
    base: &str,
    texts: &Arc<Vec<String>>,
    ns: Option<&str>,
    large: bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let agent = ureq::AgentBuilder::new().build();
    let deadline = started + Duration::from_secs(3 * 3600);
    for round in 0.. {
        recall_once_in(&agent, base, &query(texts, round), ns)?;
        let ann = loop {
            let ann = ann_health(&agent, base)?;
            if ann["building"].as_u64() == Some(0) {
                break ann;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the HNSW graph was not built in 3 hours"
            );
            std::thread::sleep(Duration::from_millis(250));
        };
        let points = ann["points"].as_u64().unwrap_or(0);
        let fresh = ann["fresh"].as_u64().unwrap_or(0);
        let settled = ann["enabled"] == false
            || !large
            || (points > 0 && fresh < mnemo_host::storage::ann::ANN_FLUSH_AT as u64);
        if settled {
            break;
        }
    }
    Ok(started.elapsed())
}

/// Recalls until `/health` shows full-text partitions and none building
/// (a saved one is loaded at start; one without a file is built on the
/// first search that needs it, so the recalls ask in `ns`): the time
/// taken, and the partitions loaded.
pub(super) fn text_ready(
    base: &str,
    texts: &Arc<Vec<String>>,
    ns: Option<&str>,
) -> anyhow::Result<(Duration, u64)> {
    let started = Instant::now();
    let agent = ureq::AgentBuilder::new().build();
    let mut round = 0;
    loop {
        let health: Value = agent.get(&format!("{base}/health")).call()?.into_json()?;
        let text = &health["text"];
        if text["enabled"] != true
            || (text["partitions"].as_u64() > Some(0) && text["building"] == 0)
        {
            return Ok((started.elapsed(), text["loaded"].as_u64().unwrap_or(0)));
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(3600),
            "the full-text partitions were not ready in an hour"
        );
        recall_once_in(&agent, base, &query(texts, round), ns)?;
        round += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
}
