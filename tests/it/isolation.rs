//! Namespaces are a hard partition on every read route (issue 20,
//! isolation), over real HTTP on 127.0.0.1: a secret written in one
//! namespace — a memory with an earlier version, a trashed memory, a turn,
//! a fact, an entity, a trigger tag, a topic — appears in no answer of any
//! read route asked from another namespace, and the owner does see it (the
//! positive control, so a route that shows nothing at all cannot pass).
//! The MCP tools at `/mcp` are asked too, as the same namespaces.
//!
//! With scoped keys (issue 43) the same reads run with a key of the other
//! tenant: in its own namespace they find nothing; aimed at the owner's
//! namespace every one is refused (403) and shows nothing; the owner's key
//! sees the secret.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::{Value, json};

pub(crate) const SECRET: &str = "quokkazyx";
const OWNER: &str = "owner";
const INTRUDER: &str = "intruder";
/// Words of the owner's memory (its first and second version), trashed
/// memory, turn and fact that no request of the intruder contains.
pub(crate) const LEAK_MARKERS: [&str; 4] = ["marta", "offsite", "thrown away", "opens"];

thread_local! {
    /// The bearer key this test's requests carry (none: a server without keys).
    static KEY: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

pub(crate) fn as_key(key: Option<&str>) {
    KEY.with(|k| *k.borrow_mut() = key.map(str::to_string));
}

fn authorized(req: ureq::Request) -> ureq::Request {
    match KEY.with(|k| k.borrow().clone()) {
        Some(key) => req.set("Authorization", &format!("Bearer {key}")),
        None => req,
    }
}

pub(crate) fn send(
    s: &Server,
    method: &str,
    path: &str,
    ns: &str,
    body: Option<Value>,
) -> (u16, String) {
    let url = format!("{}{path}", s.base);
    let req = match method {
        "GET" => ureq::get(&url),
        "POST" => ureq::post(&url),
        "PATCH" => ureq::patch(&url),
        "DELETE" => ureq::delete(&url),
        other => panic!("method {other}"),
    }
    .set("X-Namespace", ns);
    let req = authorized(req);
    let res = match &body {
        Some(b) => req
            .set("Content-Type", "application/json")
            .send_string(&b.to_string()),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    (resp.status(), resp.into_string().unwrap_or_default())
}

/// The owner's secret in every form a read route can show; returns the
/// id of the memory.
fn plant(s: &Server) -> String {
    plant_in(s, OWNER)
}

/// The secret in every form a read route can show, in namespace `ns`.
pub(crate) fn plant_in(s: &Server, ns: &str) -> String {
    let (st, body) = send(
        s,
        "POST",
        "/memories",
        ns,
        Some(json!({
            "content": "The vault codename is Quokkazyx, kept by Marta",
            "tags": [format!("trigger:{SECRET}")],
        })),
    );
    assert_eq!(st, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, body) = send(
        s,
        "PATCH",
        &format!("/memories/{id}"),
        ns,
        Some(json!({"content": "The vault codename is Quokkazyx, kept offsite by Marta"})),
    );
    assert_eq!(st, 200, "{body}");
    let (st, body) = send(
        s,
        "POST",
        "/memories",
        ns,
        Some(json!({"content": "A draft about Quokkazyx that was thrown away"})),
    );
    assert_eq!(st, 201, "{body}");
    let trashed = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, _) = send(s, "DELETE", &format!("/memories/{trashed}"), ns, None);
    assert_eq!(st, 200);
    let (st, body) = send(
        s,
        "POST",
        "/episodes",
        ns,
        Some(json!({"session_id": "sess-owner", "role": "user",
                    "content": "Remember that Quokkazyx opens the vault"})),
    );
    assert_eq!(st, 201, "{body}");
    let (st, body) = send(
        s,
        "POST",
        "/facts",
        ns,
        Some(
            json!({"subject": "Quokkazyx", "predicate": "opens", "object": "the vault",
                    "namespace": ns}),
        ),
    );
    assert!(st < 300, "{st} {body}");
    let (st, body) = send(
        s,
        "POST",
        "/consolidate",
        ns,
        Some(json!({"namespace": ns})),
    );
    assert_eq!(st, 200, "{body}");
    id
}

/// Every read route, asked as `ns` for what the owner planted: (route,
/// status, body).
pub(crate) fn reads(s: &Server, ns: &str, id: &str) -> Vec<(String, u16, String)> {
    let gets = [
        "/stats".to_string(),
        "/memories?limit=100".into(),
        format!("/memories/{id}"),
        format!("/memories/{id}/history"),
        "/trash".into(),
        "/sessions".into(),
        "/sessions/sess-owner".into(),
        "/entities/Quokkazyx".into(),
        format!("/export?namespace={ns}"),
        format!("/audit?namespace={ns}&limit=100"),
        format!("/decisions?namespace={ns}&limit=100"),
        format!("/search?q={SECRET}"),
        "/recent?hours=48".into(),
        "/resume?hours=48".into(),
        format!("/resume?hours=48&context={SECRET}"),
        "/topics".into(),
        "/triggers".into(),
        format!("/triggers/{SECRET}"),
        "/facts?entity=Quokkazyx".into(),
        "/facts?subject=Quokkazyx".into(),
        "/facts/graph?entity=Quokkazyx&hops=2".into(),
        "/facts/conflicts".into(),
        "/facts/history?subject=Quokkazyx".into(),
    ];
    let mut out: Vec<(String, u16, String)> = gets
        .iter()
        .map(|p| {
            let (st, body) = send(s, "GET", p, ns, None);
            (format!("GET {p}"), st, body)
        })
        .collect();
    let posts = [
        (
            "/recall",
            json!({"query": "vault codename Quokkazyx", "include_episodes": true}),
        ),
        (
            "/recall",
            json!({"query": "Quokkazyx", "episodes_only": true}),
        ),
        (
            "/context",
            json!({"prompt": "What is the vault codename Quokkazyx?", "namespace": ns}),
        ),
        ("/topic", json!({"ids": ["kb1", "kp1"], "namespace": ns})),
    ];
    for (p, body) in posts {
        let (st, text) = send(s, "POST", p, ns, Some(body.clone()));
        out.push((format!("POST {p} {body}"), st, text));
    }
    out.extend(mcp_reads(s, ns, id));
    out
}

/// Every read tool of MCP over streamable HTTP (`/mcp`, stateless: each
/// call is one POST), asked as `ns` through the `X-Namespace` header.
fn mcp_reads(s: &Server, ns: &str, id: &str) -> Vec<(String, u16, String)> {
    let calls = [
        (
            "search_memory",
            json!({"query": "vault codename Quokkazyx"}),
        ),
        (
            "recall",
            json!({"query": "Quokkazyx", "include_episodes": true}),
        ),
        ("get_memory", json!({"id": id})),
        ("history", json!({"id": id})),
        ("list_memories", json!({"limit": 100})),
        ("list_memories", json!({"deleted": true})),
        ("memory_stats", json!({"namespace": ns})),
        ("get_entity_info", json!({"name": "Quokkazyx"})),
        (
            "context",
            json!({"prompt": "What is the vault codename Quokkazyx?"}),
        ),
        ("resume", json!({"hours": 48, "context": SECRET})),
        ("topics", json!({})),
        ("topic", json!({"ids": ["kb1", "kp1"]})),
        ("triggers", json!({})),
        ("recent", json!({"hours": 48})),
        ("sessions", json!({})),
        (
            "query_facts",
            json!({"subject": "Quokkazyx", "history": true}),
        ),
        ("fact_graph", json!({"entity": "Quokkazyx"})),
        ("decisions", json!({"namespace": ns, "limit": 100})),
        ("export", json!({"namespace": ns})),
    ];
    calls
        .into_iter()
        .map(|(tool, args)| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": tool, "arguments": args}});
            let (st, text) = call_text(
                authorized(
                    ureq::post(&format!("{}/mcp", s.base))
                        .set("X-Namespace", ns)
                        .set("Accept", "application/json, text/event-stream")
                        .set("MCP-Protocol-Version", "2025-06-18"),
                ),
                Some(&body.to_string()),
            );
            assert!(
                text.contains("\"result\"") || st == 403,
                "MCP {tool}: {st} {text}"
            );
            (format!("MCP {tool} {args}"), st, text)
        })
        .collect()
}

