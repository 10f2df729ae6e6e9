//! The history of memories through every surface: `GET /memories/{id}/history`
//! and `POST /memories/{id}/revert` over real HTTP, `mnemo edit` and
//! `mnemo history` on the binary, and versions carried by export/import.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Output;

use common::cli::mnemo;
use common::server::*;
use serde_json::{Value, json};

#[test]
fn history_and_revert_over_http_and_versions_survive_export() {
    let s = start(None);
    let url = |p: &str| format!("{}{p}", s.base);
    let (_, m) = post(&s, "/memories", json!({"content": "Standup is at 09:30"}));
    let id = m["id"].as_str().unwrap().to_string();
    let (_, h) = call(ureq::get(&url(&format!("/memories/{id}/history"))), None);
    assert_eq!(h["versions"], json!([]), "{h}");

    let (st, _) = call(
        ureq::request("PATCH", &url(&format!("/memories/{id}"))),
        Some(r#"{"content": "Standup is at 10:00"}"#),
    );
    assert_eq!(st, 200);
    let (st, h) = call(ureq::get(&url(&format!("/memories/{id}/history"))), None);
    assert_eq!(st, 200, "{h}");
    assert_eq!(h["memory"]["content"], "Standup is at 10:00");
    assert_eq!(h["versions"][0]["seq"], 1);
    assert_eq!(h["versions"][0]["action"], "edit");
    assert_eq!(h["versions"][0]["memory"]["content"], "Standup is at 09:30");

    // Typed refusals: unknown version 404, bad body 400/422, unknown memory 404.
    for (path, body, status) in [
        (format!("/memories/{id}/revert"), r#"{"version": 9}"#, 404),
        (format!("/memories/{id}/revert"), r#"{"version": "x"}"#, 422),
        (format!("/memories/{id}/revert"), "{oops", 400),
        (
            "/memories/mem_missing/revert".into(),
            r#"{"version": 1}"#,
            404,
        ),
    ] {
        let (st, v) = call(ureq::post(&url(&path)), Some(body));
        assert_eq!(st, status, "{path} {body}: {v}");
        assert!(v["error"]["code"].is_string(), "{v}");
    }
    let (st, _) = call(ureq::get(&url("/memories/mem_missing/history")), None);
    assert_eq!(st, 404);

    let (st, v) = post(&s, &format!("/memories/{id}/revert"), json!({"version": 1}));
    assert_eq!(
        (st, v["content"].as_str()),
        (200, Some("Standup is at 09:30"))
    );
    let (_, found) = post(&s, "/recall", json!({"query": "standup 09:30"}));
    assert_eq!(found["hits"][0]["content"], "Standup is at 09:30");
    let (_, h) = call(ureq::get(&url(&format!("/memories/{id}/history"))), None);
    assert_eq!(h["versions"].as_array().unwrap().len(), 2, "{h}");
    assert_eq!(h["versions"][1]["action"], "revert");

    // Every namespace reads `default`; a project's memory and its history
    // stay in the project.
    let (_, w) = call(
        ureq::post(&url("/memories")).set("X-Namespace", "work"),
        Some(r#"{"content": "The release train leaves on Thursdays"}"#),
    );
    let wid = w["id"].as_str().unwrap();
    let history_in = |ns: &str| {
        call(
            ureq::get(&url(&format!("/memories/{wid}/history"))).set("X-Namespace", ns),
            None,
        )
        .0
    };
    assert_eq!((history_in("work"), history_in("other")), (200, 404));

    // Export carries the versions; a second server imports them once.
    let dump = ureq::get(&url("/export"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert_eq!(dump.matches(r#""kind":"version""#).count(), 2, "{dump}");
    let b = start(None);
    let import = |body: &str| call(ureq::post(&format!("{}/import", b.base)), Some(body));
    let (st, counts) = import(&dump);
    assert_eq!(st, 200, "{counts}");
    import(&dump);
    let (_, h2) = call(
        ureq::get(&format!("{}/memories/{id}/history", b.base)),
        None,
    );
    assert_eq!(
        h2["versions"], h["versions"],
        "the same history, not doubled"
    );
}

fn json_out(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json")
}

#[test]
fn edit_and_history_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = json_out(&mnemo(
        d,
        &["remember", "The user lives in Lisbon", "--json"],
    ));
    let id = m["memory"]["id"].as_str().unwrap().to_string();
    let e = json_out(&mnemo(
        d,
        &[
            "edit",
            &id,
            "--content",
            "The user lives in Porto",
            "--json",
        ],
    ));
    assert_eq!(e["content"], "The user lives in Porto");
    let h = json_out(&mnemo(d, &["history", &id, "--json"]));
    assert_eq!(
        h["versions"][0]["memory"]["content"],
        "The user lives in Lisbon"
    );
    let text = mnemo(d, &["history", &id]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("v1")
            && shown.contains("Lisbon")
            && shown.contains("now The user lives in Porto"),
        "{shown}"
    );
    let r = json_out(&mnemo(d, &["history", &id, "--revert", "1", "--json"]));
    assert_eq!(r["content"], "The user lives in Lisbon");
    // Unknown version: exit code and a message, nothing changed.
    let bad = mnemo(d, &["history", &id, "--revert", "7"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no version 7"));
    let now = json_out(&mnemo(d, &["get", &id, "--json"]));
    assert_eq!(now["content"], "The user lives in Lisbon");
}

#[test]
fn confirm_and_correct_over_http_and_on_the_command_line() {
    let s = start(None);
    let url = |p: &str| format!("{}{p}", s.base);
    let (_, m) = post(
        &s,
        "/memories",
        json!({"content": "The user works at Initech"}),
    );
    let id = m["id"].as_str().unwrap().to_string();
    let (st, c) = post(&s, &format!("/memories/{id}/confirm"), json!({}));
    assert_eq!((st, c["decay_rate"].as_f64()), (200, Some(0.0)), "{c}");
    let (st, n) = post(
        &s,
        &format!("/memories/{id}/correct"),
        json!({"content": "The user works at Globex"}),
    );
    assert_eq!(st, 201, "{n}");
    assert_eq!(n["supersedes"], id.as_str());
    let (_, old) = call(ureq::get(&url(&format!("/memories/{id}"))), None);
    assert_eq!(old["invalid_reason"], "corrected", "{old}");
    for (path, body, status) in [
        (
            format!("/memories/{id}/correct"),
            r#"{"content": "again"}"#,
            409,
        ),
        ("/memories/mem_missing/confirm".to_string(), "{}", 404),
        (format!("/memories/{id}/correct"), r#"{"text": "x"}"#, 422),
    ] {
        let (st, v) = call(ureq::post(&url(&path)), Some(body));
        assert_eq!(st, status, "{path}: {v}");
    }

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = json_out(&mnemo(
        d,
        &["remember", "The user drives a Volvo", "--json"],
    ));
    let id = m["memory"]["id"].as_str().unwrap().to_string();
    let c = json_out(&mnemo(d, &["confirm", &id, "--json"]));
    assert_eq!(c["decay_rate"], 0.0);
    let n = json_out(&mnemo(
        d,
        &["correct", &id, "The user drives a Saab", "--json"],
    ));
    assert_eq!(n["supersedes"], id.as_str());

    // The CLI's ingest runs the session-switch trigger as the server does.
    mnemo(
        d,
        &[
            "ingest",
            "--session",
            "a",
            "--role",
            "user",
            "I live in Lisbon",
        ],
    );
    let out = json_out(&mnemo(
        d,
        &[
            "ingest",
            "--session",
            "b",
            "--role",
            "user",
            "Hello again",
            "--json",
        ],
    ));
    assert_eq!(out["ingested"]["pending_sessions"], json!(["a"]), "{out}");
    assert!(
        out["consolidated"]["facts_added"].as_u64().unwrap() >= 1,
        "{out}"
    );
}
