//! The HTTP API (axum). The core instances live on threads of their own
//! (`engine.rs`: the writers — one on a SQLite file, one per group of
//! namespaces on Postgres —, a pool of readers, an embedding worker);
//! handlers send them jobs and await replies, so the async executor never
//! blocks.
//!
//! `mod.rs` holds the router and its layers (auth, body limits, JSON
//! errors) and the scheduler thread; `routes/` the handlers; `error.rs` the
//! JSON error type and the request parsing every handler shares.

mod access;
mod args;
mod console;
mod doc;
mod effects;
mod engine;
mod error;
pub mod json;
pub mod mcp;
mod metrics;
mod reply;
mod routes;
mod stop;
pub mod table;
mod topics;
mod writers;

pub use writers::writer_of;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Config;
use crate::scheduler::{self, Schedule, Ticker};
use anyhow::Context;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use engine::Engines;
use error::ApiError;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Largest body `POST /import` accepts.
pub const MAX_IMPORT_BYTES: usize = 256 * 1024 * 1024;
/// How often the scheduler thread looks at the clock (cron has minutes).
const SCHEDULER_POLL: Duration = Duration::from_secs(10);

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

#[derive(Clone)]
struct AppState {
    engine: Engines,
    api_key: Option<String>,
    /// Request counts and latencies for `/metrics`.
    requests: metrics::Requests,
    /// Scoped keys looked up lately (`access.rs`).
    keys: Arc<access::KeyCache>,
}

pub fn router(engine_config: Config, api_key: Option<String>) -> anyhow::Result<Router> {
    Ok(routes_on(start(engine_config)?, api_key))
}

/// The server's routes on engines of their own, for a program that embeds
/// mnemo (the Python package): it sends requests to [`Embedded::router`]
/// and [`Embedded::close`]s it, which stops every thread and closes the
/// database.
pub struct Embedded {
    router: Router,
    stop: stop::Stop,
}

impl Embedded {
    pub fn open(engine_config: Config) -> anyhow::Result<Self> {
        let engines = start(engine_config)?;
        let stop = engines.stop().clone();
        Ok(Self {
            router: routes_on(engines, None),
            stop,
        })
    }

    /// The routes (a clone is one more handle on the same engines).
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Stops the engines once the requests in flight have their answers,
    /// and waits up to `timeout` for the database to be closed (false if
    /// it was not by then).
    pub fn close(self, timeout: Duration) -> bool {
        self.stop.raise();
        drop(self.router);
        self.stop.wait_closed(timeout)
    }
}

/// The engines (`engine.rs`) and, on a database that can be written, the
/// topic watcher and the scheduler thread: what `mnemo serve` and `mnemo
/// mcp` both run.
fn start(engine_config: Config) -> anyhow::Result<Engines> {
    let schedule = engine_config.schedule.clone();
    let db = engine_config.db_path.clone();
    let (engine, watcher) = Engines::spawn(engine_config)?;
    if let Some(store) = watcher {
        topics::spawn_topic_watcher(store, engine.clone())?;
        spawn_scheduler(engine.clone(), schedule, &db)?;
    }
    Ok(engine)
}

/// The API on running engines: every route, `/mcp`, and the layers.
fn routes_on(engine: Engines, api_key: Option<String>) -> Router {
    let mcp = mcp::http_service(engine.clone(), api_key.is_some());
    let state = AppState {
        engine,
        api_key,
        requests: Default::default(),
        keys: Default::default(),
    };
    table::routes()
        .route("/metrics", axum::routing::get(metrics::metrics))
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::count,
        ))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .layer(middleware::from_fn(namespace_header))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            access::access,
        ))
        .merge(console::routes())
        .layer(middleware::from_fn(declared_length))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn(access_log))
        .with_state(state)
}

pub fn serve(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    // A file-size limit (RLIMIT_FSIZE) reached by a write is an error that
    // write reports ("database or disk is full"), not a signal that kills
    // the server in the middle of every request.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN takes no pointers.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
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
            crate::storage::postgres::redact(&db_path.to_string_lossy())
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

/// One structured log event per request: method, path, status and time
/// taken (`MNEMO_LOG=info` shows them; failures at `warn` for 5xx).
/// The request's span (what `MNEMO_OTLP_ENDPOINT` exports, `traces.rs`)
/// carries the same.
async fn access_log(req: Request, next: Next) -> Response {
    use tracing::Instrument;
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let started = std::time::Instant::now();
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{method} {path}"),
        http.request.method = %method,
        url.path = %path,
        http.response.status_code = tracing::field::Empty,
    );
    let res = next.run(req).instrument(span.clone()).await;
    let (status, ms) = (res.status().as_u16(), started.elapsed().as_millis() as u64);
    span.record("http.response.status_code", status);
    if res.status().is_server_error() {
        tracing::warn!(%method, path, status, ms, "request failed");
    } else {
        tracing::info!(%method, path, status, ms, "request");
    }
    res
}

