//! The HTTP API over real HTTP on 127.0.0.1, against the real binary:
//! remember and recall, errors, auth, namespaces, episodes, the OpenAPI
//! document, batches, memories. (Lifecycle routes, sessions, export and
//! observability: `http_lifecycle.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::{Value, json};

/// Declares a 2 MiB body and sends a little of it: the server must refuse on
/// the declared size (no race with a client still writing).
fn oversized_status(s: &Server) -> u16 {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST /memories HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{{\"content\": \"xxxx",
        2 * 1024 * 1024
    );
    conn.write_all(head.as_bytes()).unwrap();
    let mut buf = [0u8; 64];
    let n = conn.read(&mut buf).unwrap();
    let status_line = String::from_utf8_lossy(&buf[..n]).to_string();
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// POSTs a chunked body 1 MiB + 64 bytes long (no Content-Length) and
/// returns the status and the body of the answer.
fn chunked_over_limit(s: &Server) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let payload = format!("{{\"content\": \"{}\"}}", "a".repeat(1024 * 1024 + 50));
    let mut req = format!(
        "POST /memories HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n",
        payload.len()
    )
    .into_bytes();
    req.extend_from_slice(payload.as_bytes());
    req.extend_from_slice(b"\r\n0\r\n\r\n");
    let _ = conn.write_all(&req);
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (status, body)
}

#[test]
fn remember_recall_health_and_errors() {
    let s = start(None);
    let (st, v) = call(ureq::get(&format!("{}/health", s.base)), None);
    assert_eq!(st, 200);
    assert_eq!(v["status"], "ok");

    let (st, v) = post(
        &s,
        "/memories",
        json!({"content": "The user's favourite editor is Helix"}),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["layer"], "buffer");
    let id = v["id"].as_str().unwrap().to_string();
    let (st, v) = post(
        &s,
        "/memories",
        json!({"content": "The user's favourite editor is Helix"}),
    );
    assert_eq!(st, 200);
    assert_eq!(v["created"], false);
    assert_eq!(v["repetition_count"], 1);

    let (st, v) = post(
        &s,
        "/recall",
        json!({"query": "which editor does the user like?"}),
    );
    assert_eq!(st, 200);
    assert_eq!(
        v["hits"][0]["content"],
        "The user's favourite editor is Helix"
    );
    assert!(v["hits"][0]["explanation"]["channels"].is_array());

    // Malformed JSON, wrong shape, bad values, unknown routes and ids.
    let (st, v) = call(
        ureq::post(&format!("{}/memories", s.base)),
        Some("{not json"),
    );
    assert_eq!(st, 400);
    assert_eq!(v["error"]["code"], "malformed_json");
    let (st, v) = post(&s, "/memories", json!({"content": "x", "colour": "red"}));
    assert_eq!(st, 422, "{v}");
    let (st, v) = post(&s, "/memories", json!({"content": ""}));
    assert_eq!(st, 400);
    assert_eq!(v["error"]["code"], "invalid_input");
    let (st, _) = call(ureq::get(&format!("{}/memories/nope", s.base)), None);
    assert_eq!(st, 404);
    let (st, v) = call(ureq::get(&format!("{}/no/such/route", s.base)), None);
    assert_eq!(st, 404);
    assert_eq!(v["error"]["code"], "not_found");
    assert_eq!(oversized_status(&s), 413);
    let resp = ureq::post(&format!("{}/memories", s.base))
        .set("Content-Type", "application/json")
        .send_bytes(b"{\"content\": \"\xff\xfe\"}");
    assert!(matches!(resp, Err(ureq::Error::Status(400, _))));

    // Soft delete and restore; the server kept serving through every error.
    let (st, _) = call(ureq::delete(&format!("{}/memories/{id}", s.base)), None);
    assert_eq!(st, 200);
    let (_, v) = call(ureq::get(&format!("{}/trash", s.base)), None);
    assert_eq!(v["memories"][0]["id"], id.as_str());
    let (st, _) = post(&s, &format!("/memories/{id}/restore"), json!({}));
    assert_eq!(st, 200);
    let (_, v) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(v["total"], 1);
}

#[test]
fn namespaces_by_header_are_isolated() {
    let s = start(None);
    let put = |ns: &str, text: &str| {
        call(
            ureq::post(&format!("{}/memories", s.base)).set("X-Namespace", ns),
            Some(&json!({"content": text}).to_string()),
        )
    };
    assert_eq!(put("alpha", "alpha project codename is Bluebird").0, 201);
    assert_eq!(put("beta", "beta project codename is Redwing").0, 201);
    let (_, v) = call(
        ureq::post(&format!("{}/recall", s.base)).set("X-Namespace", "beta"),
        Some(&json!({"query": "project codename"}).to_string()),
    );
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["namespace"], "beta");
    let (_, v) = post(
        &s,
        "/recall",
        json!({"query": "codename", "namespace": "alpha"}),
    );
    assert_eq!(
        v["hits"][0]["content"],
        "alpha project codename is Bluebird"
    );
}

