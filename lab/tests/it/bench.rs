//! `mnemo-lab eval` and `mnemo-lab bench` on small inputs: every figure they print
//! is there and sane, in the short form CI can afford (their long forms
//! print the tables of docs/benchmarks.md and docs/evaluation.md).

use crate::{figure, lab as mnemo, ok};

#[test]
fn eval_and_bench_run_on_small_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let turn = |dia: &str, speaker: &str, text: &str| serde_json::json!({"dia_id": dia, "speaker": speaker, "text": text});
    let data = serde_json::json!([{
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("D1:1", "Ana", "I started learning the cello last week."),
                turn("D1:2", "Ben", "Nice! I went hiking in the Alps."),
                turn("D1:3", "Ana", "My teacher is called Rosa."),
            ]
        },
        "qa": [
            {"question": "What instrument is Ana learning?", "answer": "cello", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ben go hiking?", "answer": "the Alps", "evidence": ["D1:2"], "category": 4},
        ]
    }]);
    let file = d.join("locomo.json");
    std::fs::write(&file, data.to_string()).unwrap();
    let out = d.join("rankings.jsonl");
    let table = ok(&mnemo(
        d,
        &[
            "eval",
            "locomo",
            "--data",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(table.contains("| all (1-4) | 2 | 1.000 |"), "{table}");
    let ranked = std::fs::read_to_string(&out).unwrap();
    assert_eq!(ranked.lines().count(), 2);
    assert!(ranked.contains("\"conv-test#0\""), "{ranked}");
    let bad = mnemo(d, &["eval", "locomo", "--data", "/no/such.json"]);
    assert!(!bad.status.success());

    let json: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        d,
        &["eval", "locomo", "--data", file.to_str().unwrap(), "--json"],
    )))
    .unwrap();
    assert_eq!(json["all"]["n"], 2, "{json}");
    assert_eq!(json["all"]["r@10"], 1.0, "{json}");
    assert_eq!(json["categories"]["4 single-hop"]["n"], 2, "{json}");

    // A kept database asked again (--reuse) stores and embeds nothing new
    // and ranks alike; --explain carries each ranked turn's explanation.
    let db = d.join("eval.db");
    let args = |reuse: bool| {
        let mut a = vec![
            "eval",
            "locomo",
            "--data",
            file.to_str().unwrap(),
            "--json",
            "--keep-db",
            db.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--explain",
        ];
        if reuse {
            a.push("--reuse");
        }
        a
    };
    let first: serde_json::Value = serde_json::from_str(&ok(&mnemo(d, &args(false)))).unwrap();
    let first_ranked = std::fs::read_to_string(&out).unwrap();
    let again: serde_json::Value = serde_json::from_str(&ok(&mnemo(d, &args(true)))).unwrap();
    assert_eq!(first["embedded"], 3, "{first}");
    assert_eq!(again["embedded"], 0, "{again}");
    assert_eq!(first["all"], again["all"]);
    let again_ranked = std::fs::read_to_string(&out).unwrap();
    // The same order (scores may differ in recency: time has passed).
    let orders = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["ranked"].clone())
            .collect()
    };
    assert_eq!(orders(&first_ranked), orders(&again_ranked));
    let line: serde_json::Value =
        serde_json::from_str(again_ranked.lines().next().unwrap()).unwrap();
    let ranked = line["ranked"].as_array().unwrap();
    let explained = line["explanations"].as_array().unwrap();
    assert_eq!(ranked.len(), explained.len(), "{line}");
    assert!(
        explained[0]["notes"]
            .as_array()
            .is_some_and(|n| !n.is_empty()),
        "{line}"
    );

    let bench: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        d,
        &[
            "bench",
            "--memories",
            "300",
            "--queries",
            "5",
            "--writes",
            "20",
            "--json",
        ],
    )))
    .unwrap();
    let figures: Vec<&str> = bench
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["figure"].as_str().unwrap())
        .collect();
    for row in [
        "core component: compile (cold, Cranelift)",
        "ingest throughput (episodes, one commit each)",
        "recall at 300 memories: p50 (component, HNSW)",
        "hybrid recall / raw channel queries (p50)",
        "WASM tax on recall (p50 component / native)",
    ] {
        assert!(figures.contains(&row), "{row}: {figures:?}");
    }

    // The server under load, in its smallest form: a real `mnemo serve`,
    // the stubs, the fill, the load, a kill -9 and the restart.
    let served: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        d,
        &[
            "bench",
            "serve",
            "--memories",
            "300",
            "--seconds",
            "1",
            "--clients",
            "2",
            "--json",
        ],
    )))
    .unwrap();
    let rows = served.as_array().unwrap();
    let value = |figure: &str| -> f64 {
        rows.iter()
            .find(|r| r["figure"] == figure)
            .and_then(|r| r["value"].as_str()?.parse().ok())
            .unwrap_or_else(|| panic!("{figure}: {served}"))
    };
    assert!(value("300 memories: recall: throughput") > 0.0, "{served}");
    assert!(value("300 memories: ingest (remember)") > 0.0, "{served}");
    assert!(
        value("300 memories: recall after restart: p50") > 0.0,
        "{served}"
    );
    assert!(
        value("300 memories: consolidation: next cycle") >= 0.0,
        "{served}"
    );
    assert!(
        rows.iter()
            .all(|r| !r["figure"].as_str().unwrap().ends_with("errors")),
        "no recall failed: {served}"
    );

    // The mixed load (issue 20), in its short form: 8 clients for 5 s.
    let load: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        d,
        &[
            "bench",
            "load",
            "--clients",
            "8",
            "--seconds",
            "5",
            "--memories",
            "200",
            "--json",
        ],
    )))
    .unwrap();
    let value =
        |name: &str| -> String { figure(&load, name).unwrap_or_else(|| panic!("{name}: {load}")) };
    assert_eq!(value("all: errors"), "0", "{load}");
    assert_eq!(value("all: lock timeouts"), "0", "{load}");
    for kind in ["recall", "remember", "turn", "context", "resume", "list"] {
        let done = value(&format!("{kind}: done / errors"));
        assert!(!done.starts_with("0 "), "{kind} ran: {load}");
        assert!(done.ends_with(" / 0"), "{kind}: {load}");
    }

    // Its reading kinds alone: no write is sent, every read kind answers.
    let reads: serde_json::Value = serde_json::from_str(&ok(&mnemo(
        d,
        &[
            "bench",
            "load",
            "--reads-only",
            "--clients",
            "4",
            "--seconds",
            "3",
            "--memories",
            "200",
            "--json",
        ],
    )))
    .unwrap();
    let done = |kind: &str| figure(&reads, &format!("{kind}: done / errors"));
    for kind in ["recall", "context", "resume", "list"] {
        let d = done(kind).unwrap_or_else(|| panic!("{kind}: {reads}"));
        assert!(
            !d.starts_with("0 ") && d.ends_with(" / 0"),
            "{kind}: {reads}"
        );
    }
    for kind in ["remember", "turn", "consolidate"] {
        assert_eq!(done(kind), None, "{kind} is a write: {reads}");
    }
}

