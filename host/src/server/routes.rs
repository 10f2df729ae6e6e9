//! The route handlers: each parses its input, runs one job on the engine
//! thread and answers JSON. Logic stays in the core; what is here is
//! request shape, namespace and status codes.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mnemo_core::model::*;
use mnemo_host::runtime::CallError;
use mnemo_host::storage::AuditFilter;
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::{ApiError, ApiResult, parse};

/// The `X-Namespace` header, if any.
fn header_namespace(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-namespace").and_then(|v| v.to_str().ok())
}

/// The body's namespace, else the `X-Namespace` header, else `default`.
pub fn namespace(headers: &HeaderMap, body_ns: &str) -> String {
    if !body_ns.is_empty() {
        return body_ns.to_string();
    }
    header_namespace(headers).unwrap_or("default").to_string()
}

/// The given namespace, else the `X-Namespace` header, else none: the
/// operator's reads and runs (stats, audit, export, consolidate) then cover
/// every namespace.
fn namespace_or_all(headers: &HeaderMap, given: Option<String>) -> Option<String> {
    given.or_else(|| header_namespace(headers).map(String::from))
}

pub(super) async fn health(State(s): State<AppState>) -> ApiResult {
    let (version, integrity, vectors) = s
        .engine
        .run(|m| (m.version(), m.ports().store.integrity(), m.vector_state()))
        .await?;
    // An unreadable store is a 503: the server is up, its data is not.
    let integrity = integrity?;
    Ok(Json(json!({
        "status": "ok",
        "core_version": version?,
        "missing_vectors": integrity.missing_vectors,
        "integrity": integrity,
        "vectors": vectors,
    }))
    .into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct NsQuery {
    namespace: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
}

pub(super) async fn stats(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace_or_all(&headers, q.namespace);
    let stats = s.engine.run(move |m| m.stats(ns.as_deref())).await??;
    let mut v = serde_json::to_value(&stats)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    v["total"] = json!(stats.active);
    Ok(Json(v).into_response())
}

pub(super) async fn create_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: RememberRequest = parse(&body)?;
    req.namespace = namespace(&headers, &req.namespace);
    let out = s.engine.run(move |m| m.remember(req)).await??;
    let status = if out.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut v = serde_json::to_value(&out.memory).unwrap_or_default();
    v["created"] = json!(out.created);
    v["dedup_reason"] = json!(out.dedup_reason);
    v["similarity"] = json!(out.similarity);
    Ok((status, Json(v)).into_response())
}

/// `GET /memories` and `GET /trash`: comma-separated filters, every one
/// narrowing (`layer=working,core&kind=semantic&tag=project`).
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct ListQuery {
    namespace: Option<String>,
    layer: Option<String>,
    kind: Option<String>,
    tag: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
}

/// The values of a comma-separated filter.
fn items(list: Option<&str>) -> impl Iterator<Item = &str> {
    list.into_iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The values of a comma-separated filter, each parsed: a bad one is the
/// core's invalid-input error (400), naming the accepted values.
fn parse_items<T: std::str::FromStr<Err = mnemo_core::CoreError>>(
    list: Option<&str>,
) -> Result<Vec<T>, ApiError> {
    items(list)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| ApiError::from(CallError::Core(e)))
}

/// Active memories (or the trash), newest first.
async fn listing(s: AppState, headers: HeaderMap, q: ListQuery, deleted: bool) -> ApiResult {
    let req = ListRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        layers: parse_items(q.layer.as_deref())?,
        kinds: parse_items(q.kind.as_deref())?,
        tags: items(q.tag.as_deref()).map(String::from).collect(),
        deleted,
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
    };
    let list = s.engine.run(move |m| m.list(req)).await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

pub(super) async fn list_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> ApiResult {
    listing(s, headers, q, false).await
}

pub(super) async fn trash(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> ApiResult {
    listing(s, headers, q, true).await
}

pub(super) async fn get_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.get(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

pub(super) async fn update_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult {
    let patch: MemoryPatch = parse(&body)?;
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.update(&ns, &id, patch)).await??;
    Ok(Json(memory).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct DeleteQuery {
    reason: Option<String>,
}

pub(super) async fn delete_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let reason = q.reason.unwrap_or_else(|| "deleted via API".into());
    let memory = s.engine.run(move |m| m.delete(&ns, &id, &reason)).await??;
    Ok(Json(memory).into_response())
}

pub(super) async fn restore_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.restore(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

pub(super) async fn recall(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: RecallRequest = parse(&body)?;
    req.namespace = namespace(&headers, &req.namespace);
    let res = s.engine.run(move |m| m.recall(req)).await??;
    Ok(Json(res).into_response())
}

pub(super) async fn ingest(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut turn: Turn = parse(&body)?;
    turn.namespace = namespace(&headers, &turn.namespace);
    let out = s.engine.run(move |m| m.ingest(turn)).await??;
    if !out.pending_sessions.is_empty() {
        s.engine
            .consolidate_sessions_later(&out.episode.namespace, &out.pending_sessions);
    }
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

// ---- sessions ---------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct SessionsQuery {
    namespace: Option<String>,
    /// Only the sessions not yet consolidated.
    pending: bool,
    limit: Option<u32>,
}

/// The sessions of a namespace, most recently active first.
pub(super) async fn list_sessions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SessionsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (pending, limit) = (q.pending, q.limit.unwrap_or(100));
    let sessions = s
        .engine
        .run(move |m| m.ports().store.sessions(&ns, pending, limit))
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(json!({ "sessions": sessions })).into_response())
}

/// One session and its turns in dialogue order (`offset`, `limit`).
pub(super) async fn get_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(200));
    let (session, episodes) = s
        .engine
        .run(move |m| {
            let store = &m.ports().store;
            Ok::<_, mnemo_core::CoreError>((
                store.get_session(&ns, &id)?,
                store.session_episodes(&ns, &id, offset, limit)?,
            ))
        })
        .await?
        .map_err(ApiError::storage)?;
    let Some(session) = session else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such session",
        ));
    };
    Ok(Json(json!({ "session": session, "episodes": episodes })).into_response())
}