/// A namespace header that breaks the rule is refused, never read as
/// `default`: nothing is written anywhere.
#[test]
fn a_bad_namespace_header_is_refused_not_defaulted() {
    let s = start(None);
    for bad in ["two words", "semi;colon", &"x".repeat(65)] {
        let (status, v) = call(
            ureq::post(&format!("{}/memories", s.base)).set("X-Namespace", bad),
            Some(&json!({"content": "where does this land?"}).to_string()),
        );
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (400, Some("invalid_input")),
            "{bad}"
        );
    }
    let (_, stats) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(stats["total"], 0, "{stats}");
    // A good one still works, and an empty one means `default`.
    let (status, _) = call(
        ureq::post(&format!("{}/memories", s.base)).set("X-Namespace", ""),
        Some(&json!({"content": "this lands in default"}).to_string()),
    );
    assert_eq!(status, 201);
    let (_, v) = call(ureq::get(&format!("{}/memories", s.base)), None);
    assert_eq!(v["memories"][0]["namespace"], "default");
}

#[test]
fn bearer_auth_when_a_key_is_set() {
    let s = start(Some("s3cret-key"));
    let (st, _) = call(ureq::get(&format!("{}/health", s.base)), None);
    assert_eq!(st, 200, "health is public");
    let (st, v) = post(&s, "/memories", json!({"content": "guarded"}));
    assert_eq!(st, 401);
    assert_eq!(v["error"]["code"], "unauthorized");
    let (st, _) = call(
        ureq::post(&format!("{}/memories", s.base)).set("Authorization", "Bearer wrong-key"),
        Some(&json!({"content": "guarded"}).to_string()),
    );
    assert_eq!(st, 401);
    let (st, _) = call(
        ureq::post(&format!("{}/memories", s.base)).set("Authorization", "Bearer s3cret-key"),
        Some(&json!({"content": "guarded"}).to_string()),
    );
    assert_eq!(st, 201);
}

