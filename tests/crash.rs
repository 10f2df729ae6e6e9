//! Crash safety (issue 20's short form): `mnemo serve` is killed with
//! SIGKILL at a random moment while three clients write memories and dialogue
//! turns; after a restart on the same file every acknowledged write is
//! there and the indexes agree with the rows (`/health` integrity). The
//! long form is `MNEMO_CRASH_ROUNDS=20 cargo test -p mnemo-host --test
//! crash -- --nocapture`; both print their figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::server::*;
use serde_json::json;

/// Writes until the server stops answering; returns the acknowledged ids.
fn writer(base: String, who: usize, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut acked = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let memory = ureq::post(&format!("{base}/memories")).send_json(json!({
            "content": format!("Writer {who} note {n}: the build number is {}", n * 7 + who),
            "skip_dedup": true,
        }));
        match memory {
            Ok(r) => {
                let v: serde_json::Value = r.into_json().unwrap();
                acked.push(v["id"].as_str().unwrap().to_string());
            }
            Err(ureq::Error::Status(code, r)) => panic!("{code}: {}", r.into_string().unwrap()),
            Err(_) => break, // the server is gone
        }
        let turn = ureq::post(&format!("{base}/episodes")).send_json(json!({
            "session_id": format!("w{who}"), "role": "user", "content": format!("turn {n} of writer {who}")
        }));
        if let Err(ureq::Error::Transport(_)) = turn {
            break;
        }
    }
    acked
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let rounds: u64 = std::env::var("MNEMO_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut dir = tempfile::tempdir().unwrap();
    let mut all_acked: Vec<String> = Vec::new();
    for round in 0..rounds {
        let server = start_in(dir, None);
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..3)
            .map(|who| {
                let (base, stop, acked) = (server.base.clone(), stop.clone(), acked.clone());
                std::thread::spawn(move || {
                    let ids = writer(base, who, stop);
                    acked.lock().unwrap().extend(ids);
                })
            })
            .collect();
        // A moment that differs from round to round, mid-write.
        std::thread::sleep(Duration::from_millis(300 + (round * 379) % 900));
        dir = server.crash();
        stop.store(true, Ordering::SeqCst);
        for h in handles {
            h.join().unwrap();
        }
        all_acked.extend(acked.lock().unwrap().drain(..));
        // After the restart: every write acknowledged so far is there.
        let server = start_in(dir, None);
        let missing: Vec<&String> = all_acked
            .iter()
            .filter(|id| call(ureq::get(&format!("{}/memories/{id}", server.base)), None).0 != 200)
            .collect();
        let (_, health) = call(ureq::get(&format!("{}/health", server.base)), None);
        let i = &health["integrity"];
        println!(
            "round {}: {} acknowledged memory writes so far, {} missing; integrity {i}",
            round + 1,
            all_acked.len(),
            missing.len()
        );
        assert!(missing.is_empty(), "lost after kill -9: {missing:?}");
        assert_eq!(i["memories"], i["memory_fts_rows"], "{health}");
        assert_eq!(i["episodes"], i["episode_fts_rows"], "{health}");
        assert_eq!(i["orphan_links"], 0, "{health}");
        dir = server.crash();
    }
    assert!(
        all_acked.len() > 10,
        "the writers wrote: {}",
        all_acked.len()
    );
}