/// Seed 003's session consolidation for one session, now (it is otherwise
/// run when a new session starts, and nightly). A session already
/// consolidated is left alone: the report lists no session.
pub(super) async fn consolidate_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let report = s
        .engine
        .run(move |m| m.consolidate_sessions(&ns, &[id]).map_err(ApiError::from))
        .await??;
    Ok(Json(report).into_response())
}

pub(super) async fn llm_usage(State(s): State<AppState>, Query(q): Query<NsQuery>) -> ApiResult {
    let limit = q.limit.unwrap_or(50);
    let (summary, latest) = s
        .engine
        .run(move |m| {
            let store = &m.ports().store;
            Ok::<_, anyhow::Error>((store.usage_summary()?, store.usage(limit)?))
        })
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(json!({ "summary": summary, "latest": latest })).into_response())
}

pub(super) async fn entity_info(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let limit = q.limit.unwrap_or(20);
    let profiles = s
        .engine
        .run(move |m| m.entity_info(&ns, &name, limit))
        .await??;
    if profiles.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such entity",
        ));
    }
    Ok(Json(json!({ "entities": profiles })).into_response())
}

/// The OpenAPI document of these routes (checked against them in tests/http.rs).
const OPENAPI: &str = include_str!("openapi.json");

pub(super) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct ExportQuery {
    namespace: Option<String>,
    vectors: bool,
}

