//! Providers that fail (issue 20, faults), over real HTTP on 127.0.0.1.
//!
//! An embedding provider that answers 429 forever, 500, garbage, the wrong
//! number of vectors, closes the connection, or hangs past the timeout: writes are acknowledged
//! and stored, recall answers in bounded time from the other channels with
//! a warning, and the rows wait for their vectors; once the provider is
//! back, the background embedding gives every row its vector.
//!
//! An LLM that answers 429 forever, 500, a truncated tool call, garbage,
//! closes the connection, or hangs: a consolidation cycle ends in bounded time, applies no fact and
//! leaves the session pending; once the LLM answers, the same turns become
//! facts. Nothing is dropped either way.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::llm_server::{Recorded, Reply, Scripted};
use common::server::*;
use serde_json::{Value, json};

const DIM: usize = 8;

/// A healthy provider: one-hot 8-d vectors on the text length.
fn healthy(req: &Recorded) -> Reply {
    let inputs = req.body["input"].as_array().cloned().unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut v = vec![0.01f32; DIM];
            v[t.as_str().unwrap_or("").len() % DIM] = 1.0;
            json!({"index": i, "embedding": v})
        })
        .collect();
    Reply::json(200, json!({"data": data, "model": "emb"}))
}

fn missing_vectors(s: &Server) -> i64 {
    let (_, v) = call(ureq::get(&format!("{}/health", s.base)), None);
    v["missing_vectors"].as_i64().unwrap()
}