/// Every failure answers with a JSON error, including the ones axum writes
/// itself as plain text (a query string or path it cannot parse, a method
/// the route lacks, a body over the limit without a declared length).
async fn json_errors(req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_lowercase()
    } else {
        text
    };
    let mut out = ApiError::from_status(status, message).into_response();
    // A 405 still says which methods the route has.
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        out.headers_mut().insert(header::ALLOW, allow.clone());
    }
    out
}

/// Refuses an `X-Namespace` header that breaks the namespace rule (the
/// core's `valid_namespace`) with a 400, for every route and `/mcp`: a
/// header that cannot be read must not fall back to `default` and write
/// there.
async fn namespace_header(req: Request, next: Next) -> Response {
    if let Some(value) = req.headers().get("x-namespace") {
        let checked = value
            .to_str()
            .map_err(|_| "the X-Namespace header is not visible ASCII".to_string())
            .and_then(|ns| mnemo_core::valid_namespace(ns).map_err(|e| e.to_string()));
        if let Err(message) = checked {
            return ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
                .into_response();
        }
    }
    next.run(req).await
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

/// Runs the scheduled tasks as planned writes (rehearsed on the planner,
/// applied on the writer: `engine.rs`): the scheduler thread only watches
/// the clock (`scheduler::Ticker`); `scheduler::run` does and logs the work.
/// On a shared Postgres database a cycle or a reflection goes namespace by
/// namespace, each claimed just before it runs: the servers share them.
fn spawn_scheduler(
    engine: Engines,
    schedule: Schedule,
    db: &std::path::Path,
) -> anyhow::Result<()> {
    if schedule.tasks.is_empty() {
        return Ok(());
    }
    let claims = Arc::new(Mutex::new(scheduler::Claims::open(db)?));
    let mut ticker = Ticker::new(schedule);
    let stop = engine.stop().clone();
    let thread = std::thread::Builder::new()
        .name("mnemo-scheduler".into())
        .spawn(move || {
            let keeper = engine.stop().clone();
            while engine.stop().pause(SCHEDULER_POLL) {
                let now = crate::ledger::now_ms();
                for guard in ticker.tick(now) {
                    let task = guard.task();
                    let slot = now / 60_000;
                    let split = lock(&claims).split(task);
                    if let Some(namespaces) = split {
                        let (engine, claims) = (engine.clone(), Arc::clone(&claims));
                        let by_namespace = std::thread::Builder::new()
                            .name("mnemo-scheduled".into())
                            .spawn(move || {
                                for ns in namespaces {
                                    if !lock(&claims).claim_in(task, &ns, slot) {
                                        continue;
                                    }
                                    let (done, wait) = std::sync::mpsc::channel();
                                    let written = ns.clone();
                                    if !engine.planned(
                                        Some(&written),
                                        scheduled(task, Some(ns)),
                                        move |()| {
                                            let _ = done.send(());
                                        },
                                    ) || wait.recv().is_err()
                                    {
                                        return;
                                    }
                                }
                                drop(guard);
                            });
                        match by_namespace {
                            Ok(thread) => keeper.keep(thread),
                            Err(e) => tracing::warn!(error = %e, "could not start a scheduled run"),
                        }
                        continue;
                    }
                    // Servers sharing a Postgres database run each scheduled
                    // minute of a task once, on the first to claim it.
                    if !lock(&claims).claim(task, slot) {
                        continue;
                    }
                    // The guard lives until the real run is done.
                    if !engine.planned(None, scheduled(task, None), move |()| drop(guard)) {
                        return;
                    }
                }
            }
        })?;
    stop.keep(thread);
    Ok(())
}

/// A scheduled task as a planned write: rehearsed (for its LLM answers),
/// then run.
fn scheduled(task: scheduler::Task, namespace: Option<String>) -> engine::Planned<()> {
    Arc::new(move |m, rehearsal| {
        if rehearsal {
            // Fading asks no LLM: nothing to rehearse.
            if task != scheduler::Task::Fade {
                scheduler::rehearse(m, task, namespace.as_deref());
            }
        } else {
            scheduler::run_in(m, task, namespace.as_deref());
        }
    })
}

/// A mutex's value, whether or not a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
