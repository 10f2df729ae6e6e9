//! The `mnemo` binary's stable command-line contract.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--db")
        .arg(dir.join("m.db"))
        .args(args)
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_EMBEDDER", "hash")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

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
    let real = mnemo(d, &["consolidate"]);
    assert!(stdout(&real).contains("1 facts added"), "{}", stdout(&real));
    let facts = mnemo(d, &["facts", "query", "Globex"]);
    assert!(
        stdout(&facts).contains("The user | works at | Globex"),
        "{}",
        stdout(&facts)
    );
    let resume = mnemo(d, &["resume"]);
    assert!(
        stdout(&resume).starts_with("=== Core (0) ==="),
        "{}",
        stdout(&resume)
    );
    let bad = mnemo(d, &["consolidate", "--namespace", "no spaces allowed!"]);
    assert_eq!(bad.status.code(), Some(2), "invalid input exits 2");
}
