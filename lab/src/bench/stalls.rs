//! The stall table of `mnemo-lab bench serve --stalls`: recall latency while the
//! server does slow work of its own, against the same load with nothing in
//! the background.
//!
//! - (a) 1,000 dialogue turns embedded in the background with the local
//!   model (skipped, with a note, when the model is not installed);
//! - (b) a consolidation cycle whose LLM (a stub on 127.0.0.1) answers in
//!   2 s per call, distilling three sessions; one more client writes
//!   memories meanwhile, so the writer's availability shows too.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use mnemo_host::config::EmbedderChoice;
use serde_json::{Value, json};

use super::child::{Load, Server, fresh, no_cron, recall_until, stub_env};
use super::fill::fill;
use super::serve_args::ServeBenchArgs;
use super::{Corpus, Table, percentile};

/// Memories in each stall store.
const STALL_MEMORIES: usize = 1_000;
/// Turns embedded in the background in (a).
const STALL_TURNS: usize = 1_000;
/// Sessions the cycle of (b) distils, and turns in each.
const STALL_SESSIONS: usize = 3;
const STALL_SESSION_TURNS: usize = 40;

pub fn run(
    t: &mut Table,
    base: &mnemo_host::Config,
    dir: &Path,
    stub: &str,
    args: &ServeBenchArgs,
) -> anyhow::Result<()> {
    let mut corpus = Corpus::new(args.seed() ^ 0x5eed);
    let texts: Arc<Vec<String>> = Arc::new(
        (0..STALL_MEMORIES)
            .map(|_| corpus.sentence(8, 30))
            .collect(),
    );
    match &base.embedder {
        EmbedderChoice::Local { dir: model, .. } if model.join("config.json").is_file() => {
            let env = local_env(model);
            background_embedding(t, dir, &env, &texts, &mut corpus, args)?;
        }
        _ => t.note("stall (a) skipped: the local model is not installed (scripts/fetch-model)"),
    }
    llm_cycle(t, dir, stub, &texts, &mut corpus, args)
}

fn local_env(model: &Path) -> Vec<(String, String)> {
    let mut env = vec![
        ("MNEMO_EMBEDDER".to_string(), "local".to_string()),
        ("MNEMO_MODEL_DIR".to_string(), model.display().to_string()),
        ("MNEMO_LLM_LEVEL".to_string(), "off".to_string()),
    ];
    env.extend(no_cron());
    env
}

fn p99_rows(t: &mut Table, what: &str, quiet: &Load, busy: &Load, how: &str) {
    t.row(
        &format!("stall {what}: recall p99, quiet"),
        format!("{:.1}", quiet.p(0.99)),
        "ms",
        how,
    );
    t.row(
        &format!("stall {what}: recall p99, during"),
        format!("{:.1}", busy.p(0.99)),
        "ms",
        how,
    );
    t.row(
        &format!("stall {what}: recall max, during"),
        format!("{:.1}", busy.p(1.0)),
        "ms",
        how,
    );
    if busy.errors > 0 {
        t.row(
            &format!("stall {what}: recall errors"),
            busy.errors.to_string(),
            "",
            how,
        );
    }
}

fn stats(base: &str) -> anyhow::Result<Value> {
    Ok(ureq::get(&format!("{base}/stats")).call()?.into_json()?)
}

/// (a) Turns arrive without vectors; the embedding worker embeds them
/// while the clients recall.
fn background_embedding(
    t: &mut Table,
    dir: &Path,
    env: &[(String, String)],
    texts: &Arc<Vec<String>>,
    corpus: &mut Corpus,
    args: &ServeBenchArgs,
) -> anyhow::Result<()> {
    let db = fresh(dir, "stall-embedding.db");
    let server = Server::start(&db, dir, env)?;
    fill(&server.base, texts, args.clients())?;
    let quiet = timed_load(&server.base, texts, args, 5)?;
    let agent = ureq::AgentBuilder::new().build();
    for i in 0..STALL_TURNS {
        agent
            .post(&format!("{}/episodes", server.base))
            .set("Content-Type", "application/json")
            .send_string(
                &json!({"session_id": format!("s{}", i / 50), "role": "user", "content": corpus.sentence(8, 30)})
                    .to_string(),
            )
            .context("ingesting a turn")?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (base, stop) = (server.base.clone(), stop.clone());
        std::thread::spawn(move || -> anyhow::Result<Duration> {
            let started = Instant::now();
            while stats(&base)?["episode_vectors"].as_u64().unwrap_or(0) < STALL_TURNS as u64 {
                std::thread::sleep(Duration::from_millis(50));
                anyhow::ensure!(
                    started.elapsed() < Duration::from_secs(900),
                    "embedding stalled"
                );
            }
            stop.store(true, Ordering::SeqCst);
            Ok(started.elapsed())
        })
    };
    let busy = recall_until(&server.base, texts, args.clients(), 3, &stop, None);
    stop.store(true, Ordering::SeqCst);
    let took = watcher
        .join()
        .map_err(|_| anyhow::anyhow!("the watcher panicked"))??;
    let busy = busy?;
    let how = format!(
        "{STALL_TURNS} turns embedded by the local model in {:.1} s, {} clients",
        took.as_secs_f64(),
        args.clients()
    );
    p99_rows(t, "(a) background embedding", &quiet, &busy, &how);
    Ok(())
}

