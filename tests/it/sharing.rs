//! Tenants share only what they chose to share (issue 77), over real HTTP
//! with scoped keys: what the operator writes to `default` reaches no
//! tenant once the store has scoped keys (the implicit namespace and an
//! empty one checked like a named one, every read route and MCP tool
//! asked); with `MNEMO_SHARING=on` every tenant reads `default` and
//! reinforces none of it; a key's read-only list reads and never touches;
//! a store without keys keeps seed 004's rule (projects read `default`);
//! the store-wide metrics need a key of every namespace.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::isolation::{LEAK_MARKERS, as_key, plant_in, reads};
use crate::keys::{ADMIN, mcp, rpc, send};

use common::server::*;
use serde_json::{Value, json};

/// What the operator keeps in `default`, which no tenant should see.
const NOTE: &str = "The staging database password is hunter2-zebra";

fn key(s: &Server, name: &str, role: &str, namespaces: &[&str], reads: &[&str]) -> String {
    let body = json!({"name": name, "role": role, "namespaces": namespaces, "reads": reads});
    let (st, v) = send(s, "POST", "/keys", ADMIN, None, Some(body));
    assert_eq!(st, 201, "{v}");
    v["key"].as_str().unwrap().to_string()
}

fn remember(s: &Server, key: &str, ns: &str, content: &str) -> String {
    let (st, v) = send(
        s,
        "POST",
        "/memories",
        key,
        Some(ns),
        Some(json!({"content": content})),
    );
    assert_eq!(st, 201, "{v}");
    v["id"].as_str().unwrap().to_string()
}

fn recall(s: &Server, key: &str, ns: Option<&str>, body: Value) -> (u16, String) {
    let (st, v) = send(s, "POST", "/recall", key, ns, Some(body));
    (st, v.to_string())
}

/// How often memory `id` of `ns` was recalled, as the operator reads it.
fn accesses(s: &Server, ns: &str, id: &str) -> u64 {
    let (st, v) = send(s, "GET", &format!("/memories/{id}"), ADMIN, Some(ns), None);
    assert_eq!(st, 200, "{v}");
    v["access_count"].as_u64().unwrap()
}

fn refused((st, v): (u16, Value), what: &str) {
    assert_eq!(st, 403, "{what}: {v}");
    assert_eq!(v["error"]["code"], "forbidden", "{what}: {v}");
}

