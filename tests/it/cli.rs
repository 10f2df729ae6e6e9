//! The `mnemo` binary's stable command-line contract.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::cli::{mnemo, ok, stdout};

fn total(dir: &Path) -> i64 {
    let o = mnemo(dir, &["stats", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("stats json");
    v["total"].as_i64().expect("integer total")
}

#[test]
fn remember_recall_stats_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = mnemo(
        d,
        &[
            "remember",
            "The deploy key lives in the team vault",
            "--tag",
            "ops",
            "--kind",
            "procedural",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["memory"]["layer"], "buffer");
    assert_eq!(v["memory"]["kind"], "procedural");
    mnemo(d, &["remember", "Lunch is at noon"]);
    assert_eq!(total(d), 2);

    let o = mnemo(
        d,
        &[
            "recall",
            "where is the deploy key",
            "--limit",
            "5",
            "--json",
        ],
    );
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["hits"][0]["content"],
        "The deploy key lives in the team vault"
    );

    let o = mnemo(d, &["recall", "deploy key", "--explain"]);
    let text = stdout(&o);
    assert!(
        text.contains("channels:") && text.contains("relevance"),
        "{text}"
    );
}

#[test]
fn invalid_input_exits_nonzero_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mnemo(d, &["remember", "keep me"]);
    let long_tag = "t".repeat(40);
    let long = "x".repeat(9000);
    for args in [
        vec!["remember", ""],
        vec!["remember", "ok", "--tag", long_tag.as_str()],
        vec!["remember", long.as_str()],
        vec!["remember", "ok", "--namespace", "bad ns"],
        vec!["remember", "ok", "--kind", "nonsense"],
        vec!["ingest", "--session", "", "--role", "user", "hi"],
        vec!["recall", ""],
    ] {
        let o = mnemo(d, &args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.trim().is_empty(), "{args:?}: no message");
    }
    let o = mnemo(d, &["remember", ""]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim().lines().count(), 1);
    assert_eq!(total(d), 1);
}