#[test]
fn episodes_are_ingested_and_embedded_in_the_background() {
    let s = start(None);
    for (sess, text) in [
        ("s1", "We adopted a puppy called Biscuit"),
        ("s1", "Biscuit chews shoes"),
        ("s2", "Pottery class today"),
    ] {
        let (st, v) = post(
            &s,
            "/episodes",
            json!({"session_id": sess, "role": "user", "content": text}),
        );
        assert_eq!(st, 201, "{v}");
    }
    // The engine thread embeds idle-time batches; wait (bounded) for them.
    let mut missing = 1;
    for _ in 0..150 {
        let (_, v) = call(ureq::get(&format!("{}/health", s.base)), None);
        missing = v["missing_vectors"].as_i64().unwrap();
        if missing == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(missing, 0);
    let (_, v) = post(
        &s,
        "/recall",
        json!({"query": "puppy Biscuit", "episodes_only": true}),
    );
    assert_eq!(v["hits"][0]["type"], "episode");
    assert!(
        v["channels_run"]
            .as_array()
            .unwrap()
            .contains(&json!("vector"))
    );
}

#[test]
fn the_openapi_document_matches_the_routes() {
    let s = start(None);
    let (st, doc) = call(ureq::get(&format!("{}/openapi.json", s.base)), None);
    assert_eq!(st, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 11);
    for (path, ops) in paths {
        let concrete = path.replace("{id}", "mem_none").replace("{name}", "nobody");
        for method in ops.as_object().unwrap().keys() {
            let url = format!("{}{concrete}", s.base);
            let req = match method.as_str() {
                "get" => ureq::get(&url),
                "post" => ureq::post(&url),
                "patch" => ureq::request("PATCH", &url),
                "delete" => ureq::delete(&url),
                other => panic!("unexpected method {other}"),
            };
            let body = if method == "get" || method == "delete" {
                None
            } else {
                Some("{}")
            };
            let (status, v) = call(req, body);
            assert_ne!(status, 405, "{method} {path} is documented but not routed");
            assert_ne!(
                v["error"]["message"], "no such route",
                "{method} {path} is documented but not routed"
            );
        }
    }
    // And an undocumented path is not routed.
    let (status, v) = call(ureq::get(&format!("{}/undocumented", s.base)), None);
    assert_eq!(
        (status, v["error"]["message"].as_str()),
        (404, Some("no such route"))
    );
}

#[test]
fn batch_insert_audit_log_and_integrity() {
    let s = start(None);
    let (st, v) = post(
        &s,
        "/memories/batch",
        json!({"memories": [{"content": "first fact"}, {"content": "second fact", "tags": ["x"]}, {"content": "first fact"}]}),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(
        (v["created"].as_u64(), v["reinforced"].as_u64()),
        (Some(2), Some(1))
    );
    // One invalid item: nothing of the batch is stored.
    let (st, v) = post(
        &s,
        "/memories/batch",
        json!({"memories": [{"content": "would be third"}, {"content": ""}]}),
    );
    assert_eq!(st, 400);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("memories[1]:"),
        "{v}"
    );
    let (_, stats) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(stats["total"], 2);

    let (_, list) = call(ureq::get(&format!("{}/memories", s.base)), None);
    let id = list["memories"][0]["id"].as_str().unwrap().to_string();
    call(
        ureq::delete(&format!("{}/memories/{id}?reason=test", s.base)),
        None,
    );
    let (_, audit) = call(ureq::get(&format!("{}/audit?target={id}", s.base)), None);
    assert_eq!(audit["entries"][0]["action"], "delete");
    assert_eq!(audit["entries"][0]["detail"], "test");
    let (_, all) = call(ureq::get(&format!("{}/audit", s.base)), None);
    assert!(
        all["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "reinforce")
    );

    let (_, health) = call(ureq::get(&format!("{}/health", s.base)), None);
    let i = &health["integrity"];
    assert_eq!(i["memories"], 2);
    assert_eq!(i["memory_fts_rows"], 2, "FTS in sync");
    assert_eq!(i["orphan_links"], 0);
}

#[test]
fn every_failure_answers_json_even_from_axum_itself() {
    let s = start(None);
    let get = |path: &str| call(ureq::get(&format!("{}{path}", s.base)), None);
    for (path, code) in [
        ("/stats?limit=abc", "invalid_request"),
        ("/memories?colour=red", "invalid_request"),
        ("/memories?layer=attic", "invalid_input"),
        ("/sessions?pending=maybe", "invalid_request"),
    ] {
        let (st, v) = get(path);
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (400, Some(code)),
            "{path}: {v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    let (st, v) = call(ureq::put(&format!("{}/memories", s.base)), Some("{}"));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    let Err(ureq::Error::Status(405, r)) =
        ureq::put(&format!("{}/memories", s.base)).send_string("{}")
    else {
        panic!("expected 405")
    };
    assert!(
        r.header("allow").is_some_and(|a| a.contains("POST")),
        "a 405 names the methods the route has"
    );
    // Over the limit without a declared length (chunked): still a JSON 413.
    // The whole body is sent before the answer is read, and is only a little
    // over the limit, so the server's early answer cannot race the writes.
    let (status, body) = chunked_over_limit(&s);
    assert_eq!(status, 413, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], "payload_too_large");
    let (st, v) = get("/health");
    assert_eq!(st, 200, "still serving");
    assert_eq!(v["vectors"]["state"], "enabled");
}

#[test]
fn memories_update_list_filters_and_conflicts() {
    let s = start(None);
    let (_, a) = post(
        &s,
        "/memories",
        json!({"content": "Standup is at 09:30", "kind": "procedural", "tags": ["work"]}),
    );
    let (_, b) = post(&s, "/memories", json!({"content": "The user likes jazz"}));
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let url = |p: &str| format!("{}{p}", s.base);

    let (st, v) = call(
        ureq::request("PATCH", &url(&format!("/memories/{a}"))),
        Some(r#"{"content": "Standup is at 10:00", "importance": 0.9, "tags": ["work", "daily"]}"#),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["content"].as_str(), v["tags"].clone()),
        (Some("Standup is at 10:00"), json!(["work", "daily"]))
    );
    let (_, found) = post(&s, "/recall", json!({"query": "standup time"}));
    assert_eq!(
        found["hits"][0]["content"], "Standup is at 10:00",
        "re-indexed"
    );
    for (body, status) in [
        (r#"{"importance": 7}"#, 400),
        (r#"{"colour": "red"}"#, 422),
        ("{oops", 400),
    ] {
        let (st, v) = call(
            ureq::request("PATCH", &url(&format!("/memories/{a}"))),
            Some(body),
        );
        assert_eq!(st, status, "{body}: {v}");
    }
    let (st, _) = call(
        ureq::request("PATCH", &url("/memories/mem_missing")),
        Some(r#"{"importance": 0.1}"#),
    );
    assert_eq!(st, 404);

    let ids = |v: &Value| -> Vec<String> {
        v["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&call(ureq::get(&url("/memories?kind=procedural")), None).1),
        [a]
    );
    assert_eq!(
        ids(&call(ureq::get(&url("/memories?tag=work,daily")), None).1),
        [a]
    );
    assert_eq!(
        ids(&call(
            ureq::get(&url("/memories?kind=semantic&layer=buffer")),
            None
        )
        .1),
        [b]
    );
    assert!(ids(&call(ureq::get(&url("/memories?layer=core")), None).1).is_empty());
    assert_eq!(
        ids(&call(ureq::get(&url("/memories?limit=1&offset=1")), None).1).len(),
        1
    );

    // Restoring what is not deleted, deleting twice: 409; the trash lists it.
    let (st, v) = post(&s, &format!("/memories/{b}/restore"), json!({}));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{v}"
    );
    assert_eq!(
        call(ureq::delete(&url(&format!("/memories/{b}"))), None).0,
        200
    );
    assert_eq!(
        call(ureq::delete(&url(&format!("/memories/{b}"))), None).0,
        409
    );
    assert_eq!(
        ids(&call(ureq::get(&url("/trash?kind=semantic")), None).1),
        [b]
    );
    let (st, v) = call(ureq::get(&url(&format!("/memories/{b}"))), None);
    assert!(
        st == 200 && v["valid_until"].is_i64(),
        "readable, marked deleted: {v}"
    );
    let (st, _) = post(&s, "/memories/mem_missing/restore", json!({}));
    assert_eq!(st, 404);
}

/// Whether a JSON text holds a decimal with more significant digits than
/// an f32 has (nine): an f32 printed through f64 (0.10000000149011612).
fn noisy(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|t| t.contains('.'))
        .any(|t| t.trim_start_matches(['0', '.']).replace('.', "").len() > 9)
}

#[test]
fn attributes_are_objects_and_numbers_print_as_stored() {
    let s = start(None);
    let url = |p: &str| format!("{}{p}", s.base);
    let raw = |r: ureq::Request, body: Option<&str>| -> String {
        let res = match body {
            Some(b) => r.set("Content-Type", "application/json").send_string(b),
            None => r.call(),
        };
        match res {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r.into_string().unwrap(),
            Err(e) => panic!("{e}"),
        }
    };
    let created = raw(
        ureq::post(&url("/memories")),
        Some(
            r#"{"content": "The user rides a red bike", "importance": 0.7, "attributes": {"colour": "red", "gears": 21}}"#,
        ),
    );
    let v: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(
        v["attributes"],
        json!({"colour": "red", "gears": 21}),
        "{created}"
    );
    assert!(created.contains(r#""importance":0.7"#), "{created}");
    assert!(created.contains(r#""decay_rate":0.1"#), "{created}");
    assert!(!noisy(&created), "no f32 noise: {created}");
    let id = v["id"].as_str().unwrap();

    // Round 1's string form is still read; the answer is an object.
    let patched = raw(
        ureq::request("PATCH", &url(&format!("/memories/{id}"))),
        Some(r#"{"attributes": "{\"colour\": \"blue\"}"}"#),
    );
    let p: Value = serde_json::from_str(&patched).unwrap();
    assert_eq!(p["attributes"], json!({"colour": "blue"}), "{patched}");
    // Not an object: a typed 400, nothing changed.
    let (st, e) = call(
        ureq::request("PATCH", &url(&format!("/memories/{id}"))),
        Some(r#"{"attributes": [1, 2]}"#),
    );
    assert_eq!(
        (st, e["error"]["code"].as_str()),
        (400, Some("invalid_input")),
        "{e}"
    );
    let listed = raw(ureq::get(&url("/memories")), None);
    assert!(!noisy(&listed), "{listed}");
    let recalled = raw(
        ureq::post(&url("/recall")),
        Some(r#"{"query": "red bike"}"#),
    );
    assert!(!noisy(&recalled), "{recalled}");
    let export = raw(ureq::get(&url("/export")), None);
    assert!(
        export.contains(r#""attributes":{"colour":"blue"}"#),
        "{export}"
    );
}
