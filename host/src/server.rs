//! The HTTP API (axum). The engine lives on one dedicated thread (wasmtime
//! stores and SQLite are blocking); handlers send it jobs and await replies,
//! so the async executor never blocks. When idle, that thread embeds rows
//! that have no vector yet, in batches (seed 004: 500 ms batches).

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_host::runtime::CallError;
use mnemo_host::{Config, Mnemo};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Largest body `POST /import` accepts.
pub const MAX_IMPORT_BYTES: usize = 256 * 1024 * 1024;
/// How often the engine thread embeds a batch of rows without vectors.
const BACKFILL_EVERY: Duration = Duration::from_millis(500);
const BACKFILL_BATCH: usize = 64;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to bind (default 127.0.0.1, or MNEMO_HOST). Anything but
    /// loopback exposes your memory: set MNEMO_API_KEY.
    #[arg(long)]
    host: Option<String>,
    /// Port (default 7878, or MNEMO_PORT; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
}

type Job = Box<dyn FnOnce(&mut Mnemo) + Send>;

/// Handle to the engine thread.
#[derive(Clone)]
struct Engine {
    tx: mpsc::Sender<Job>,
}

impl Engine {
    fn spawn(config: Config) -> anyhow::Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new().name("mnemo-engine".into()).spawn(move || {
            let mut mnemo = match Mnemo::open(&config) {
                Ok(m) => {
                    let _ = ready_tx.send(Ok(()));
                    m
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            // Jobs first; every BACKFILL_EVERY, busy or not, one embedding batch.
            let mut last_batch = std::time::Instant::now();
            loop {
                match rx.recv_timeout(BACKFILL_EVERY.saturating_sub(last_batch.elapsed())) {
                    Ok(job) => job(&mut mnemo),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
                if last_batch.elapsed() >= BACKFILL_EVERY {
                    if let Err(e) = mnemo.backfill_vectors(BACKFILL_BATCH) {
                        tracing::warn!(error = %format!("{e:#}"), "embedding backfill failed; will retry");
                    }
                    last_batch = std::time::Instant::now();
                }
            }
        })?;
        ready_rx
            .recv()
            .context("the engine thread died while starting")??;
        Ok(Self { tx })
    }

    /// Seed 003's session-switch trigger: distil the sessions a new one left
    /// open, on the engine thread after the reply (never in the request).
    fn consolidate_sessions_later(&self, namespace: &str, ids: &[String]) {
        let (namespace, ids) = (namespace.to_string(), ids.to_vec());
        let job: Job = Box::new(move |m| {
            let outcome = m.in_transaction(|m| {
                m.consolidate_sessions(&namespace, &ids)
                    .map_err(anyhow::Error::from)
            });
            match outcome {
                Ok(r) => tracing::info!(
                    sessions = r.sessions.len(),
                    facts = r.facts_added,
                    warnings = r.warnings.len(),
                    "consolidated the sessions a new one left open"
                ),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "session consolidation failed; the nightly run retries")
                }
            }
        });
        if self.tx.send(job).is_err() {
            tracing::warn!("the engine stopped before consolidating the open sessions");
        }
    }

    async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Box::new(move |m| {
                let _ = tx.send(f(m));
            }))
            .map_err(|_| ApiError::unavailable("the engine stopped"))?;
        rx.await
            .map_err(|_| ApiError::unavailable("the engine dropped the request"))
    }
}

#[derive(Clone)]
struct AppState {
    engine: Engine,
    api_key: Option<String>,
}

/// A JSON error: `{"error": {"code", "message"}}` with a matching status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
    fn unavailable(m: &str) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "error": { "code": self.code, "message": self.message } })),
        )
            .into_response()
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "storage", format!("{e:#}"))
    }
}

impl From<CallError> for ApiError {
    fn from(e: CallError) -> Self {
        let status = match &e {
            CallError::Core(CoreError::InvalidInput(_)) => StatusCode::BAD_REQUEST,
            CallError::Core(CoreError::NotFound(_)) => StatusCode::NOT_FOUND,
            CallError::Core(CoreError::Conflict(_)) => StatusCode::CONFLICT,
            CallError::Core(
                CoreError::Unavailable(_) | CoreError::Embedding(_) | CoreError::Llm(_),
            ) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let code = match &e {
            CallError::Core(c) => c.code(),
            CallError::Trap(_) => "internal",
        };
        Self::new(status, code, e.to_string())
    }
}

type ApiResult = Result<Response, ApiError>;

/// Parses a JSON body: syntax errors are 400, a body of the wrong shape 422.
fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            "the body is not valid UTF-8",
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!("malformed JSON: {e}"),
        )
    })?;
    serde_json::from_value(value).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            e.to_string(),
        )
    })
}