/// The mixed load of issue 20 in its short form against two servers on
/// one Postgres database: every kind of request answers, none fails.
/// (The long form: `mnemo-lab bench load --db postgres://… --servers 2`.)
#[test]
fn two_servers_under_mixed_load_answer_without_errors() {
    let url = crate::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .args([
            "bench",
            "load",
            "--db",
            &url,
            "--servers",
            "2",
            "--clients",
            "6",
            "--seconds",
            "5",
            "--memories",
            "100",
            "--json",
        ])
        .env("MNEMO_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = |name: &str| -> String { crate::figure(&rows, name).unwrap_or_default() };
    assert_eq!(value("all: errors"), "0", "{rows}");
    for kind in ["recall", "remember", "turn", "context", "resume", "list"] {
        let done = value(&format!("{kind}: done / errors"));
        assert!(
            !done.is_empty() && !done.starts_with("0 "),
            "{kind} ran: {rows}"
        );
        assert!(done.ends_with(" / 0"), "{kind}: {rows}");
    }
}

/// `bench serve --namespaces N --postgres URL` in its short form: the
/// tenant's recall in a store of several namespaces and alone, each store
/// a database of its own on the server; every row is there. (The long
/// form: `--memories 1000000 --namespaces 1000`, docs/benchmarks.md.)
#[test]
fn tenants_on_postgres_print_every_row() {
    let server = crate::postgres::server();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .env("MNEMO_DATA_DIR", dir.path())
        .args([
            "bench",
            "serve",
            "--memories",
            "400",
            "--namespaces",
            "4",
            "--postgres",
            &server,
            "--seconds",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = |name: &str| -> f64 {
        crate::figure(&rows, name)
            .and_then(|v| v.split_whitespace().next().map(str::to_string))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: {rows}"))
    };
    for store in [
        "400 memories in 4 namespaces",
        "the same tenant's 100 memories alone",
    ] {
        assert!(value(&format!("{store}: import")) > 0.0, "{rows}");
        assert!(
            value(&format!("{store}: tenant recall: throughput")) > 0.0,
            "{rows}"
        );
        // A database of its own on the server, not a file.
        assert!(value(&format!("{store}: database size")) > 1.0, "{rows}");
    }
    assert!(
        value("400 memories in 4 namespaces: tenant recall p50 / alone") > 0.0,
        "{rows}"
    );
}
