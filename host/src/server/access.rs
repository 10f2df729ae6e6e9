//! Who may do what (issue 43): the layer in front of every route and
//! `/mcp` that checks the bearer key, its role and its namespaces.
//!
//! - No key at all is asked while the server has no `MNEMO_API_KEY` and
//!   the store no scoped key (`keys.rs`): local use stays open.
//! - `MNEMO_API_KEY` is an admin key of every namespace.
//! - A scoped key's role must reach the route's ([`route_role`]: reads,
//!   writes, the operator's routes; an MCP call by its tool).
//! - Every namespace the request names — the `X-Namespace` header, the
//!   `namespace` query parameter, any `namespace` in its JSON body (an MCP
//!   tool's arguments, a batch's items) — must be in the key's scope (for
//!   a write, the namespaces it writes; for a read, those and the ones it
//!   only reads), else 403 and nothing is read or written. A request that
//!   names none, or an empty one, means the key's one namespace (set as its
//!   `X-Namespace`, so no route falls back to `default`); a key of several
//!   must name one.
//! - A read by a key that may not write every namespace it names is marked
//!   [`UNTOUCHED`]: its accesses and renewals are not recorded (a touch is
//!   a write, issue 77). What a named namespace shows besides itself (a
//!   shared `default`, a sharing group) is the core's rule (`sharing.rs`).
//!
//! Keys are looked up in the store at most every `KEY_CACHE` per key, so a
//! revocation reaches every server within that time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::ApiError;
use super::{AppState, MAX_BODY_BYTES, MAX_IMPORT_BYTES, doc, lock};
use crate::keys::{self, KeyRecord, Role, same_secret};

/// The header the key check sets on a read whose key may not write the
/// namespace: the handler runs it with its touches forgotten. A client's
/// own is removed first.
pub(super) const UNTOUCHED: &str = "x-mnemo-untouched";

/// Whether the key check marked this request [`UNTOUCHED`].
pub(super) fn untouched(headers: &axum::http::HeaderMap) -> bool {
    headers.contains_key(UNTOUCHED)
}

impl super::engine::Engines {
    /// [`Engines::read`](super::engine::Engines::read) for a request marked
    /// [`UNTOUCHED`]: the accesses and renewals the read causes are
    /// forgotten on the reader (a touch is a write, issue 77).
    pub(super) async fn read_as<R: Send + 'static>(
        &self,
        untouched: bool,
        f: impl FnOnce(&mut crate::Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        self.read(move |m| {
            let out = f(m);
            if untouched {
                m.ports().store.forget_touches();
            }
            out
        })
        .await
    }
}

/// How long a key's lookup (and whether the store has any key) is reused.
const KEY_CACHE: Duration = Duration::from_secs(2);

/// Routes of the operator (`admin`): what spans tenants or runs the
/// store's lifecycle.
const ADMIN_ROUTES: &[(&str, &str)] = &[
    ("GET", "/export"),
    ("POST", "/import"),
    ("POST", "/review"),
    ("GET", "/audit"),
    ("POST", "/audit"),
    ("GET", "/decisions"),
    ("POST", "/consolidate"),
    ("GET", "/llm-usage"),
    ("GET", "/llm/waiting"),
    ("POST", "/llm/retry"),
    ("POST", "/fade"),
    ("POST", "/enrich"),
    ("GET", "/metrics"),
    ("GET", "/keys"),
    ("POST", "/keys"),
    ("POST", "/keys/{id}/rotate"),
    ("DELETE", "/keys/{id}"),
];
/// `POST` routes that only read (their effects — an access counted, a
/// renewal — are a read's).
const READ_POSTS: &[&str] = &["/recall", "/context", "/topic"];
/// MCP tools by role; a tool in neither list is the operator's.
const MCP_READ: &[&str] = &[
    "search_memory",
    "recall",
    "get_memory",
    "history",
    "list_memories",
    "memory_stats",
    "get_entity_info",
    "context",
    "resume",
    "topics",
    "topic",
    "triggers",
    "recent",
    "sessions",
    "query_facts",
    "fact_graph",
];
const MCP_WRITE: &[&str] = &[
    "remember_fact",
    "correct_fact",
    "confirm_fact",
    "edit_memory",
    "forget",
    "restore",
    "revert",
    "ingest_turn",
    "reflect",
    "add_fact",
];

/// The keys looked up lately.
#[derive(Default)]
pub(super) struct KeyCache {
    by_hash: Mutex<HashMap<String, (Instant, Option<KeyRecord>)>>,
    any: Mutex<Option<(Instant, bool)>>,
}

fn refuse(status: StatusCode, code: &'static str, message: String) -> Response {
    ApiError::new(status, code, message).into_response()
}

/// The layer.
pub(super) async fn access(State(s): State<AppState>, mut req: Request, next: Next) -> Response {
    req.headers_mut().remove(UNTOUCHED);
    if doc::PUBLIC.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    if let Some(admin) = &s.api_key
        && same_secret(given.as_bytes(), admin.as_bytes())
    {
        return next.run(req).await;
    }
    let record = match lookup(&s, &given).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let Some(record) = record else {
        // Without any key configured the server is open, as before keys.
        if s.api_key.is_none() && matches!(any_keys(&s).await, Ok(false)) {
            return next.run(req).await;
        }
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing, wrong or revoked bearer token".into(),
        );
    };
    match admit(&record, req).await {
        Ok(req) => next.run(req).await,
        Err(refusal) => refusal,
    }
}