/// The body's namespace, else the `X-Namespace` header, else `default`.
fn namespace(headers: &HeaderMap, body_ns: &str) -> String {
    if !body_ns.is_empty() {
        return body_ns.to_string();
    }
    headers
        .get("x-namespace")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("default")
        .to_string()
}

/// Constant-time comparison: the time taken does not depend on where the
/// strings differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

/// Refuses a body whose declared length is over the route's limit before
/// reading any of it, with a JSON error (the body limit layer still guards
/// bodies of undeclared length).
async fn declared_length(req: Request, next: Next) -> Response {
    let limit = if req.uri().path() == "/import" {
        MAX_IMPORT_BYTES
    } else {
        MAX_BODY_BYTES
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is over the {limit} byte limit"),
        )
        .into_response();
    }
    next.run(req).await
}

async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(key) = &state.api_key else {
        return next.run(req).await;
    };
    if matches!(req.uri().path(), "/health" | "/openapi.json") {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if same_secret(given.as_bytes(), key.as_bytes()) {
        next.run(req).await
    } else {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token",
        )
        .into_response()
    }
}

/// Runs the scheduled tasks on the engine thread, each at most once at a time,
/// and logs every run (tracing and the audit log) with its outcome.
fn spawn_scheduler(
    engine: Engine,
    schedule: mnemo_host::scheduler::Schedule,
) -> anyhow::Result<()> {
    use mnemo_host::scheduler::Task;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    if schedule.tasks.is_empty() {
        return Ok(());
    }
    let running: Vec<(Task, Arc<AtomicBool>)> = schedule
        .tasks
        .iter()
        .map(|(t, _)| (*t, Arc::new(AtomicBool::new(false))))
        .collect();
    std::thread::Builder::new().name("mnemo-scheduler".into()).spawn(move || {
        let mut last_minute = -1i64;
        loop {
            std::thread::sleep(Duration::from_secs(10));
            let now = mnemo_host::ledger::now_ms();
            if now / 60_000 == last_minute {
                continue;
            }
            last_minute = now / 60_000;
            for task in schedule.due(now) {
                let Some((_, flag)) = running.iter().find(|(t, _)| *t == task) else { continue };
                if flag.swap(true, Ordering::SeqCst) {
                    tracing::warn!(task = task.name(), "still running; this run is skipped");
                    continue;
                }
                let flag = flag.clone();
                let job: Job = Box::new(move |m: &mut Mnemo| {
                    let started = std::time::Instant::now();
                    let outcome = run_task(m, task);
                    tracing::info!(task = task.name(), ms = started.elapsed().as_millis() as u64, %outcome, "scheduled task ran");
                    let entry = AuditEntry {
                        at: mnemo_host::ledger::now_ms(),
                        namespace: "*".into(),
                        action: "scheduled".into(),
                        target_id: task.name().into(),
                        detail: outcome,
                    };
                    if let Err(e) = mnemo_core::ports::Storage::append_audit(&m.ports().store, &entry) {
                        tracing::warn!(error = %e, "could not log the scheduled run");
                    }
                    flag.store(false, Ordering::SeqCst);
                });
                if engine.tx.send(job).is_err() {
                    return;
                }
            }
        }
    })?;
    Ok(())
}

/// One scheduled task on the engine thread; the outcome line it logs.
fn run_task(m: &mut Mnemo, task: mnemo_host::scheduler::Task) -> String {
    use mnemo_host::scheduler::Task;
    let cycle = |m: &mut Mnemo, if_changed: bool| {
        let req = ConsolidateRequest {
            namespace: None,
            dry: false,
            if_changed,
        };
        m.in_transaction(|m| m.consolidate(req).map_err(anyhow::Error::from))
            .map(|r| {
                if r.skipped {
                    "skipped: nothing written since the last cycle".to_string()
                } else {
                    format!(
                        "ok: epoch {}, {} actions, {} sessions, {} facts, {} warnings",
                        r.epoch,
                        r.actions.len(),
                        r.sessions.len(),
                        r.facts_added,
                        r.warnings.len()
                    )
                }
            })
    };
    let outcome: anyhow::Result<String> = match task {
        Task::Enrich => m
            .enrich(0)
            .map(|r| format!("ok: examined {}, linked {}", r.examined, r.linked))
            .map_err(Into::into),
        Task::Decay => m
            .decay()
            .map(|r| format!("ok: decayed {}, to the trash {}", r.decayed, r.pruned))
            .map_err(Into::into),
        Task::Consolidate => cycle(m, false),
        Task::Interval => cycle(m, true),
        Task::Reflect => m.ports().store.namespaces().and_then(|namespaces| {
            let mut written = 0;
            for ns in namespaces {
                if m.reflect(&ns, false)?.memory.is_some() {
                    written += 1;
                }
            }
            Ok(format!("ok: {written} reflections"))
        }),
    };
    outcome.unwrap_or_else(|e| format!("failed: {e:#}"))
}