#[test]
fn jsonl_ingest_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = d.join("good.jsonl");
    std::fs::write(
        &good,
        "{\"session_id\":\"s1\",\"role\":\"user\",\"content\":\"I moved to Lisbon\"}\n\
         {\"session_id\":\"s1\",\"role\":\"assistant\",\"content\":\"How do you like it?\"}\n",
    )
    .unwrap();
    let o = mnemo(d, &["ingest", "--jsonl", good.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bad = d.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"session_id\":\"s2\",\"role\":\"user\",\"content\":\"fine\"}\n\
         {\"session_id\":\"s2\",\"role\":\"user\",\"content\":\"   \"}\n",
    )
    .unwrap();
    let o = mnemo(d, &["ingest", "--jsonl", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let o = mnemo(d, &["stats", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["episodes"], 2, "the bad batch wrote nothing");
    let o = mnemo(d, &["recall", "Lisbon", "--episodes", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["hits"][0]["content"], "I moved to Lisbon");
}

#[test]
fn delete_and_restore_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = mnemo(d, &["remember", "temporary note", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let id = v["memory"]["id"].as_str().unwrap().to_string();
    assert!(
        mnemo(d, &["delete", &id, "--reason", "test"])
            .status
            .success()
    );
    assert_eq!(total(d), 0);
    let o = mnemo(d, &["list", "--deleted", "--json"]);
    assert!(stdout(&o).contains(&id));
    assert!(mnemo(d, &["restore", &id]).status.success());
    assert_eq!(total(d), 1);
    assert_eq!(mnemo(d, &["get", "nope"]).status.code(), Some(3));
}

#[test]
fn plugins_lists_ner_and_llm_plugins_with_their_abi() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(
        env!("MNEMO_FIXTURE_LLM_HOSTILE_WASM"),
        plugins.join("a-hostile.wasm"),
    )
    .unwrap();
    std::fs::copy(
        env!("MNEMO_FIXTURE_MISBEHAVE_WASM"),
        plugins.join("b-misbehave.wasm"),
    )
    .unwrap();
    std::fs::write(plugins.join("c-notes.wasm"), "not wasm").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .env("MNEMO_CACHE_DIR", common::cache_dir())
        .args(["plugins", "--json"])
        .env("MNEMO_DATA_DIR", dir.path())
        .env("MNEMO_PLUGIN_DIR", &plugins)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows: Vec<String> = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {} {}",
                p["kind"].as_str().unwrap_or("-"),
                p["name"].as_str().unwrap_or("-"),
                p["abi"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "ner regex 0.1.0",
            "ner names 0.1.0",
            "llm openai 0.1.0",
            "llm anthropic 0.1.0",
            "llm ollama 0.1.0",
            "llm hostile 0.1.0",
            "ner misbehave 0.1.0",
            "- - -",
        ]
    );
    let listed = v["plugins"].as_array().unwrap();
    assert_eq!(listed[3]["auth"], "header x-api-key");
    assert_eq!(
        listed[2]["capabilities"],
        serde_json::json!(["chat", "embed"])
    );
    assert!(
        listed[7]["error"]
            .as_str()
            .unwrap()
            .contains("not a WebAssembly file")
    );
    assert_eq!(v["supported"]["llm"], serde_json::json!(["0.1.0"]));
}

#[test]
fn ner_prints_merged_entities_and_names_a_failing_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(
        env!("MNEMO_FIXTURE_MISBEHAVE_WASM"),
        plugins.join("misbehave.wasm"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .env("MNEMO_CACHE_DIR", common::cache_dir())
            .args(args)
            .env("MNEMO_DATA_DIR", dir.path())
            .env("MNEMO_EMBEDDER", "hash")
            .env("MNEMO_PLUGIN_DIR", &plugins)
            .env("MNEMO_NER_FAST", "regex,misbehave")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = run(&["ner", "--json", "Mail Alice at alice@example.com"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let found: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["text"].as_str().unwrap(), m["provider"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("Mail", "misbehave"),
            ("Alice", "misbehave"),
            ("alice@example.com", "regex")
        ]
    );
    // A plugin that traps is named on stderr; the others still answer.
    let o = run(&["ner", "trap"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: plugin `misbehave`: trapped"),
        "{err}"
    );
    let o = run(&[
        "ner",
        "--strategy",
        "accurate",
        "Dr. Sarah Chen lives in Paris",
    ]);
    assert!(
        stdout(&o).contains("Sarah Chen") && stdout(&o).contains("location"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        run(&["ner", "--strategy", "nonsense", "x"]).status.code(),
        Some(2)
    );
}

#[test]
fn consolidate_resume_and_facts_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (s, text) in [("s1", "I work at Globex."), ("s2", "hi")] {
        let o = mnemo(d, &["ingest", "--session", s, "--role", "user", text]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dry = mnemo(d, &["consolidate", "--dry-run", "--json"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&dry)).unwrap();
    assert_eq!(report["dry"], true);
    // s2's first turn already consolidated s1 (the session-switch
    // trigger); the cycle finds nothing more in it.
    let real = mnemo(d, &["consolidate"]);
    assert!(stdout(&real).contains("0 facts added"), "{}", stdout(&real));
    let facts = mnemo(d, &["facts", "query", "Globex"]);
    assert!(
        stdout(&facts).contains("The user | works at | Globex"),
        "{}",
        stdout(&facts)
    );
    // s1 was closed by the newer s2; s2 is live, so it stays open.
    let pending = ok(&mnemo(d, &["sessions", "--pending"]));
    assert!(pending.starts_with("s2  1 turns"), "{pending}");
    // `--idle 0` closes every open session now.
    ok(&mnemo(d, &["consolidate", "--idle", "0"]));
    let sessions = ok(&mnemo(d, &["sessions"]));
    assert!(
        sessions.starts_with("s2  1 turns")
            && sessions.lines().all(|l| l.contains("consolidated at")),
        "{sessions}"
    );
    assert_eq!(ok(&mnemo(d, &["sessions", "--pending"])), "");
    assert!(ok(&mnemo(d, &["sessions", "s1"])).contains("user: I work at Globex."));
    assert_eq!(mnemo(d, &["sessions", "nope"]).status.code(), Some(3));
    let resume = mnemo(d, &["resume"]);
    assert!(
        stdout(&resume).starts_with("=== Core (0) ==="),
        "{}",
        stdout(&resume)
    );
    let bad = mnemo(d, &["consolidate", "--namespace", "no spaces allowed!"]);
    assert_eq!(bad.status.code(), Some(2), "invalid input exits 2");
}

#[test]
fn export_import_round_trip_and_reindex_from_the_command_line() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    ok(&mnemo(
        a.path(),
        &["remember", "The user's cat is called Miso", "--tag", "pets"],
    ));
    ok(&mnemo(
        a.path(),
        &[
            "ingest",
            "--session",
            "s1",
            "--role",
            "user",
            "Miso hates the vet",
        ],
    ));
    ok(&mnemo(
        a.path(),
        &["facts", "add", "The user", "owns", "Miso"],
    ));
    let dump = a.path().join("dump.jsonl");
    let o = mnemo(
        a.path(),
        &["export", "--out", dump.to_str().unwrap(), "--vectors"],
    );
    ok(&o);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("1 memories, 1 episodes, 1 sessions") && said.contains("1 facts"),
        "{said}"
    );

    let imported = ok(&mnemo(
        b.path(),
        &["import", dump.to_str().unwrap(), "--json"],
    ));
    let v: serde_json::Value = serde_json::from_str(&imported).unwrap();
    assert_eq!(v["counts"]["facts"], 1, "{v}");
    assert_eq!(v["counts"]["created"].as_u64(), Some(4), "{v}");
    let again: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        b.path(),
        &["import", dump.to_str().unwrap(), "--json"],
    )))
    .unwrap();
    assert_eq!(again["counts"]["created"], 0, "import dedups: {again}");
    assert_eq!(total(b.path()), 1);
    assert!(ok(&mnemo(b.path(), &["recall", "cat name"])).contains("Miso"));
    assert!(ok(&mnemo(b.path(), &["facts", "query", "Miso"])).contains("The user | owns | Miso"));

    // Re-embedding everything keeps recall working.
    let reindexed = ok(&mnemo(b.path(), &["reindex", "--embeddings", "--json"]));
    assert!(reindexed.contains("\"embedded\": 2"), "{reindexed}");
    let stats: serde_json::Value =
        serde_json::from_str(&ok(&mnemo(b.path(), &["stats", "--json"]))).unwrap();
    assert_eq!(
        (
            stats["memory_vectors"].as_u64(),
            stats["episode_vectors"].as_u64()
        ),
        (Some(1), Some(1)),
        "{stats}"
    );
    assert!(ok(&mnemo(b.path(), &["recall", "cat name"])).contains("Miso"));

    let missing = mnemo(b.path(), &["import", "/no/such/file.jsonl"]);
    assert!(!missing.status.success());
    assert_eq!(String::from_utf8_lossy(&missing.stderr).lines().count(), 1);
}

#[test]
fn every_command_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        "serve",
        "mcp",
        "remember",
        "recall",
        "ingest",
        "resume",
        "consolidate",
        "export",
        "import",
        "stats",
        "reindex",
        "list",
        "audit",
        "decisions",
        "review",
        "fade",
        "facts",
    ] {
        let o = mnemo(dir.path(), &[cmd, "--help"]);
        let text = ok(&o);
        assert!(text.contains("Usage: mnemo"), "{cmd}: {text}");
        let about = text.lines().next().unwrap_or_default();
        assert!(about.len() > 10, "{cmd} says what it does: {about}");
    }
}

#[test]
fn the_operator_binary_lists_no_lab_commands() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(&mnemo(dir.path(), &["--help"]));
    for lab in ["eval", "bench", "simulate"] {
        assert!(
            !help.lines().any(|l| l.trim_start().starts_with(lab)),
            "`{lab}` is mnemo-lab's: {help}"
        );
        let o = mnemo(dir.path(), &[lab, "--help"]);
        assert!(!o.status.success(), "`mnemo {lab}` is gone");
    }
}

#[test]
fn logs_can_be_json_lines_and_a_bad_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .env("MNEMO_CACHE_DIR", common::cache_dir())
            .arg("--db")
            .arg(dir.path().join("m.db"))
            .args(["remember", "logs as JSON"])
            .env("MNEMO_DATA_DIR", dir.path())
            .env("MNEMO_EMBEDDER", "hash")
            .env("MNEMO_LOG", "debug")
            .env("MNEMO_LOG_FORMAT", format)
            .stdin(Stdio::null())
            .output()
            .expect("run mnemo")
    };
    let o = run("json");
    ok(&o);
    let logs = String::from_utf8_lossy(&o.stderr);
    assert!(logs.lines().count() > 0);
    for line in logs.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect(line);
        assert!(v["level"].is_string() && v["fields"].is_object(), "{line}");
    }
    let bad = run("xml");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("MNEMO_LOG_FORMAT"));
}