/// The key `token` names, from the cache or the store.
async fn lookup(s: &AppState, token: &str) -> Result<Option<KeyRecord>, ApiError> {
    if keys::id_of(token).is_none() {
        return Ok(None);
    }
    let cache_key = keys::hash(token);
    if let Some((at, r)) = lock(&s.keys.by_hash).get(&cache_key)
        && at.elapsed() < KEY_CACHE
    {
        return Ok(r.clone());
    }
    let owned = token.to_string();
    let found = s
        .engine
        .read(move |m| keys::verify(&m.ports().store, &owned))
        .await?
        .map_err(ApiError::storage)?;
    let mut cache = lock(&s.keys.by_hash);
    // Wrong keys are remembered too (a flood of them costs no lookups), so
    // the expired are dropped as new ones come: the cache stays small.
    cache.retain(|_, (at, _)| at.elapsed() < KEY_CACHE);
    cache.insert(cache_key, (Instant::now(), found.clone()));
    Ok(found)
}

/// Whether the store holds any key (then every request needs one).
async fn any_keys(s: &AppState) -> Result<bool, ApiError> {
    if let Some((at, any)) = *lock(&s.keys.any)
        && at.elapsed() < KEY_CACHE
    {
        return Ok(any);
    }
    let any = s
        .engine
        .read(|m| keys::any(&m.ports().store))
        .await?
        .map_err(ApiError::storage)?;
    *lock(&s.keys.any) = Some((Instant::now(), any));
    Ok(any)
}

/// The request, if key `who` may make it (with its namespace set when it
/// named none); else the refusal.
async fn admit(who: &KeyRecord, req: Request) -> Result<Request, Response> {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let method = req.method().clone();
    let (mut parts, body) = req.into_parts();
    let limit = if route == "/import" {
        MAX_IMPORT_BYTES
    } else {
        MAX_BODY_BYTES
    };
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is over the {limit} byte limit"),
        )
    })?;
    let json = parse(&bytes);
    let needed = route_role(&method, &route, &json);
    if who.role < needed {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "this key's role is {}; {method} {route} needs {}",
                who.role.name(),
                needed.name()
            ),
        ));
    }
    // The keys, and the metrics (whose labels name every tenant's
    // namespaces), are the whole store's.
    let store_wide = match route.as_str() {
        r if r.starts_with("/keys") => Some("manages keys"),
        "/metrics" => Some("reads the store-wide metrics"),
        _ => None,
    };
    if let Some(what) = store_wide
        && !who.namespaces.is_all()
    {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("only a key of every namespace {what}"),
        ));
    }
    let mut named: Vec<String> = Vec::new();
    if let Some(h) = parts
        .headers
        .get("x-namespace")
        .and_then(|v| v.to_str().ok())
    {
        named.push(h.trim().to_string());
    }
    if let Some(q) = parts.uri.query() {
        named.extend(
            url::form_urlencoded::parse(q.as_bytes())
                .filter(|(k, _)| k == "namespace")
                .map(|(_, v)| v.trim().to_string()),
        );
    }
    for value in &json {
        collect_namespaces(value, &mut named);
    }
    named.retain(|ns| !ns.is_empty());
    if !who.namespaces.is_all() {
        if json.iter().any(completes_namespaces) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden",
                "only a key of every namespace may list the namespaces".into(),
            ));
        }
        let reach = |ns: &str| match needed {
            Role::Read => who.may_read(ns),
            _ => who.namespaces.allows(ns),
        };
        if let Some(outside) = named.iter().find(|ns| !reach(ns)) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "this key may not {} namespace `{outside}`",
                    match needed {
                        Role::Read => "read",
                        _ => "write",
                    }
                ),
            ));
        }
        if named.is_empty() {
            let Some(only) = who.namespaces.single() else {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "this key covers several namespaces: name one with the X-Namespace header"
                        .into(),
                ));
            };
            if let Ok(v) = HeaderValue::from_str(only) {
                parts.headers.insert("x-namespace", v);
            }
            named.push(only.to_string());
        }
    }
    // The admin key of every namespace writes them all; a read by another
    // that cannot write what it names changes nothing there.
    let writes_all = match named.as_slice() {
        [] => who.may_write("default"),
        named => named.iter().all(|ns| who.may_write(ns)),
    };
    if needed == Role::Read && !writes_all {
        parts
            .headers
            .insert(UNTOUCHED, HeaderValue::from_static("1"));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The body as JSON values: one document, or one per line (an import).
fn parse(bytes: &Bytes) -> Vec<Value> {
    if bytes.is_empty() {
        return Vec::new();
    }
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return vec![v];
    }
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .collect()
}