pub fn router(engine_config: Config, api_key: Option<String>) -> anyhow::Result<Router> {
    let schedule = engine_config.schedule.clone();
    let state = AppState {
        engine: Engine::spawn(engine_config)?,
        api_key,
    };
    spawn_scheduler(state.engine.clone(), schedule)?;
    Ok(Router::new()
        .route("/health", get(health))
        .route("/openapi.json", get(openapi))
        .route("/stats", get(stats))
        .route("/memories", post(create_memory).get(list_memories))
        .route(
            "/memories/{id}",
            get(get_memory).patch(update_memory).delete(delete_memory),
        )
        .route("/memories/{id}/restore", post(restore_memory))
        .route("/trash", get(trash))
        .route("/recall", post(recall))
        .route("/episodes", post(ingest))
        .route("/llm-usage", get(llm_usage))
        .route("/audit", get(audit).post(run_audit))
        .route("/memories/batch", post(create_batch))
        .route("/entities/{name}", get(entity_info))
        .route("/search", get(quick_search))
        .route("/recent", get(recent))
        .route("/resume", get(resume))
        .route("/topics", get(list_topics))
        .route("/topic", post(topic))
        .route("/triggers", get(triggers))
        .route("/triggers/{name}", get(trigger_memories))
        .route("/context", post(context))
        .route("/consolidate", post(consolidate))
        .route("/reflect", post(reflect))
        .route("/facts", post(add_fact).get(query_facts))
        .route("/facts/graph", get(fact_graph))
        .route("/facts/conflicts", get(fact_conflicts))
        .route("/facts/history", get(fact_history))
        .route("/export", get(export))
        .route(
            "/import",
            post(import).layer(DefaultBodyLimit::max(MAX_IMPORT_BYTES)),
        )
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn(declared_length))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state))
}

