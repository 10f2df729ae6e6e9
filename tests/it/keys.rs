//! API keys scoped to namespaces, with a role (issue 43), over real HTTP:
//! made, used, refused, rotated and revoked; stored hashed; made by
//! `mnemo keys` and seen by the running server; `MNEMO_API_KEY` stays the
//! admin key. (The isolation check with the other tenant's key is in
//! `isolation.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::{Value, json};

pub(crate) const ADMIN: &str = "the-operator-secret";

pub(crate) fn send(
    s: &Server,
    method: &str,
    path: &str,
    key: &str,
    ns: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let url = format!("{}{path}", s.base);
    let mut req = match method {
        "GET" => ureq::get(&url),
        "POST" => ureq::post(&url),
        "DELETE" => ureq::delete(&url),
        other => panic!("method {other}"),
    }
    .set("Authorization", &format!("Bearer {key}"))
    .set("Accept", "application/json, text/event-stream")
    .set("MCP-Protocol-Version", "2025-06-18");
    if let Some(ns) = ns {
        req = req.set("X-Namespace", ns);
    }
    call(req, body.map(|b| b.to_string()).as_deref())
}

fn make_key(s: &Server, name: &str, role: &str, namespaces: &[&str]) -> String {
    let (st, v) = send(
        s,
        "POST",
        "/keys",
        ADMIN,
        None,
        Some(json!({"name": name, "role": role, "namespaces": namespaces})),
    );
    assert_eq!(st, 201, "{v}");
    v["key"].as_str().unwrap().to_string()
}

/// A JSON-RPC request to `/mcp`.
pub(crate) fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

pub(crate) fn mcp(tool: &str, args: Value) -> Value {
    rpc("tools/call", json!({"name": tool, "arguments": args}))
}

/// A refusal is a 403 with a JSON error.
fn forbidden((st, v): (u16, Value), what: &str) {
    assert_eq!(st, 403, "{what}: {v}");
    assert_eq!(v["error"]["code"], "forbidden", "{what}: {v}");
}

#[test]
fn keys_reach_only_their_namespaces_and_roles() {
    let s = start(Some(ADMIN));
    let writer = make_key(&s, "agent a", "write", &["tenant-a"]);
    let reader = make_key(&s, "dashboard a", "read", &["tenant-a"]);
    let team = make_key(&s, "team", "write", &["team-*"]);

    // A key of one namespace writes there without naming it.
    let (st, v) = send(
        &s,
        "POST",
        "/memories",
        &writer,
        None,
        Some(json!({"content": "Ada prefers green tea"})),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["namespace"], "tenant-a");
    // Another namespace, by header, body, query or a batch item: 403, nothing written.
    forbidden(
        send(
            &s,
            "POST",
            "/memories",
            &writer,
            Some("tenant-b"),
            Some(json!({"content": "x"})),
        ),
        "header",
    );
    forbidden(
        send(
            &s,
            "POST",
            "/memories",
            &writer,
            None,
            Some(json!({"content": "x", "namespace": "tenant-b"})),
        ),
        "body",
    );
    forbidden(
        send(
            &s,
            "GET",
            "/memories?namespace=tenant-b",
            &writer,
            None,
            None,
        ),
        "query",
    );
    forbidden(
        send(
            &s,
            "POST",
            "/memories/batch",
            &writer,
            None,
            Some(json!({"memories": [
            {"content": "fine"}, {"content": "smuggled", "namespace": "tenant-b"}]})),
        ),
        "batch item",
    );
    let (st, v) = send(
        &s,
        "GET",
        "/memories?limit=50",
        ADMIN,
        Some("tenant-b"),
        None,
    );
    assert_eq!(
        (st, v["memories"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{v}"
    );
    let (_, v) = send(
        &s,
        "GET",
        "/memories?limit=50",
        ADMIN,
        Some("tenant-a"),
        None,
    );
    assert_eq!(
        v["memories"].as_array().unwrap().len(),
        1,
        "the batch wrote nothing: {v}"
    );

    // Roles: a reader reads, does not write; a writer is not the operator.
    let (st, v) = send(
        &s,
        "POST",
        "/recall",
        &reader,
        None,
        Some(json!({"query": "tea"})),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v.to_string().contains("green tea"), "{v}");
    forbidden(
        send(
            &s,
            "POST",
            "/memories",
            &reader,
            None,
            Some(json!({"content": "y"})),
        ),
        "reader writes",
    );
    forbidden(
        send(&s, "GET", "/export", &writer, None, None),
        "writer exports",
    );
    forbidden(
        send(&s, "POST", "/consolidate", &writer, None, Some(json!({}))),
        "writer consolidates",
    );
    forbidden(
        send(&s, "GET", "/keys", &writer, None, None),
        "writer lists keys",
    );

    // A prefix: any namespace under it, and one must be named.
    let (st, v) = send(
        &s,
        "POST",
        "/memories",
        &team,
        Some("team-x"),
        Some(json!({"content": "Standup at nine"})),
    );
    assert_eq!(st, 201, "{v}");
    forbidden(
        send(
            &s,
            "POST",
            "/memories",
            &team,
            None,
            Some(json!({"content": "z"})),
        ),
        "no namespace named",
    );
    forbidden(
        send(
            &s,
            "POST",
            "/memories",
            &team,
            Some("tenant-a"),
            Some(json!({"content": "z"})),
        ),
        "outside the prefix",
    );

    // MCP: a tool's role and its namespace, as the routes'.
    let post_mcp =
        |key: &str, ns: Option<&str>, body: Value| send(&s, "POST", "/mcp", key, ns, Some(body));
    let (st, v) = post_mcp(&reader, None, mcp("recall", json!({"query": "tea"})));
    assert_eq!(st, 200, "{v}");
    forbidden(
        post_mcp(&reader, None, mcp("forget", json!({"id": "mem_x"}))),
        "MCP reader forgets",
    );
    forbidden(
        post_mcp(
            &writer,
            None,
            mcp("memory_stats", json!({"namespace": "tenant-b"})),
        ),
        "MCP namespace argument",
    );
    forbidden(
        post_mcp(
            &writer,
            Some("tenant-b"),
            mcp("recall", json!({"query": "x"})),
        ),
        "MCP header",
    );
    // A resource's namespace is its URI's; listing namespaces needs a key
    // of every namespace.
    let read = |ns: &str| {
        rpc(
            "resources/read",
            json!({"uri": format!("mnemo://namespaces/{ns}/resume")}),
        )
    };
    forbidden(
        post_mcp(&reader, None, read("tenant-b")),
        "MCP resource of another namespace",
    );
    let (st, v) = post_mcp(&reader, None, read("tenant-a"));
    assert_eq!(st, 200, "{v}");
    let complete = rpc(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "start_session"}, "argument": {"name": "namespace", "value": ""}}),
    );
    forbidden(
        post_mcp(&reader, None, complete),
        "MCP namespace completion",
    );

    // No key, a wrong key: 401. The admin key opens everything.
    let (st, _) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(st, 401);
    let (st, _) = send(&s, "GET", "/stats", "mnemo_0000_nope", None, None);
    assert_eq!(st, 401);
    let (st, _) = send(&s, "GET", "/export", ADMIN, None, None);
    assert_eq!(st, 200);
}

