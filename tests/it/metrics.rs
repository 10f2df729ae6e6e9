//! `GET /metrics` scraped after a scripted load (issue 43): requests by
//! route template and status with latency histograms, provider calls by
//! component, background work pending; behind the API key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::json;

/// The value of the sample `line_start` (its name and labels) in `text`.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|l| {
            l.strip_prefix(line_start)
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn metrics_count_requests_by_route_and_show_the_background_work() {
    let s = start(Some("secret"));
    let auth = |r: ureq::Request| r.set("Authorization", "Bearer secret");
    let mut ids = Vec::new();
    for i in 0..5 {
        let (st, v) = call(
            auth(ureq::post(&format!("{}/memories", s.base))),
            Some(&json!({"content": format!("metrics fact number {i} about otters")}).to_string()),
        );
        assert_eq!(st, 201, "{v}");
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    for id in &ids[..3] {
        let (st, _) = call(auth(ureq::get(&format!("{}/memories/{id}", s.base))), None);
        assert_eq!(st, 200);
    }
    let (st, _) = call(
        auth(ureq::get(&format!("{}/memories/mem_nope", s.base))),
        None,
    );
    assert_eq!(st, 404);
    for _ in 0..2 {
        let (st, _) = call(
            auth(ureq::post(&format!("{}/recall", s.base))),
            Some(&json!({"query": "otters"}).to_string()),
        );
        assert_eq!(st, 200);
    }
    // Without the key: refused, like every route but /health.
    let (st, _) = call_text(ureq::get(&format!("{}/metrics", s.base)), None);
    assert_eq!(st, 401);
    // The usage ledger is written by the writer between jobs.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (st, text) = call_text(auth(ureq::get(&format!("{}/metrics", s.base))), None);
    assert_eq!(st, 200, "{text}");
    let get = |line: &str| sample(&text, line).unwrap_or_else(|| panic!("no `{line}` in:\n{text}"));
    assert_eq!(
        get(r#"mnemo_http_requests_total{method="POST",route="/memories",status="201"}"#),
        5.0
    );
    // The route's template, not the id: one series for every memory read.
    assert_eq!(
        get(r#"mnemo_http_requests_total{method="GET",route="/memories/{id}",status="200"}"#),
        3.0
    );
    assert_eq!(
        get(r#"mnemo_http_requests_total{method="GET",route="/memories/{id}",status="404"}"#),
        1.0
    );
    assert!(!text.contains("mem_nope"), "no id in a label");
    let labels = r#"method="POST",route="/recall""#;
    assert_eq!(
        get(&format!(
            "mnemo_http_request_duration_seconds_count{{{labels}}}"
        )),
        2.0
    );
    assert_eq!(
        get(&format!(
            "mnemo_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}}"
        )),
        2.0
    );
    assert!(
        get(&format!(
            "mnemo_http_request_duration_seconds_bucket{{{labels},le=\"10\"}}"
        )) <= 2.0
    );
    // The hash embedder's calls are in the ledger.
    assert!(
        get(r#"mnemo_provider_calls_total{component="embedding"}"#) >= 5.0,
        "{text}"
    );
    assert!(sample(&text, "mnemo_vectors_missing").is_some(), "{text}");
    assert!(text.contains("# TYPE mnemo_http_request_duration_seconds histogram"));
    // On Postgres each namespace's writes counted their lock waits (five
    // remembers at least, in `default`); SQLite takes no namespace lock.
    let waits = sample(
        &text,
        r#"mnemo_write_lock_waits_total{namespace="default"}"#,
    );
    if std::env::var("MNEMO_TEST_BACKEND").as_deref() == Ok("postgres") {
        assert!(waits.is_some_and(|n| n >= 5.0), "{text}");
        assert!(
            sample(
                &text,
                r#"mnemo_write_lock_wait_seconds_max{namespace="default"}"#
            )
            .is_some()
        );
    } else {
        assert_eq!(waits, None, "{text}");
    }
}
