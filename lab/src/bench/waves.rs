//! `mnemo-lab bench cycle`: one consolidation cycle of many independent
//! LLM calls against an LLM that takes a fixed time per answer (a stub on
//! 127.0.0.1), planned one call at a time and in waves of parallel calls
//! (`MNEMO_LLM_CONCURRENCY`, `host/src/llm/rehearsal.rs`). Each of
//! `--sessions` namespaces holds one pending session of 3 turns, so the
//! cycle's extractions are independent. Prints the cycle's wall time, the
//! calls made and the sessions consolidated; asserts nothing.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::child::{Server, fresh, stub_env};
use super::{Table, work_dir};

#[derive(clap::Args)]
pub struct CycleBenchArgs {
    /// Namespaces, each with one pending session (one extraction call).
    #[arg(long, default_value_t = 40)]
    sessions: usize,
    /// The stub LLM's time per answer, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    delay_ms: u64,
    /// The concurrency settings to compare.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    concurrency: Vec<usize>,
    /// Work folder (default: a fresh temporary one).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CycleBenchArgs) -> anyhow::Result<()> {
    let (dir, _tmp) = work_dir(args.dir.as_ref())?;
    let stubs = super::stubs::start(64, Duration::from_millis(args.delay_ms))?;
    let mut t = Table {
        json: args.json,
        rows: Vec::new(),
    };
    t.note(&format!(
        "mnemo-lab bench cycle: {} pending sessions in as many namespaces, an LLM stub answering in {} ms",
        args.sessions, args.delay_ms
    ));
    for &c in &args.concurrency {
        let db = fresh(&dir, &format!("cycle-{c}.db"));
        let mut env = stub_env(&stubs.base, 64);
        env.retain(|(k, _)| k != "MNEMO_LLM_LEVEL");
        env.extend(
            [
                ("MNEMO_LLM_LEVEL", "auto".to_string()),
                ("MNEMO_LLM_URL", stubs.base.clone()),
                ("MNEMO_LLM_TIMEOUT_SECS", "60".to_string()),
                ("MNEMO_LLM_CONCURRENCY", c.to_string()),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        let server = Server::start(&db, &dir, &env)?;
        let agent = ureq::AgentBuilder::new().build();
        for s in 0..args.sessions {
            for turn in 0..3 {
                let body = json!({"namespace": format!("n{s}"), "session_id": "talk", "role": "user",
                                  "content": format!("I moved to city {s} in year {turn}")});
                agent
                    .post(&format!("{}/episodes", server.base))
                    .set("Content-Type", "application/json")
                    .send_string(&body.to_string())?;
            }
        }
        let started = Instant::now();
        let report: Value = agent
            .post(&format!("{}/consolidate", server.base))
            .timeout(Duration::from_secs(3_600))
            .set("Content-Type", "application/json")
            .send_string(r#"{"session_idle_minutes": 0}"#)?
            .into_json()?;
        let took = started.elapsed();
        let usage: Value = agent
            .get(&format!("{}/llm-usage", server.base))
            .call()?
            .into_json()?;
        let calls: u64 = usage["summary"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter(|r| r["component"] != "embedding")
                    .filter_map(|r| r["calls"].as_u64())
                    .sum()
            })
            .unwrap_or(0);
        let sessions = report["sessions"].as_array().map_or(0, Vec::len);
        let how = format!("{calls} LLM calls, {sessions} sessions consolidated");
        t.row(
            &format!("cycle wall time, concurrency {c}"),
            format!("{:.1}", took.as_secs_f64()),
            "s",
            &how,
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}