pub fn serve(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    let api_key = config.api_key.clone();
    let host = args.host.unwrap_or_else(|| config.host.clone());
    let port = args.port.unwrap_or(config.port);
    let addr: SocketAddr = format!("{host}:{port}")
        .parse()
        .with_context(|| format!("`{host}:{port}` is not an address to listen on"))?;
    if !addr.ip().is_loopback() && api_key.is_none() {
        tracing::warn!(
            "listening on {addr} without MNEMO_API_KEY: anyone who can reach it can read your memory"
        );
    }
    let db_path = config.db_path.clone();
    // Opening the database and loading the component block: done before the
    // async runtime starts, never on it.
    let app = router(config, api_key)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        eprintln!(
            "mnemo listening on http://{} (database {})",
            listener.local_addr()?,
            db_path.display()
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

// ---- handlers ---------------------------------------------------------------

async fn health(State(s): State<AppState>) -> ApiResult {
    let (version, integrity, vectors) = s
        .engine
        .run(|m| {
            (
                m.version(),
                m.ports().store.integrity(),
                format!("{:?}", m.vector_state()),
            )
        })
        .await?;
    let integrity = integrity
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage", format!("{e:#}")))?;
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
struct NsQuery {
    namespace: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
}

async fn stats(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = q.namespace.or_else(|| {
        headers
            .get("x-namespace")
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    });
    let stats = s.engine.run(move |m| m.stats(ns.as_deref())).await??;
    let mut v = serde_json::to_value(&stats)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    v["total"] = json!(stats.active);
    Ok(Json(v).into_response())
}

async fn create_memory(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
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

/// Active memories (or the trash), newest first.
async fn listing(s: AppState, headers: HeaderMap, q: NsQuery, deleted: bool) -> ApiResult {
    let req = ListRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        deleted,
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
        ..Default::default()
    };
    let list = s.engine.run(move |m| m.list(req)).await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

async fn list_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    listing(s, headers, q, false).await
}

async fn trash(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    listing(s, headers, q, true).await
}

async fn get_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.get(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

async fn update_memory(
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
struct DeleteQuery {
    reason: Option<String>,
}

async fn delete_memory(
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

async fn restore_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.restore(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

async fn recall(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let mut req: RecallRequest = parse(&body)?;
    req.namespace = namespace(&headers, &req.namespace);
    let res = s.engine.run(move |m| m.recall(req)).await??;
    Ok(Json(res).into_response())
}

async fn ingest(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let mut turn: Turn = parse(&body)?;
    turn.namespace = namespace(&headers, &turn.namespace);
    let out = s.engine.run(move |m| m.ingest(turn)).await??;
    if !out.pending_sessions.is_empty() {
        s.engine
            .consolidate_sessions_later(&out.episode.namespace, &out.pending_sessions);
    }
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

async fn llm_usage(State(s): State<AppState>, Query(q): Query<NsQuery>) -> ApiResult {
    let limit = q.limit.unwrap_or(50);
    let (summary, latest) = s
        .engine
        .run(move |m| {
            let store = &m.ports().store;
            Ok::<_, anyhow::Error>((store.usage_summary()?, store.usage(limit)?))
        })
        .await?
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                format!("{e:#}"),
            )
        })?;
    Ok(Json(json!({ "summary": summary, "latest": latest })).into_response())
}

async fn entity_info(
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

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct ExportQuery {
    namespace: Option<String>,
    vectors: bool,
}

async fn export(State(s): State<AppState>, Query(q): Query<ExportQuery>) -> ApiResult {
    let body = s
        .engine
        .run(move |m| {
            let mut out = Vec::new();
            mnemo_host::transfer::export(m, &mut out, q.namespace.as_deref(), q.vectors)
                .map(|_| out)
        })
        .await?
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                format!("{e:#}"),
            )
        })?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

async fn import(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let counts = s
        .engine
        .run(move |m| mnemo_host::transfer::import(m, std::io::Cursor::new(body), |_| {}))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("{e:#}")))?;
    Ok(Json(counts).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct AuditQuery {
    limit: Option<u32>,
    target: Option<String>,
}

async fn audit(State(s): State<AppState>, Query(q): Query<AuditQuery>) -> ApiResult {
    let entries = s
        .engine
        .run(move |m| {
            m.ports()
                .store
                .audit_log(q.limit.unwrap_or(100), q.target.as_deref())
        })
        .await?
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                format!("{e:#}"),
            )
        })?;
    Ok(Json(json!({ "entries": entries })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    memories: Vec<RememberRequest>,
}

/// Many memories in one transaction: one invalid item and none is stored.
async fn create_batch(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let mut batch: Batch = parse(&body)?;
    for req in &mut batch.memories {
        req.namespace = namespace(&headers, &req.namespace);
    }
    let outcomes = s
        .engine
        .run(move |m| {
            m.in_transaction(|m| -> Result<Vec<RememberOutcome>, ApiError> {
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
struct SearchQuery {
    q: String,
    namespace: Option<String>,
    limit: Option<u32>,
}

/// Quick search: a dry recall (no reinforcement) with a small default limit.
async fn quick_search(
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
struct WindowQuery {
    namespace: Option<String>,
    hours: Option<u32>,
    limit: Option<u32>,
}

async fn recent(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<WindowQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (hours, limit) = (q.hours.unwrap_or(24), q.limit.unwrap_or(50));
    let list = s.engine.run(move |m| m.recent(&ns, hours, limit)).await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

async fn resume(
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

async fn list_topics(
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
struct TopicRequest {
    ids: Vec<String>,
    #[serde(default)]
    namespace: String,
}

/// Seed 004 `POST /topic`: `{"kb1": {"name", "memories"}, ...}`.
async fn topic(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
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

async fn triggers(
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
async fn trigger_memories(
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
struct ContextRequest {
    prompt: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    limit: u32,
}

/// Seed 003 context injection: the markdown block to prepend to a prompt.
async fn context(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
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
async fn consolidate(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let mut req: ConsolidateRequest = if body.is_empty() {
        ConsolidateRequest::default()
    } else {
        parse(&body)?
    };
    if let Some(ns) = headers.get("x-namespace").and_then(|v| v.to_str().ok()) {
        req.namespace.get_or_insert_with(|| ns.to_string());
    }
    let report = s
        .engine
        .run(move |m| m.in_transaction(|m| m.consolidate(req).map_err(ApiError::from)))
        .await??;
    Ok(Json(report).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct ReflectRequest {
    namespace: String,
    force: bool,
}

async fn reflect(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
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

async fn add_fact(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult {
    let mut input: FactInput = parse(&body)?;
    input.namespace = namespace(&headers, &input.namespace);
    let out = s.engine.run(move |m| m.add_fact(input)).await??;
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct FactsQuery {
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

async fn query_facts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
    let q = q.query(&headers, false);
    let facts = s.engine.run(move |m| m.query_facts(q)).await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

/// Every version of the matching facts, superseded ones included.
async fn fact_history(
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

async fn fact_graph(
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

async fn fact_conflicts(
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
struct AuditRunRequest {
    namespace: Option<String>,
    dry: bool,
}

/// Seed 004's LLM audit: proposals, the sandbox's verdicts, what ran.
async fn run_audit(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let req: AuditRunRequest = if body.is_empty() {
        AuditRunRequest::default()
    } else {
        parse(&body)?
    };
    let report = s
        .engine
        .run(move |m| {
            m.in_transaction(|m| {
                m.audit_memories(req.namespace.as_deref(), req.dry)
                    .map_err(ApiError::from)
            })
        })
        .await??;
    Ok(Json(report).into_response())
}