#[test]
fn a_failing_embedding_provider_costs_time_bounds_and_vectors_later_never_data() {
    let provider = Scripted::start();
    provider.respond_with(healthy);
    let url = format!("{}/v1", provider.base);
    let dim = DIM.to_string();
    let mut env = vec![
        ("MNEMO_EMBEDDER", "http"),
        ("MNEMO_EMBEDDING_URL", url.as_str()),
        ("MNEMO_EMBEDDING_MODEL", "emb"),
        ("MNEMO_EMBEDDING_DIM", dim.as_str()),
        ("MNEMO_LLM_LEVEL", "off"),
        ("MNEMO_LLM_TIMEOUT_SECS", "1"),
        ("MNEMO_LLM_RETRIES", "1"),
        ("MNEMO_LLM_BACKOFF_MS", "10"),
    ];
    env.extend(NO_CRON);
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let (st, v) = post(
        &s,
        "/memories",
        json!({"content": "the provider works today"}),
    );
    assert_eq!(st, 201, "{v}");

    type Fault = (&'static str, fn(&Recorded) -> Reply);
    let faults: [Fault; 6] = [
        ("429 forever", |_| {
            let mut r = Reply::json(429, json!({"error": "slow down"}));
            r.headers.push(("Retry-After".into(), "0".into()));
            r
        }),
        ("500", |_| Reply::json(500, json!({"error": "boom"}))),
        ("garbage", |_| Reply {
            status: 200,
            body: "<html>not json".into(),
            headers: Vec::new(),
        }),
        ("a closed connection", |_| Reply::hang_up()),
        ("too few vectors", |_| {
            Reply::json(200, json!({"data": [], "model": "emb"}))
        }),
        ("a hang past the timeout", |req| {
            std::thread::sleep(Duration::from_millis(2_500));
            healthy(req)
        }),
    ];
    let mut stored = vec!["the provider works today".to_string()];
    for (i, (fault, reply)) in faults.into_iter().enumerate() {
        provider.respond_with(reply);
        let text = format!(
            "written while the provider fails number{i} {}",
            fault.replace(' ', "-")
        );
        let started = Instant::now();
        let (st, v) = post(&s, "/memories", json!({"content": text}));
        assert_eq!(st, 201, "{fault}: the write is acknowledged: {v}");
        stored.push(text);
        let (st, r) = post(&s, "/recall", json!({"query": format!("number{i}")}));
        let took = started.elapsed();
        assert_eq!(st, 200, "{fault}: {r}");
        assert!(
            r["hits"].as_array().unwrap().iter().any(|h| h["content"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("number{i}"))),
            "{fault}: found by its words: {r}"
        );
        assert!(
            r["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap_or("").contains("vector channel")),
            "{fault}: the recall says its vector channel is missing: {r}"
        );
        assert!(
            took < Duration::from_secs(20),
            "{fault}: write and recall took {took:?}"
        );
        assert!(
            missing_vectors(&s) >= 1,
            "{fault}: the row waits for its vector"
        );
    }

    // The provider is back: every row gets its vector, none was dropped.
    provider.respond_with(healthy);
    let deadline = Instant::now() + Duration::from_secs(60);
    while missing_vectors(&s) > 0 {
        assert!(
            Instant::now() < deadline,
            "vectors still missing after 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, list) = call(ureq::get(&format!("{}/memories?limit=100", s.base)), None);
    let mut listed: Vec<String> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    stored.sort();
    assert_eq!(listed, stored, "every acknowledged write is stored");
    let (st, r) = post(&s, "/recall", json!({"query": "number3"}));
    assert_eq!(st, 200);
    assert!(
        r["channels_run"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "vector"),
        "the vector channel runs again: {r}"
    );
}

fn llm_fault(which: usize) -> fn(&Recorded) -> Reply {
    match which {
        0 => |_| {
            let mut r = Reply::json(429, json!({"error": "rate limited"}));
            r.headers.push(("Retry-After".into(), "0".into()));
            r
        },
        1 => |_| Reply::json(500, json!({"error": "boom"})),
        2 => |_| {
            Reply {
            status: 200,
            body: "{\"choices\": [{\"message\": {\"tool_calls\": [{\"function\": {\"name\": \"save_facts\", \"arguments\": \"{\\\"facts\\\": [\"}}]}}]}".into(),
            headers: Vec::new(),
        }
        },
        3 => |_| Reply {
            status: 200,
            body: "not json at all".into(),
            headers: Vec::new(),
        },
        4 => |_| Reply::hang_up(),
        _ => |_| {
            std::thread::sleep(Duration::from_millis(2_500));
            Reply::json(500, json!({"error": "too late"}))
        },
    }
}

fn pending_sessions(s: &Server) -> Vec<String> {
    let (_, v) = call(
        ureq::get(&format!("{}/sessions?pending=true", s.base)),
        None,
    );
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_failing_llm_leaves_the_session_for_later_and_drops_nothing() {
    let llm = Scripted::start();
    let env = llm_env(
        "auto",
        &llm.base,
        &[
            ("MNEMO_LLM_TIMEOUT_SECS", "1"),
            ("MNEMO_LLM_BACKOFF_MS", "10"),
            // Every fault is tried at once: no backoff, no circuit, no
            // parking (`llm_bounds.rs` tests those).
            ("MNEMO_LLM_RETRY_BASE_SECS", "0"),
            ("MNEMO_LLM_RETRY_LIMIT", "100"),
            ("MNEMO_LLM_CIRCUIT_FAILURES", "100"),
        ],
    );
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    for text in [
        "I moved to Lisbon last spring",
        "My sister Anna lives in Porto",
    ] {
        let (st, v) = post(
            &s,
            "/episodes",
            json!({"session_id": "s1", "role": "user", "content": text}),
        );
        assert_eq!(st, 201, "{v}");
    }
    for which in 0..6 {
        llm.respond_with(llm_fault(which));
        let started = Instant::now();
        let (st, report) = post(&s, "/consolidate", json!({"session_idle_minutes": 0}));
        let took = started.elapsed();
        assert!(
            st == 200 || st == 503,
            "fault {which}: a report or a typed error: {st} {report}"
        );
        assert!(took < Duration::from_secs(30), "fault {which}: {took:?}");
        assert_eq!(
            pending_sessions(&s),
            ["s1"],
            "fault {which}: the session waits for a working LLM: {report}"
        );
        let (_, stats) = call(ureq::get(&format!("{}/stats", s.base)), None);
        assert_eq!(
            stats["active"], 0,
            "fault {which}: no fact half-applied: {stats}"
        );
        assert_eq!(stats["episodes"], 2, "fault {which}: the turns are kept");
    }
    // The LLM answers again: the same turns become facts.
    llm.respond_with(|req| {
        let tool = req.body["tool_choice"]["function"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match tool.as_str() {
            "save_facts" => common::llm_server::tool_reply(
                "save_facts",
                json!({"facts": [
                    {"content": "The user lives in Lisbon", "subject": "user",
                     "predicate": "lives in", "object": "Lisbon", "turns": [0]},
                    {"content": "The user's sister Anna lives in Porto", "subject": "Anna",
                     "predicate": "lives in", "object": "Porto", "turns": [1]}
                ]}),
            ),
            other => common::llm_server::tool_reply(other, json!({"decisions": []})),
        }
    });
    let (st, report) = post(&s, "/consolidate", json!({"session_idle_minutes": 0}));
    assert_eq!(st, 200, "{report}");
    assert!(pending_sessions(&s).is_empty(), "{report}");
    let (_, stats) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(stats["active"], 2, "both facts, once: {stats}");
    let (_, r) = post(&s, "/recall", json!({"query": "where does Anna live"}));
    assert!(
        r["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["content"] == "The user's sister Anna lives in Porto"),
        "{r}"
    );
}