#[test]
fn keys_are_stored_hashed_rotated_revoked_and_made_on_the_command_line() {
    let s = start(Some(ADMIN));
    let key = make_key(&s, "agent", "write", &["tenant-a"]);
    let (st, listed) = send(&s, "GET", "/keys", ADMIN, None, None);
    assert_eq!(st, 200);
    let id = listed[0]["id"].as_str().unwrap().to_string();
    assert!(
        !listed.to_string().contains(&key),
        "a listing shows no secret: {listed}"
    );
    // The store keeps the hash only.
    let db = common::database_in(s.dir(), "m.db");
    let store = mnemo_host::storage::Store::open(std::path::Path::new(&db)).unwrap();
    let meta = store.all_meta().unwrap();
    assert!(meta.iter().any(|(k, _)| k == &format!("api_key:{id}")));
    assert!(
        meta.iter().all(|(_, v)| !v.contains(&key)),
        "the key itself is not stored"
    );

    // Rotation: the old key stops, the new one works, same id and scope.
    let (st, rotated) = send(&s, "POST", &format!("/keys/{id}/rotate"), ADMIN, None, None);
    assert_eq!(st, 200, "{rotated}");
    let fresh = rotated["key"].as_str().unwrap().to_string();
    assert_eq!(rotated["id"], id.as_str());
    std::thread::sleep(std::time::Duration::from_millis(2_100)); // past the lookup cache
    assert_eq!(send(&s, "GET", "/stats", &key, None, None).0, 401);
    assert_eq!(send(&s, "GET", "/stats", &fresh, None, None).0, 200);
    // Revocation: refused; still listed, with the time.
    let (st, revoked) = send(&s, "DELETE", &format!("/keys/{id}"), ADMIN, None, None);
    assert_eq!(st, 200, "{revoked}");
    assert!(revoked["revoked_at"].is_i64());
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    assert_eq!(send(&s, "GET", "/stats", &fresh, None, None).0, 401);
    let (_, listed) = send(&s, "GET", "/keys", ADMIN, None, None);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // Bad input is a typed error.
    let (st, v) = send(
        &s,
        "POST",
        "/keys",
        ADMIN,
        None,
        Some(json!({"name": "x", "role": "root", "namespaces": ["a"]})),
    );
    assert_eq!(st, 422, "{v}");
    let (st, v) = send(
        &s,
        "POST",
        "/keys",
        ADMIN,
        None,
        Some(json!({"name": "x", "role": "read", "namespaces": ["a*b"]})),
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(
        send(&s, "POST", "/keys/nope/rotate", ADMIN, None, None).0,
        404
    );

    // `mnemo keys create` on the store: the running server takes the key.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["--db", &db])
        .args([
            "keys", "create", "--name", "cli", "--role", "read", "-n", "tenant-c", "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli_key = made["key"].as_str().unwrap();
    assert_eq!(send(&s, "GET", "/stats", cli_key, None, None).0, 200);
    forbidden(
        send(&s, "GET", "/stats", cli_key, Some("tenant-a"), None),
        "cli key elsewhere",
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["--db", &db])
        .args(["keys", "revoke", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no key `nope`"));
}
