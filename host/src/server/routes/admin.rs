//! `/health`, `/stats`, `/llm-usage`, `/openapi.json`, `/export` and `/import`.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use serde_json::json;

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn health(State(s): State<AppState>) -> ApiResult {
    let (version, integrity, vectors, ann) = s
        .engine
        .read(|m| {
            let version = m.version();
            let store = &m.ports().store;
            (
                version,
                store.integrity(),
                m.vector_state(),
                store.ann_status(),
            )
        })
        .await?;
    // An unreadable store is a 503: the server is up, its data is not.
    let integrity = integrity?;
    Ok(Json(json!({
        "status": "ok",
        "read_only": s.engine.read_only(),
        "core_version": version?,
        "missing_vectors": integrity.missing_vectors,
        "integrity": integrity,
        "vectors": vectors,
        "ann": ann,
    }))
    .into_response())
}

pub(in crate::server) async fn stats(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace_or_all(&headers, q.namespace);
    let stats = s.engine.read(move |m| m.stats(ns.as_deref())).await??;
    let mut v = serde_json::to_value(&stats)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    v["total"] = json!(stats.active);
    Ok(Json(v).into_response())
}

pub(in crate::server) async fn llm_usage(
    State(s): State<AppState>,
    Query(a): Query<UsageArgs>,
) -> ApiResult {
    let limit = a.limit();
    let report = s
        .engine
        .read(move |m| m.usage_report(limit))
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(report).into_response())
}

/// The OpenAPI document of these routes (checked against them in tests/http.rs).
const OPENAPI: &str = include_str!("../openapi.json");

pub(in crate::server) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

pub(in crate::server) async fn export(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ExportArgs>,
) -> ApiResult {
    let ns = namespace_or_all(&headers, q.namespace);
    let body = s
        .engine
        .read(move |m| {
            let mut out = Vec::new();
            crate::transfer::export(m, &mut out, ns.as_deref(), q.vectors).map(|_| out)
        })
        .await?
        .map_err(ApiError::storage)?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

pub(in crate::server) async fn import(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let counts = s
        .engine
        .run(move |m| crate::transfer::import(m, std::io::Cursor::new(body), |_, _| {}))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("{e:#}")))?;
    Ok(Json(counts).into_response())
}
