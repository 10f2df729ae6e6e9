//! Auth bypass attempts against every route the OpenAPI document lists
//! (issue 20, isolation and auth), over real HTTP on 127.0.0.1: with an API
//! key set, a request without the key, with a wrong one, a differently-cased
//! one, the key in the query string or as Basic credentials, or a path that
//! dresses a route up as `/health` is refused on every route but `/health`
//! (and the document itself); the right key is let through everywhere, and
//! nothing the refused requests carried was stored.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::Value;
use std::io::{Read, Write};

const KEY: &str = "s3cret-Key-42";
/// `KEY` without its last character.
const KEY_PREFIX: &str = "s3cret-Key-4";

/// What is tried: a label, the headers sent, the query string appended.
type Attempt = (&'static str, Vec<(&'static str, String)>, &'static str);

/// Sends one request as raw bytes (so the path reaches the server exactly
/// as written: no client-side normalisation) and returns its status.
fn raw(s: &Server, method: &str, path: &str, headers: &[(&str, String)]) -> u16 {
    let addr = s.base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let body = if method == "GET" { "" } else { "{}" };
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    if method != "GET" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    conn.write_all(req.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Every documented (method, path), path parameters filled in.
fn routes(s: &Server) -> Vec<(String, String)> {
    let (st, doc) = call(ureq::get(&format!("{}/openapi.json", s.base)), None);
    assert_eq!(st, 200, "the document is public");
    let mut out = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        let filled = path
            .replace("{id}", "mem_00000000000000000000000000")
            .replace("{name}", "someone");
        for method in methods.as_object().unwrap().keys() {
            out.push((method.to_uppercase(), filled.clone()));
        }
    }
    assert!(out.len() >= 40, "{} routes documented", out.len());
    out
}

fn public(path: &str) -> bool {
    path == "/health" || path == "/openapi.json"
}

#[test]
fn every_route_but_health_refuses_what_is_not_the_key() {
    let s = start(Some(KEY));
    let routes = routes(&s);
    let attempts: Vec<Attempt> = vec![
        ("no header", vec![], ""),
        (
            "a wrong key",
            vec![("Authorization", "Bearer wrong".into())],
            "",
        ),
        (
            "the key upper-cased",
            vec![("Authorization", format!("Bearer {}", KEY.to_uppercase()))],
            "",
        ),
        (
            "the key with a suffix",
            vec![("Authorization", format!("Bearer {KEY}x"))],
            "",
        ),
        (
            "a prefix of the key",
            vec![("Authorization", format!("Bearer {KEY_PREFIX}"))],
            "",
        ),
        (
            "the key without the scheme",
            vec![("Authorization", KEY.into())],
            "",
        ),
        (
            "the key as Basic credentials",
            vec![("Authorization", format!("Basic {KEY}"))],
            "",
        ),
        (
            "the key in other headers",
            vec![("X-Api-Key", KEY.into()), ("Api-Key", KEY.into())],
            "",
        ),
        (
            "the key in the query string",
            vec![],
            "?api_key=KEY&key=KEY&token=KEY&access_token=KEY",
        ),
    ];
    for (method, path) in routes.iter().filter(|(_, p)| !public(p)) {
        for (what, headers, query) in &attempts {
            let target = format!("{path}{}", query.replace("KEY", KEY));
            let st = raw(&s, method, &target, headers);
            assert_eq!(st, 401, "{method} {path} with {what}: {st}");
        }
    }

    // Paths that dress a write up as a public route: refused or unknown,
    // never served.
    for path in [
        "/health/../memories",
        "/health/%2e%2e/memories",
        "/openapi.json/../memories",
        "//memories",
        "/memories/",
        "/./memories",
        "/MEMORIES",
        "/health%2F..%2Fmemories",
        "/memories?/health",
        "/memories#/health",
    ] {
        let st = raw(&s, "POST", path, &[]);
        assert!(
            matches!(st, 400 | 401 | 404 | 405),
            "POST {path} without the key: {st}"
        );
    }

    // Nothing any refused request carried was written.
    let (st, stats) = call(
        ureq::get(&format!("{}/stats", s.base)).set("Authorization", &format!("Bearer {KEY}")),
        None,
    );
    assert_eq!(st, 200);
    assert_eq!(stats["active"], Value::from(0), "{stats}");
    assert_eq!(stats["episodes"], Value::from(0), "{stats}");

    // The positive control: the key passes on every route (a lower-case
    // header name is the same header) to an answer or a typed error (503
    // for the LLM steps, whose LLM is off here), never an internal one.
    for (method, path) in &routes {
        let st = raw(
            &s,
            method,
            path,
            &[("authorization", format!("Bearer {KEY}"))],
        );
        assert!(
            st != 0 && st != 401 && st != 500,
            "{method} {path} with the key: {st}"
        );
    }
}