/// The issue's four rows, the empty-namespace forms, and every read route
/// and MCP read tool as tenant-b: nothing of `default`.
fn default_stays_the_operators(s: &Server, backend: &str) {
    let note = remember(s, ADMIN, "default", NOTE);
    as_key(Some(ADMIN));
    let planted = plant_in(s, "default");
    let b = key(s, "b", "admin", &["tenant-b"], &[]);
    remember(s, &b, "tenant-b", "Tenant b ships its roadmap in March");

    let ask = json!({"query": "staging database password"});
    refused(
        send(
            s,
            "POST",
            "/recall",
            &b,
            Some("tenant-a"),
            Some(ask.clone()),
        ),
        "recall in another tenant",
    );
    refused(
        send(s, "GET", "/memories?namespace=default", &b, None, None),
        "listing default",
    );
    let mut answers = vec![
        ("recall, no namespace", recall(s, &b, None, ask.clone())),
        (
            "recall in tenant-b",
            recall(s, &b, Some("tenant-b"), ask.clone()),
        ),
        (
            "recall, empty namespace",
            recall(
                s,
                &b,
                None,
                json!({"query": "staging database password", "namespace": ""}),
            ),
        ),
    ];
    for path in [
        "/memories?namespace=",
        "/search?q=password&namespace=",
        "/stats?namespace=",
    ] {
        let (st, v) = send(s, "GET", path, &b, None, None);
        answers.push((path, (st, v.to_string())));
    }
    let (st, v) = send(
        s,
        "POST",
        "/mcp",
        &b,
        None,
        Some(mcp("recall", json!({"query": "staging database password"}))),
    );
    answers.push(("MCP recall, no namespace", (st, v.to_string())));
    // MCP resources and prompts, and the operator's reads of a tenant.
    let resource = |uri: &str| rpc("resources/read", json!({"uri": uri}));
    for (what, message) in [
        (
            "MCP resume resource",
            resource("mnemo://namespaces/tenant-b/resume"),
        ),
        (
            "MCP core resource",
            resource("mnemo://namespaces/tenant-b/core"),
        ),
        (
            "MCP start_session prompt",
            rpc(
                "prompts/get",
                json!({"name": "start_session", "arguments": {}}),
            ),
        ),
    ] {
        let (st, v) = send(s, "POST", "/mcp", &b, None, Some(message));
        answers.push((what, (st, v.to_string())));
    }
    for path in ["/llm-usage", "/decisions?limit=100", "/export"] {
        let req =
            ureq::get(&format!("{}{path}", s.base)).set("Authorization", &format!("Bearer {b}"));
        answers.push((path, call_text(req, None)));
    }
    for (what, (st, body)) in &answers {
        assert!(*st < 300, "{what}: {st} {body}");
        assert!(
            !body.contains("hunter2"),
            "{what} shows default's note: {body}"
        );
    }

    let routes = reads(s, "tenant-b", &planted);
    for (route, st, body) in &routes {
        assert!(*st < 500, "{route}: {st} {body}");
        let lower = body.to_lowercase();
        for marker in LEAK_MARKERS {
            assert!(
                !lower.contains(marker),
                "{route} shows default's {marker:?}: {body}"
            );
        }
        // An answer may echo the id asked about (`not found: no memory `…``).
        let body = body.replace(&format!("`{planted}`"), "");
        assert!(
            !body.contains(&planted),
            "{route} shows default's id: {body}"
        );
    }
    assert_eq!(
        accesses(s, "default", &note),
        0,
        "no tenant reinforced default's note"
    );

    // The positive control: the operator reads it where it is.
    let (st, body) = recall(s, ADMIN, Some("default"), ask);
    assert!(st == 200 && body.contains("hunter2"), "{st} {body}");
    eprintln!(
        "sharing ({backend}, scoped keys, auto): {} asks of tenant-b, none shows default's note",
        answers.len() + routes.len() + 2
    );
}

#[test]
fn a_tenant_key_reads_nothing_of_default() {
    default_stays_the_operators(&start(Some(ADMIN)), "SQLite");
}

#[test]
fn a_tenant_key_reads_nothing_of_default_on_postgres() {
    let db = common::postgres::fresh_database();
    let s = start_on(tempfile::tempdir().unwrap(), &db, Some(ADMIN), &[]);
    default_stays_the_operators(&s, "Postgres");
}

/// `MNEMO_SHARING=on`: every tenant reads `default`, and neither its
/// recall nor a read-only key's reinforces anything it may not write.
#[test]
fn sharing_on_reads_default_and_touches_only_what_the_key_writes() {
    let s = start_with(
        tempfile::tempdir().unwrap(),
        Some(ADMIN),
        &[("MNEMO_SHARING", "on")],
    );
    let note = remember(&s, ADMIN, "default", NOTE);
    let b = key(&s, "b", "write", &["tenant-b"], &[]);
    let own = remember(&s, &b, "tenant-b", "Tenant b ships its roadmap in March");

    let (st, body) = recall(&s, &b, None, json!({"query": "staging database password"}));
    assert!(st == 200 && body.contains("hunter2"), "shared: {st} {body}");
    let (st, body) = recall(&s, &b, None, json!({"query": "roadmap in March"}));
    assert!(st == 200 && body.contains(&own), "{st} {body}");
    wait_for(
        || accesses(&s, "tenant-b", &own) >= 1,
        "tenant-b's own recall is recorded",
    );
    assert_eq!(
        accesses(&s, "default", &note),
        0,
        "default's note is not tenant-b's to reinforce"
    );
    refused(
        send(
            &s,
            "POST",
            "/memories",
            &b,
            Some("default"),
            Some(json!({"content": "x y z"})),
        ),
        "writing default",
    );

    // A read-only key recalls and reinforces nothing.
    let reader = key(&s, "reader", "read", &["tenant-b"], &[]);
    let before = accesses(&s, "tenant-b", &own);
    let (st, body) = recall(&s, &reader, None, json!({"query": "roadmap in March"}));
    assert!(st == 200 && body.contains(&own), "{st} {body}");
    let (st, body) = recall(
        &s,
        &b,
        None,
        json!({"query": "roadmap in March", "dry": true}),
    );
    assert!(st == 200, "{body}");
    assert_eq!(
        accesses(&s, "tenant-b", &own),
        before,
        "a read-only key's recall is no write"
    );
}