/// Every string under a `namespace` key, and the namespace of every
/// `mnemo://` resource URI an MCP message names (a read's `uri`, a
/// listen's `resourceSubscriptions`), at any depth. Only those fields: a
/// memory whose text quotes a URI names no namespace. A template's
/// `{namespace}` is not one.
fn collect_namespaces(v: &Value, out: &mut Vec<String>) {
    let uri = |u: &Value, out: &mut Vec<String>| {
        if let Some(ns) = u
            .as_str()
            .filter(|u| !u.contains('{'))
            .and_then(super::mcp::resources::namespace_of)
        {
            out.push(ns.trim().to_string());
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("namespace", Value::String(ns)) => out.push(ns.trim().to_string()),
                    ("uri", u) => uri(u, out),
                    ("resourceSubscriptions", Value::Array(us)) => {
                        us.iter().for_each(|u| uri(u, out))
                    }
                    _ => collect_namespaces(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_namespaces(v, out)),
        _ => {}
    }
}

/// The role a request needs: the operator's routes `admin`; reads (`GET`,
/// and the `POST`s that only read) `read`; other writes `write`; an MCP
/// message by the tools it calls.
pub fn route_role(method: &Method, route: &str, body: &[Value]) -> Role {
    if ADMIN_ROUTES
        .iter()
        .any(|(m, r)| *m == method.as_str() && *r == route)
    {
        return Role::Admin;
    }
    if route == "/mcp" || route.starts_with("/mcp/") {
        return body.iter().map(mcp_role).max().unwrap_or(Role::Read);
    }
    if *method == Method::GET || (*method == Method::POST && READ_POSTS.contains(&route)) {
        Role::Read
    } else {
        Role::Write
    }
}

/// An MCP completion of a `namespace` argument: it lists the store's
/// namespaces.
fn completes_namespaces(message: &Value) -> bool {
    if let Value::Array(batch) = message {
        return batch.iter().any(completes_namespaces);
    }
    message["method"] == "completion/complete"
        && message["params"]["argument"]["name"] == "namespace"
}

/// An MCP message's role: a tool call's tool, everything else a read.
fn mcp_role(message: &Value) -> Role {
    if let Value::Array(batch) = message {
        return batch.iter().map(mcp_role).max().unwrap_or(Role::Read);
    }
    if message["method"] != "tools/call" {
        return Role::Read;
    }
    let tool = message["params"]["name"].as_str().unwrap_or("");
    if MCP_READ.contains(&tool) {
        Role::Read
    } else if MCP_WRITE.contains(&tool) {
        Role::Write
    } else {
        Role::Admin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every admin route is a route of the table (or `/metrics`); nothing
    /// listed is stale.
    #[test]
    fn the_role_lists_name_real_routes() {
        for (method, path) in ADMIN_ROUTES {
            let routed = super::super::table::ROUTES
                .iter()
                .any(|(p, ms)| p == path && ms.contains(&method.to_lowercase().as_str()));
            assert!(routed || *path == "/metrics", "{method} {path}");
        }
        for path in READ_POSTS {
            assert!(
                super::super::table::ROUTES
                    .iter()
                    .any(|(p, ms)| p == path && ms.contains(&"post"))
            );
        }
        let call =
            |tool: &str| serde_json::json!({"method": "tools/call", "params": {"name": tool}});
        assert_eq!(
            route_role(&Method::POST, "/mcp", &[call("recall")]),
            Role::Read
        );
        assert_eq!(
            route_role(&Method::POST, "/mcp", &[call("forget")]),
            Role::Write
        );
        assert_eq!(
            route_role(&Method::POST, "/mcp", &[call("export")]),
            Role::Admin
        );
        assert_eq!(route_role(&Method::POST, "/recall", &[]), Role::Read);
        assert_eq!(route_role(&Method::POST, "/memories", &[]), Role::Write);
        assert_eq!(route_role(&Method::GET, "/export", &[]), Role::Admin);
    }

    /// An MCP resource's namespace is the URI's: a key scoped elsewhere
    /// cannot read or subscribe to it; a template's `{namespace}` is not one.
    #[test]
    fn resource_uris_name_their_namespace() {
        let mut named = Vec::new();
        let read = serde_json::json!({"method": "resources/read", "params": {"uri": "mnemo://namespaces/alice/resume"}});
        let listen = serde_json::json!({"method": "subscriptions/listen", "params": {"filter": {"resourceSubscriptions": ["mnemo://namespaces/bob/core"]}}});
        let template = serde_json::json!({"params": {"ref": {"type": "ref/resource", "uri": "mnemo://namespaces/{namespace}/topics/{id}"}}});
        let quoted = serde_json::json!({"method": "tools/call", "params": {"name": "remember_fact", "arguments": {"content": "see mnemo://namespaces/carol/resume"}}});
        for v in [read, listen, template, quoted] {
            collect_namespaces(&v, &mut named);
        }
        assert_eq!(named, ["alice", "bob"]);
        let complete = |arg: &str| serde_json::json!({"method": "completion/complete", "params": {"argument": {"name": arg, "value": ""}}});
        assert!(completes_namespaces(&complete("namespace")));
        assert!(!completes_namespaces(&complete("topic")));
    }
}
