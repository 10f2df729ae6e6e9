//! `/health`, `/stats`, `/llm-usage`, `/openapi.json`, `/export` and `/import`.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use mnemo_core::model::StoreStats;
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Ndjson, Reply};

use super::*;
use crate::server::args::*;

/// The server's state.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Health {
    /// `ok` while the store can be read.
    status: &'static str,
    /// The database cannot be written: reads answer, writes are 503.
    read_only: bool,
    /// The core component's version.
    core_version: String,
    /// Memories and turns still without a vector (the backfill embeds them).
    missing_vectors: u64,
    /// Row counts that must agree (rows and their full-text index rows).
    integrity: crate::storage::Integrity,
    /// Whether vector search runs, and on which model.
    vectors: crate::storage::VectorState,
    /// The HNSW index, when one is in use.
    ann: Option<crate::storage::ann::AnnStatus>,
    /// The per-namespace full-text index (this server's, on Postgres).
    text: Option<crate::storage::text::TextStatus>,
    /// The LLM steps: open circuits and the items waiting.
    llm: LlmHealth,
}

pub(in crate::server) async fn health(State(s): State<AppState>) -> Answer<Health> {
    let (version, integrity, vectors, ann, text, llm) = s
        .engine
        .read(|m| {
            let version = m.version();
            let llm = m.llm_status(None);
            let store = &m.ports().store;
            (
                version,
                store.integrity(),
                m.vector_state(),
                store.ann_status(),
                store.text_status(),
                llm,
            )
        })
        .await?;
    // An unreadable store is a 503: the server is up, its data is not.
    let integrity = integrity?;
    Reply::ok(Health {
        status: "ok",
        read_only: s.engine.read_only(),
        core_version: version?,
        missing_vectors: integrity.missing_vectors,
        integrity,
        vectors,
        ann,
        text,
        llm: LlmHealth::of(llm?),
    })
}

/// The store's counts.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Stats {
    #[serde(flatten)]
    stats: StoreStats,
    /// Active memories (round 1's name for `active`).
    total: u64,
}

pub(in crate::server) async fn stats(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> Answer<Stats> {
    let ns = namespace_or_all(&headers, q.namespace);
    let stats = s.engine.read(move |m| m.stats(ns.as_deref())).await??;
    Reply::ok(Stats {
        total: stats.active,
        stats,
    })
}

pub(in crate::server) async fn llm_usage(
    State(s): State<AppState>,
    Query(a): Query<UsageArgs>,
) -> Answer<crate::ledger::UsageReport> {
    let limit = a.limit();
    let report = s
        .engine
        .settled(move |m| m.usage_report(limit))
        .await?
        .map_err(ApiError::storage)?;
    Reply::ok(report)
}

/// The OpenAPI document of these routes (`doc.rs`).
pub(in crate::server) async fn openapi() -> Answer<serde_json::Value> {
    Reply::ok(crate::server::table::document().clone())
}

pub(in crate::server) async fn export(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ExportArgs>,
) -> Result<Ndjson, ApiError> {
    let ns = namespace_or_all(&headers, q.namespace);
    let body = s
        .engine
        .read(move |m| {
            let mut out = Vec::new();
            crate::transfer::export(m, &mut out, ns.as_deref(), q.vectors).map(|_| out)
        })
        .await?
        .map_err(ApiError::storage)?;
    Ok(Ndjson(body))
}

pub(in crate::server) async fn import(
    State(s): State<AppState>,
    body: Bytes,
) -> Answer<crate::transfer::Counts> {
    let counts = s
        .engine
        .run(move |m| crate::transfer::import(m, std::io::Cursor::new(body), |_, _| {}))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("{e:#}")))?;
    Reply::ok(counts)
}