pub(super) async fn export(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ExportQuery>,
) -> ApiResult {
    let ns = namespace_or_all(&headers, q.namespace);
    let body = s
        .engine
        .run(move |m| {
            let mut out = Vec::new();
            mnemo_host::transfer::export(m, &mut out, ns.as_deref(), q.vectors).map(|_| out)
        })
        .await?
        .map_err(ApiError::storage)?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

pub(super) async fn import(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let counts = s
        .engine
        .run(move |m| mnemo_host::transfer::import(m, std::io::Cursor::new(body), |_, _| {}))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("{e:#}")))?;
    Ok(Json(counts).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct AuditQuery {
    limit: Option<u32>,
    target: Option<String>,
    action: Option<String>,
    namespace: Option<String>,
    since: Option<i64>,
}

pub(super) async fn audit(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<AuditQuery>,
) -> ApiResult {
    let filter = AuditFilter {
        limit: q.limit.unwrap_or(100),
        target: q.target,
        action: q.action,
        namespace: namespace_or_all(&headers, q.namespace),
        since: q.since,
    };
    let entries = s
        .engine
        .run(move |m| m.ports().store.audit_log(&filter))
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(json!({ "entries": entries })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Batch {
    memories: Vec<RememberRequest>,
}

/// Many memories in one transaction: one invalid item and none is stored.
pub(super) async fn create_batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut batch: Batch = parse(&body)?;
    for req in &mut batch.memories {
        req.namespace = namespace(&headers, &req.namespace);
    }
    let outcomes = s
        .engine
        .run(move |m| {
            m.atomically(|m| -> Result<Vec<RememberOutcome>, ApiError> {
                let mut out = Vec::with_capacity(batch.memories.len());
                for (i, req) in batch.memories.into_iter().enumerate() {
                    out.push(m.remember(req).map_err(|e| {
                        let mut err = ApiError::from(e);
                        err.message = format!("memories[{i}]: {}", err.message);
                        err
                    })?);
                }
                Ok(out)
            })
        })
        .await??;
    let created = outcomes.iter().filter(|o| o.created).count();
    Ok((StatusCode::CREATED, Json(json!({ "created": created, "reinforced": outcomes.len() - created, "results": outcomes }))).into_response())
}

// ---- read paths: quick search, recent, resume, topics, triggers, context ----

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct SearchQuery {
    q: String,
    namespace: Option<String>,
    limit: Option<u32>,
}

/// Quick search: a dry recall (no reinforcement) with a small default limit.
pub(super) async fn quick_search(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SearchQuery>,
) -> ApiResult {
    let req = RecallRequest {
        query: q.q,
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        limit: q.limit.unwrap_or(QUICK_SEARCH_LIMIT),
        dry: true,
        ..Default::default()
    };
    let res = s.engine.run(move |m| m.recall(req)).await??;
    Ok(Json(res).into_response())
}

/// Default hit count of `GET /search`.
const QUICK_SEARCH_LIMIT: u32 = 5;

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct WindowQuery {
    namespace: Option<String>,
    hours: Option<u32>,
    limit: Option<u32>,
}

pub(super) async fn recent(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<WindowQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (hours, limit) = (q.hours.unwrap_or(24), q.limit.unwrap_or(50));
    let list = s.engine.run(move |m| m.recent(&ns, hours, limit)).await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

pub(super) async fn resume(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<WindowQuery>,
) -> ApiResult {
    let req = ResumeRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        hours: q.hours.unwrap_or(0),
    };
    let r = s.engine.run(move |m| m.resume(req)).await??;
    Ok(Json(r).into_response())
}

pub(super) async fn list_topics(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let topics = s.engine.run(move |m| m.topics(&ns, &[])).await??;
    let topics: Vec<Value> = topics
        .into_iter()
        .map(|t| json!({ "id": t.id, "name": t.name }))
        .collect();
    Ok(Json(json!({ "topics": topics })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TopicRequest {
    ids: Vec<String>,
    #[serde(default)]
    namespace: String,
}

/// Seed 004 `POST /topic`: `{"kb1": {"name", "memories"}, ...}`.
pub(super) async fn topic(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let req: TopicRequest = parse(&body)?;
    if req.ids.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "`ids` must name at least one topic",
        ));
    }
    let ns = namespace(&headers, &req.namespace);
    let topics = s.engine.run(move |m| m.topics(&ns, &req.ids)).await??;
    let mut out = serde_json::Map::new();
    for t in topics {
        out.insert(t.id, json!({ "name": t.name, "memories": t.memories }));
    }
    Ok(Json(Value::Object(out)).into_response())
}

pub(super) async fn triggers(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let list = s.engine.run(move |m| m.triggers(&ns)).await??;
    let list: Vec<Value> = list
        .into_iter()
        .map(|(name, access)| json!({ "name": name, "access": access }))
        .collect();
    Ok(Json(json!({ "triggers": list })).into_response())
}

/// Memories tagged `trigger:<name>`: what to recall before that action.
pub(super) async fn trigger_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let req = ListRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        tags: vec![format!("trigger:{name}")],
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
        ..Default::default()
    };
    let list = s.engine.run(move |m| m.list(req)).await??;
    Ok(Json(json!({ "trigger": name, "memories": list })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ContextRequest {
    prompt: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    limit: u32,
}

/// Seed 003 context injection: the markdown block to prepend to a prompt.
pub(super) async fn context(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: ContextRequest = parse(&body)?;
    let ns = namespace(&headers, &req.namespace);
    let block = s
        .engine
        .run(move |m| m.context(&ns, &req.prompt, req.session_id.as_deref(), req.limit))
        .await??;
    Ok(Json(block).into_response())
}

// ---- lifecycle: consolidate, reflect ------------------------------------------

/// One consolidation cycle (`"dry": true` reports without writing), in one
/// transaction: a failure leaves the store as it was.
pub(super) async fn consolidate(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: ConsolidateRequest = if body.is_empty() {
        ConsolidateRequest::default()
    } else {
        parse(&body)?
    };
    req.namespace = namespace_or_all(&headers, req.namespace.take());
    let report = s
        .engine
        .run(move |m| m.consolidate(req).map_err(ApiError::from))
        .await??;
    Ok(Json(report).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct ReflectRequest {
    namespace: String,
    force: bool,
}

pub(super) async fn reflect(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: ReflectRequest = if body.is_empty() {
        ReflectRequest::default()
    } else {
        parse(&body)?
    };
    let ns = namespace(&headers, &req.namespace);
    let out = s.engine.run(move |m| m.reflect(&ns, req.force)).await??;
    let status = if out.memory.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)).into_response())
}

// ---- facts ------------------------------------------------------------------

pub(super) async fn add_fact(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut input: FactInput = parse(&body)?;
    input.namespace = namespace(&headers, &input.namespace);
    let out = s.engine.run(move |m| m.add_fact(input)).await??;
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FactsQuery {
    namespace: Option<String>,
    subject: Option<String>,
    predicate: Option<String>,
    object: Option<String>,
    entity: Option<String>,
    limit: Option<u32>,
    hops: Option<u32>,
}

impl FactsQuery {
    fn query(self, headers: &HeaderMap, include_invalid: bool) -> FactQuery {
        FactQuery {
            namespaces: vec![namespace(headers, self.namespace.as_deref().unwrap_or(""))],
            subject: self.subject,
            predicate: self.predicate,
            object: self.object,
            entity: self.entity,
            include_invalid,
            limit: self.limit.unwrap_or(0),
            ..Default::default()
        }
    }
}

pub(super) async fn query_facts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
    let q = q.query(&headers, false);
    let facts = s.engine.run(move |m| m.query_facts(q)).await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

/// Every version of the matching facts, superseded ones included.
pub(super) async fn fact_history(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
    if q.subject.is_none() && q.entity.is_none() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "history needs `subject` or `entity`",
        ));
    }
    let q = q.query(&headers, true);
    let facts = s.engine.run(move |m| m.query_facts(q)).await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

pub(super) async fn fact_graph(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
    let Some(entity) = q.entity.clone() else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "the graph needs `entity`",
        ));
    };
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let hops = q.hops.unwrap_or(2);
    let facts = s
        .engine
        .run(move |m| m.fact_graph(&ns, &entity, hops))
        .await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

pub(super) async fn fact_conflicts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let pairs = s.engine.run(move |m| m.fact_conflicts(&ns)).await??;
    let pairs: Vec<Value> = pairs.into_iter().map(|(a, b)| json!([a, b])).collect();
    Ok(Json(json!({ "conflicts": pairs })).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct AuditRunRequest {
    namespace: Option<String>,
    dry: bool,
}

/// Seed 004's LLM audit: proposals, the sandbox's verdicts, what ran.
pub(super) async fn run_audit(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let req: AuditRunRequest = if body.is_empty() {
        AuditRunRequest::default()
    } else {
        parse(&body)?
    };
    let report = s
        .engine
        .run(move |m| {
            m.review(req.namespace.as_deref(), req.dry)
                .map_err(ApiError::from)
        })
        .await??;
    Ok(Json(report).into_response())
}