#[test]
fn no_read_route_shows_another_namespace_what_its_owner_sees() {
    check(&start(None), "SQLite");
}

/// The same over Postgres (issue 16): every query there takes the
/// namespace too.
#[test]
fn no_read_route_shows_another_namespace_what_its_owner_sees_on_postgres() {
    let db = common::postgres::fresh_database();
    check(
        &start_on(tempfile::tempdir().unwrap(), &db, None, &[]),
        "Postgres",
    );
}

/// The same reads with scoped keys: the intruder's key (admin of its own
/// namespace, so the operator's reads are asked too) finds nothing in its
/// namespace and is refused in the owner's; the owner's key sees it all.
#[test]
fn a_key_of_the_other_tenant_finds_nothing() {
    const ADMIN: &str = "isolation-admin";
    let s = start(Some(ADMIN));
    let key = |ns: &str| {
        let (st, v) = call(
            ureq::post(&format!("{}/keys", s.base))
                .set("Authorization", &format!("Bearer {ADMIN}")),
            Some(&json!({"name": ns, "role": "admin", "namespaces": [ns]}).to_string()),
        );
        assert_eq!(st, 201, "{v}");
        v["key"].as_str().unwrap().to_string()
    };
    let (owner_key, intruder_key) = (key(OWNER), key(INTRUDER));
    as_key(Some(&owner_key));
    let id = plant(&s);
    as_key(Some(&intruder_key));
    let aimed = reads(&s, OWNER, &id);
    for (route, st, body) in &aimed {
        assert_eq!(
            *st, 403,
            "{route} with the intruder's key at the owner's namespace: {body}"
        );
        let lower = body.to_lowercase();
        assert!(
            LEAK_MARKERS.iter().all(|m| !lower.contains(m)) && !lower.contains(SECRET),
            "{route}: {body}"
        );
    }
    eprintln!(
        "isolation with keys: {} reads aimed at another tenant's namespace, all refused",
        aimed.len()
    );
    check_planted(&s, "SQLite, scoped keys", &id, |ns| {
        as_key(Some(if ns == OWNER {
            &owner_key
        } else {
            &intruder_key
        }));
    });
}

