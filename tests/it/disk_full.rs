//! A disk that fills up (issue 20, faults), over real HTTP on 127.0.0.1:
//! `mnemo serve` runs under a file-size limit (RLIMIT_FSIZE) just above
//! its database, and is written to until a write no longer fits. That
//! write gets a typed JSON error, the server keeps answering reads, and
//! every acknowledged write is there — then, and after a restart without
//! the limit, with the indexes intact.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use common::server::*;
use serde_json::{Value, json};

/// `mnemo serve` on `dir/m.db`, each file it writes limited to `limit`
/// bytes when given: (child, base URL).
fn serve(dir: &std::path::Path, limit: Option<u64>) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    cmd.arg("--db")
        .arg(dir.join("m.db"))
        .args(["serve", "--port", "0"])
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_EMBEDDER", "hash")
        .env("MNEMO_LLM_LEVEL", "off")
        .env_remove("MNEMO_API_KEY")
        .envs(NO_CRON)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(bytes) = limit {
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let base = listening(&mut child);
    (child, base)
}

fn post_to(base: &str, path: &str, body: Value) -> (u16, Value) {
    call(
        ureq::post(&format!("{base}{path}")),
        Some(&body.to_string()),
    )
}

fn listed(base: &str) -> Vec<String> {
    let (st, v) = call(ureq::get(&format!("{base}/memories?limit=500")), None);
    assert_eq!(st, 200, "{v}");
    let mut out: Vec<String> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

fn text(i: usize) -> String {
    // Distinct words so that no write is folded into another by dedup.
    let words: String = (0..400).map(|k| format!(" w{i}x{k}")).collect();
    format!("note {i}:{words}")
}

#[test]
fn a_full_disk_fails_the_write_that_does_not_fit_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    // A first start creates the database and the compiled component's cache.
    let (mut first, base) = serve(dir.path(), None);
    let mut acked = Vec::new();
    for i in 0..5 {
        let (st, v) = post_to(&base, "/memories", json!({"content": text(i)}));
        assert_eq!(st, 201, "{v}");
        acked.push(text(i));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let largest = ["m.db", "m.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.path().join(f)).ok())
        .map(|m| m.len())
        .max()
        .unwrap();

    let (mut limited, base) = serve(dir.path(), Some(largest + 256 * 1024));
    let mut refused = None;
    for i in 5..2_000 {
        let (st, v) = post_to(&base, "/memories", json!({"content": text(i)}));
        if st == 201 {
            acked.push(text(i));
            continue;
        }
        refused = Some((i, st, v));
        break;
    }
    let (i, st, v) = refused.expect("the limit was never reached");
    assert!(
        st >= 500 && v["error"]["code"].is_string() && v["error"]["message"].is_string(),
        "write {i}: a typed JSON error: {st} {v}"
    );
    let refusal = format!("{st} {}: {}", v["error"]["code"], v["error"]["message"]);
    // The server still answers reads, and holds every acknowledged write.
    assert_eq!(listed(&base), {
        let mut a = acked.clone();
        a.sort();
        a
    });
    let (st, r) = post_to(&base, "/recall", json!({"query": "note w3x7", "dry": true}));
    assert_eq!(st, 200, "{r}");
    assert!(
        r["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["content"] == text(3).as_str())
    );
    let (st, _) = call(ureq::get(&format!("{base}/health")), None);
    assert_eq!(st, 200);
    limited.kill().unwrap();
    limited.wait().unwrap();

    // Without the limit: every acknowledged write, the indexes consistent,
    // and writes work again.
    let (mut after, base) = serve(dir.path(), None);
    assert_eq!(listed(&base), {
        let mut a = acked.clone();
        a.sort();
        a
    });
    let (_, health) = call(ureq::get(&format!("{base}/health")), None);
    let integrity = &health["integrity"];
    assert_eq!(
        integrity["memories"], integrity["memory_fts_rows"],
        "{health}"
    );
    assert_eq!(integrity["memories"], acked.len() as u64, "{health}");
    assert_eq!(integrity["orphan_links"], 0, "{health}");
    let (st, v) = post_to(&base, "/memories", json!({"content": "room again"}));
    assert_eq!(st, 201, "{v}");
    eprintln!(
        "disk full: {} writes acknowledged, write {i} refused ({refusal}), all present after a restart",
        acked.len()
    );
    after.kill().unwrap();
    after.wait().unwrap();
}