/// Sharing off (scoped keys exist): a key whose read list names `default`
/// reads it where it is, writes nothing there, and its own namespace
/// still does not read `default`.
#[test]
fn a_keys_read_list_reads_and_never_writes() {
    let s = start(Some(ADMIN));
    let note = remember(&s, ADMIN, "default", NOTE);
    let c = key(&s, "c", "write", &["tenant-c"], &["default"]);
    let (st, v) = send(&s, "GET", "/keys", ADMIN, None, None);
    assert!(
        st == 200 && v.to_string().contains(r#""reads":["default"]"#),
        "{v}"
    );

    let (st, v) = send(&s, "GET", "/memories", &c, Some("default"), None);
    assert!(st == 200 && v.to_string().contains("hunter2"), "{st} {v}");
    let ask = json!({"query": "staging database password"});
    let (st, body) = recall(&s, &c, Some("default"), ask.clone());
    assert!(st == 200 && body.contains("hunter2"), "{st} {body}");
    let (st, body) = recall(&s, &c, None, ask);
    assert!(
        st == 200 && !body.contains("hunter2"),
        "tenant-c alone: {st} {body}"
    );
    refused(
        send(
            &s,
            "POST",
            "/memories",
            &c,
            Some("default"),
            Some(json!({"content": "x y z"})),
        ),
        "writing a namespace it only reads",
    );
    assert_eq!(
        accesses(&s, "default", &note),
        0,
        "a read-only namespace is not reinforced"
    );
}

/// Without keys nothing changes: a project namespace reads `default`
/// (seed 004 §7), as before issue 77.
#[test]
fn without_keys_a_project_reads_default() {
    let s = start(None);
    let (st, v) = call(
        ureq::post(&format!("{}/memories", s.base)),
        Some(&json!({"content": NOTE}).to_string()),
    );
    assert_eq!(st, 201, "{v}");
    let (st, v) = call(
        ureq::post(&format!("{}/recall", s.base)).set("X-Namespace", "proj"),
        Some(&json!({"query": "staging database password"}).to_string()),
    );
    assert!(st == 200 && v.to_string().contains("hunter2"), "{st} {v}");
}

/// `/metrics` labels namespaces of every tenant: only a key of every
/// namespace reads it.
#[test]
fn the_metrics_need_a_key_of_every_namespace() {
    let s = start(Some(ADMIN));
    let b = key(&s, "b", "admin", &["tenant-b"], &[]);
    refused(
        send(&s, "GET", "/metrics", &b, None, None),
        "metrics with a tenant's key",
    );
    let all = key(&s, "ops", "admin", &["*"], &[]);
    let (st, _) = call_text(
        ureq::get(&format!("{}/metrics", s.base)).set("Authorization", &format!("Bearer {all}")),
        None,
    );
    assert_eq!(st, 200);
}

/// Polls `ok` (reads' effects reach the writer just after the read).
fn wait_for(ok: impl Fn() -> bool, what: &str) {
    for _ in 0..100 {
        if ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{what}: not within 5 s");
}