fn check(s: &Server, backend: &str) {
    let id = plant(s);
    check_planted(s, backend, &id, |_| {});
}

/// The intruder finds nothing of what the owner planted; the owner sees it.
/// `who(ns)` sets the key a namespace's requests carry.
fn check_planted(s: &Server, backend: &str, id: &str, who: impl Fn(&str)) {
    let id = id.to_string();
    who(INTRUDER);
    let intruder = reads(s, INTRUDER, &id);
    for (route, st, body) in &intruder {
        assert!(*st < 500, "{route} as the intruder: {st} {body}");
        // An answer may echo what the intruder sent (the secret word it
        // searched for, the id it asked about); the words below are only in
        // the owner's data.
        let body = body.replace(&format!("`{id}`"), "");
        let lower = body.to_lowercase();
        for marker in LEAK_MARKERS {
            assert!(
                !lower.contains(marker),
                "{route} as the intruder shows the owner's {marker:?}: {body}"
            );
        }
        assert!(!body.contains(&id), "{route} shows the owner's id: {body}");
    }
    // Nor does an answer tell the owner's id from an unknown one.
    let unknown = "mem_00000000000000000000000000";
    for path in ["/memories/{}", "/memories/{}/history"] {
        let (st_owned, owned) = send(s, "GET", &path.replace("{}", &id), INTRUDER, None);
        let (st_unknown, none) = send(s, "GET", &path.replace("{}", unknown), INTRUDER, None);
        assert_eq!(st_owned, st_unknown, "{path}: {owned} / {none}");
        assert_eq!(owned.replace(&id, unknown), none, "{path}");
    }

    // The positive control: the owner's reads show the secret on the routes
    // that hold it.
    who(OWNER);
    let owner = reads(s, OWNER, &id);
    let shown: Vec<&str> = owner
        .iter()
        .filter(|(_, st, body)| *st < 300 && body.to_lowercase().contains(SECRET))
        .map(|(route, _, _)| route.as_str())
        .collect();
    for must in [
        "GET /memories?limit=100",
        "GET /memories/",
        "/history",
        "GET /trash",
        "GET /sessions/sess-owner",
        "GET /export",
        "GET /search",
        "GET /recent",
        "GET /facts?subject",
        "POST /recall",
        "MCP search_memory",
        "MCP get_memory",
        "MCP list_memories {\"deleted\"",
        "MCP recent",
        "MCP export",
    ] {
        assert!(
            shown.iter().any(|r| r.contains(must)),
            "the owner should see the secret through {must}; shown through {shown:?}"
        );
    }
    eprintln!(
        "isolation ({backend}): {} read routes asked from another namespace, 0 leaks; the owner sees the secret through {} of them",
        intruder.len(),
        shown.len()
    );
    assert!(
        shown.len() >= 12,
        "the owner sees the secret through {} routes: {shown:?}",
        shown.len()
    );
}