fn timed_load(
    base: &str,
    texts: &Arc<Vec<String>>,
    args: &ServeBenchArgs,
    seconds: u64,
) -> anyhow::Result<Load> {
    super::child::recall_load(base, texts, args.clients(), seconds.min(args.seconds()), 9)
}

/// (b) A cycle whose every LLM call takes 2 s, with readers and a writer
/// busy meanwhile.
fn llm_cycle(
    t: &mut Table,
    dir: &Path,
    stub: &str,
    texts: &Arc<Vec<String>>,
    corpus: &mut Corpus,
    args: &ServeBenchArgs,
) -> anyhow::Result<()> {
    let db = fresh(dir, "stall-cycle.db");
    let mut env = stub_env(stub, 64);
    env.retain(|(k, _)| k != "MNEMO_LLM_LEVEL");
    env.extend([
        ("MNEMO_LLM_LEVEL".to_string(), "auto".to_string()),
        ("MNEMO_LLM_URL".to_string(), stub.to_string()),
        ("MNEMO_LLM_TIMEOUT_SECS".to_string(), "30".to_string()),
    ]);
    let server = Server::start(&db, dir, &env)?;
    fill(&server.base, texts, args.clients())?;
    let agent = ureq::AgentBuilder::new().build();
    for s in 0..STALL_SESSIONS {
        for _ in 0..STALL_SESSION_TURNS {
            agent
                .post(&format!("{}/episodes", server.base))
                .set("Content-Type", "application/json")
                .send_string(
                    &json!({"session_id": format!("cycle-{s}"), "role": "user", "content": corpus.sentence(8, 20)})
                        .to_string(),
                )?;
        }
    }
    let quiet = timed_load(&server.base, texts, args, 5)?;
    let stop = Arc::new(AtomicBool::new(false));
    let cycle = {
        let (base, stop) = (server.base.clone(), stop.clone());
        std::thread::spawn(move || -> anyhow::Result<(Duration, Value)> {
            let started = Instant::now();
            let report: Value = ureq::post(&format!("{base}/consolidate"))
                .timeout(Duration::from_secs(900))
                .set("Content-Type", "application/json")
                .send_string(r#"{"session_idle_minutes": 0}"#)?
                .into_json()?;
            stop.store(true, Ordering::SeqCst);
            Ok((started.elapsed(), report))
        })
    };
    // One more client writes while the cycle runs.
    let writer = {
        let (base, stop) = (server.base.clone(), stop.clone());
        let mut words = Corpus::new(args.seed() ^ 0xbeef);
        std::thread::spawn(move || {
            let agent = ureq::AgentBuilder::new().build();
            let mut times = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                let ok = agent
                    .post(&format!("{base}/memories"))
                    .set("Content-Type", "application/json")
                    .send_string(&json!({"content": words.sentence(8, 30)}).to_string())
                    .is_ok();
                if ok {
                    times.push(started.elapsed());
                }
            }
            times.sort();
            times
        })
    };
    let busy = recall_until(&server.base, texts, args.clients(), 4, &stop, None);
    stop.store(true, Ordering::SeqCst);
    let (took, report) = cycle
        .join()
        .map_err(|_| anyhow::anyhow!("the cycle thread panicked"))??;
    let writes = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    let busy = busy?;
    let usage: Value = agent
        .get(&format!("{}/llm-usage", server.base))
        .call()?
        .into_json()?;
    let calls = usage["summary"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter(|r| r["component"] != "embedding")
                .filter_map(|r| r["calls"].as_u64())
                .sum::<u64>()
        })
        .unwrap_or(0);
    let how = format!(
        "a cycle of {:.1} s, {calls} LLM calls of 2 s, {} sessions, {} facts; {} clients",
        took.as_secs_f64(),
        report["sessions"].as_array().map_or(0, |s| s.len()),
        report["facts_added"],
        args.clients()
    );
    p99_rows(t, "(b) LLM cycle", &quiet, &busy, &how);
    t.row(
        "stall (b) LLM cycle: remember p99, during",
        format!("{:.1}", percentile(&writes, 0.99).as_secs_f64() * 1e3),
        "ms",
        &format!(
            "{} writes by one more client during the cycle",
            writes.len()
        ),
    );
    Ok(())
}
