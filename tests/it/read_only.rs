//! A database that cannot be written (issue 20, faults), over real HTTP on
//! 127.0.0.1: a store written by one server is bind-mounted read-only (a
//! read-only file system refuses root too, unlike a file mode) and served
//! from there. The server starts, says `read_only` in `/health`, answers
//! every read (recall, context, lists, search, export), refuses every write
//! with a typed 503 `read_only` JSON error and keeps serving; the CLI reads
//! and refuses writes alike. Served writable again, nothing is missing or
//! half-written and writes work.
//!
//! Needs root and `mount` (as CI has); a machine without them fails this
//! test rather than skipping it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::server::*;
use serde_json::json;

/// A read-only bind mount of a folder, unmounted when dropped.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    fn new(from: &Path, at: &Path) -> Self {
        let mount = |args: &[&str]| {
            let out = Command::new("mount")
                .args(args)
                .output()
                .expect("mount runs");
            assert!(
                out.status.success(),
                "mount {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let (from, at) = (from.to_str().unwrap(), at.to_str().unwrap());
        mount(&["--bind", from, at]);
        let guard = Self(at.into());
        mount(&["-o", "remount,ro,bind", at]);
        guard
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_database_serves_reads_and_refuses_writes() {
    // A store with memories, a session and a fact, written as usual.
    let server = start(None);
    let mut ids = Vec::new();
    for text in [
        "Ada's favourite colour is teal",
        "The deploy key rotates every Monday",
        "Lin prefers tea over coffee",
    ] {
        let (st, v) = post(&server, "/memories", json!({"content": text}));
        assert_eq!(st, 201, "{v}");
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    let (st, v) = post(
        &server,
        "/episodes",
        json!({"session_id": "s1", "role": "user", "content": "I moved to Lisbon last spring"}),
    );
    assert_eq!(st, 201, "{v}");
    let data = server.crash();

    // The same files, read-only.
    let mount_point = tempfile::tempdir().unwrap();
    let mount = ReadOnlyMount::new(data.path(), mount_point.path());
    assert!(
        std::fs::write(mount_point.path().join("probe"), "x").is_err(),
        "the mount is read-only"
    );
    let server = start_in(mount_point, None);
    let get = |path: &str| call(ureq::get(&format!("{}{path}", server.base)), None);
    let (st, health) = get("/health");
    assert_eq!(st, 200, "{health}");
    assert_eq!(health["read_only"], true, "{health}");
    assert_eq!(health["integrity"]["memories"], 3, "{health}");

    // Every read is served.
    let (st, r) = post(
        &server,
        "/recall",
        json!({"query": "what colour does Ada like"}),
    );
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["hits"][0]["id"], ids[0].as_str(), "{r}");
    let (st, c) = post(
        &server,
        "/context",
        json!({"prompt": "tea or coffee for Lin?"}),
    );
    assert_eq!(st, 200, "{c}");
    assert!(c.to_string().contains("Lin prefers tea"), "{c}");
    let paths = [
        "/memories",
        &format!("/memories/{}", ids[1]),
        "/search?q=deploy",
        "/sessions/s1",
        "/stats",
        "/resume",
        "/topics",
    ];
    for path in &paths {
        let (st, v) = get(path);
        assert_eq!(st, 200, "{path}: {v}");
    }
    let export = ureq::get(&format!("{}/export", server.base))
        .call()
        .unwrap();
    assert_eq!(export.into_string().unwrap().lines().count(), 1 + 3 + 1 + 1);

    // Every write is refused, typed, and the server goes on.
    let writes: [(&str, &str, serde_json::Value); 8] = [
        ("POST", "/memories", json!({"content": "a new note"})),
        (
            "POST",
            "/episodes",
            json!({"session_id": "s1", "role": "user", "content": "hi"}),
        ),
        (
            "PATCH",
            &format!("/memories/{}", ids[0]),
            json!({"content": "changed"}),
        ),
        ("DELETE", &format!("/memories/{}", ids[0]), json!({})),
        (
            "POST",
            "/facts",
            json!({"subject": "Ada", "predicate": "likes", "object": "teal"}),
        ),
        ("POST", "/consolidate", json!({})),
        (
            "POST",
            "/memories/batch",
            json!({"memories": [{"content": "x"}]}),
        ),
        ("POST", "/reflect", json!({"force": true})),
    ];
    for (method, path, body) in &writes {
        let req = ureq::request(method, &format!("{}{path}", server.base));
        let (st, v) = call(req, Some(&body.to_string()));
        assert_eq!(st, 503, "{method} {path}: {v}");
        assert_eq!(v["error"]["code"], "read_only", "{method} {path}: {v}");
    }
    let (st, v) = call(
        ureq::post(&format!("{}/import", server.base)),
        Some(r#"{"kind":"mnemo-export","version":1}"#),
    );
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (503, Some("read_only")),
        "{v}"
    );
    // A dry consolidation writes nothing: it is served.
    let (st, v) = post(&server, "/consolidate", json!({"dry": true}));
    assert_eq!(st, 200, "{v}");
    let (st, _) = get("/health");
    assert_eq!(st, 200);

    // The CLI on the same read-only files: reads answer, writes are refused.
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .env("MNEMO_CACHE_DIR", common::cache_dir())
            .arg("--db")
            .arg(server.dir().join("m.db"))
            .args(args)
            .env("MNEMO_EMBEDDER", "hash")
            .env("MNEMO_DATA_DIR", server.dir())
            .output()
            .unwrap()
    };
    let out = cli(&["recall", "Lisbon"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli(&["remember", "something new"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be written"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mount_point = server.crash();
    drop(mount);
    drop(mount_point);

    // Writable again: everything is there, and writes work.
    let server = start_in(data, None);
    let (st, health) = call(ureq::get(&format!("{}/health", server.base)), None);
    assert_eq!(st, 200);
    assert_eq!(health["read_only"], false, "{health}");
    let i = &health["integrity"];
    assert_eq!(
        (i["memories"].as_u64(), i["episodes"].as_u64()),
        (Some(3), Some(1)),
        "{health}"
    );
    assert_eq!(i["memories"], i["memory_fts_rows"], "{health}");
    let (st, v) = post(&server, "/memories", json!({"content": "writable again"}));
    assert_eq!(st, 201, "{v}");
    println!(
        "read-only: {} read routes served, {} writes refused with 503 read_only; 3 memories and 1 turn intact after",
        paths.len() + 4,
        writes.len() + 1
    );
}
