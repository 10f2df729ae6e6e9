//! Traces over OTLP (issue 43): a server with `MNEMO_OTLP_ENDPOINT` sends
//! each request's span to a collector — here a scripted one on 127.0.0.1
//! that keeps the OTLP/HTTP JSON it is sent — with its method, route and
//! status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common;

use common::server::*;
use serde_json::{Value, json};

/// What the collector was sent: (path, body) per request.
type Received = Arc<Mutex<Vec<(String, String)>>>;

/// A collector: every body POSTed to it, answered `{}`.
fn collector() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&got);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0;
                    loop {
                        let mut h = String::new();
                        reader.read_line(&mut h).unwrap();
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    kept.lock()
                        .unwrap()
                        .push((path, String::from_utf8_lossy(&body).into_owned()));
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                    );
                }
            });
        }
    });
    (base, got)
}

/// Every span the collector was sent: (name, attributes).
fn spans(got: &Mutex<Vec<(String, String)>>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (_, body) in got.lock().unwrap().iter() {
        let v: Value = serde_json::from_str(body).unwrap();
        for rs in v["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for span in ss["spans"].as_array().into_iter().flatten() {
                    let mut attrs = serde_json::Map::new();
                    for a in span["attributes"].as_array().into_iter().flatten() {
                        let value = &a["value"];
                        let v = value
                            .get("stringValue")
                            .or_else(|| value.get("intValue"))
                            .cloned()
                            .unwrap_or(Value::Null);
                        attrs.insert(a["key"].as_str().unwrap().to_string(), v);
                    }
                    out.push((
                        span["name"].as_str().unwrap().to_string(),
                        Value::Object(attrs),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn each_request_is_a_span_at_the_collector() {
    let (base, got) = collector();
    let s = start_with(
        tempfile::tempdir().unwrap(),
        None,
        &[
            ("MNEMO_OTLP_ENDPOINT", &base),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    );
    let (st, _) = post(
        &s,
        "/memories",
        json!({"content": "Traces reach the collector"}),
    );
    assert_eq!(st, 201);
    let (st, _) = post(&s, "/recall", json!({"query": "collector"}));
    assert_eq!(st, 200);
    let (st, _) = call(ureq::get(&format!("{}/memories/mem_nope", s.base)), None);
    assert_eq!(st, 404);

    let deadline = Instant::now() + Duration::from_secs(30);
    let found = loop {
        let found = spans(&got);
        if found
            .iter()
            .filter(|(n, _)| n.starts_with("POST ") || n.starts_with("GET "))
            .count()
            >= 3
        {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "spans at the collector: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        got.lock()
            .unwrap()
            .iter()
            .all(|(path, _)| path == "/v1/traces")
    );
    let span = |name: &str| {
        found
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no span {name}: {found:?}"))
            .1
            .clone()
    };
    let remember = span("POST /memories");
    assert_eq!(remember["http.request.method"], "POST");
    assert_eq!(remember["http.response.status_code"], "201");
    assert_eq!(
        span("GET /memories/mem_nope")["http.response.status_code"],
        "404"
    );
    span("POST /recall");
}
