//! `/consolidate`, `/reflect` and `/audit` (the decision log, and a run of the
//! LLM review).

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mnemo_core::model::*;

use serde_json::json;

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult, parse_or_default};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn decisions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DecisionsArgs>,
) -> ApiResult {
    let ns = namespace_or_all(&headers, q.namespace.clone());
    let filter = q.filter(ns);
    let entries = s
        .engine
        .read(move |m| m.ports().store.decision_log(&filter))
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(json!({ "entries": entries })).into_response())
}

/// One consolidation cycle (`"dry": true` reports without writing), in one
/// transaction: a failure leaves the store as it was. Planned then applied
/// (`engine.rs`): its LLM calls never hold the writer.
pub(in crate::server) async fn consolidate(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: ConsolidateRequest = parse_or_default(&body)?;
    req.namespace = namespace_or_all(&headers, req.namespace.take());
    let report = if req.dry {
        s.engine
            .dry(move |m| m.consolidate_as_configured(req).map_err(ApiError::from))
            .await??
    } else {
        s.engine
            .run_planned(move |m, _| {
                m.consolidate_as_configured(req.clone())
                    .map_err(ApiError::from)
            })
            .await??
    };
    Ok(Json(report).into_response())
}

/// Seed 003's confidence fading now (as the 04:00 task runs it), over the
/// configured layers.
pub(in crate::server) async fn fade(State(s): State<AppState>) -> ApiResult {
    let report = s.engine.run(move |m| m.fade_as_configured()).await??;
    Ok(Json(report).into_response())
}

/// The accurate NER pass now (as the 02:00 task runs it), planned then
/// applied: an LLM provider's calls never hold the writer.
pub(in crate::server) async fn enrich(State(s): State<AppState>, body: Bytes) -> ApiResult {
    let req: EnrichArgs = parse_or_default(&body)?;
    let limit = req.limit();
    let report = s.engine.run_planned(move |m, _| m.enrich(limit)).await??;
    Ok(Json(report).into_response())
}

pub(in crate::server) async fn reflect(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: ReflectArgs = parse_or_default(&body)?;
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let out = s
        .engine
        .run_planned(move |m, _| m.reflect(&ns, req.force))
        .await??;
    let status = if out.memory.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)).into_response())
}

/// Seed 004's LLM audit, mnemo's review: proposals, the review rules' verdicts, what ran.
pub(in crate::server) async fn review(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: ReviewArgs = parse_or_default(&body)?;
    let ns = namespace_or_all(&headers, req.namespace);
    let review =
        move |m: &mut crate::Mnemo| m.review(ns.as_deref(), req.dry).map_err(ApiError::from);
    let report = if req.dry {
        s.engine.dry(review).await??
    } else {
        s.engine.run_planned(move |m, _| review(m)).await??
    };
    Ok(Json(report).into_response())
}
