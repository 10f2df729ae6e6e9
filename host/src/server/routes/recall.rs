//! `/recall`, `/search`, `/recent` and `/context`: what an agent reads.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use mnemo_core::model::*;

use serde::Deserialize;
use serde_json::json;

use crate::server::AppState;
use crate::server::error::{ApiResult, parse};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn recall(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: RecallRequest = parse(&body)?;
    req.namespace = namespace(&headers, &req.namespace);
    let res = s.engine.read(move |m| m.recall(req)).await??;
    Ok(Json(res).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct SearchQuery {
    q: String,
    namespace: Option<String>,
    limit: Option<u32>,
}

/// Quick search: a dry recall (no reinforcement) with a small default limit.
pub(in crate::server) async fn quick_search(
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
    let res = s.engine.read(move |m| m.recall(req)).await??;
    Ok(Json(res).into_response())
}

/// Default hit count of `GET /search`.
const QUICK_SEARCH_LIMIT: u32 = 5;

pub(in crate::server) async fn recent(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<RecentArgs>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (hours, limit) = q.window();
    let list = s
        .engine
        .read(move |m| m.recent(&ns, hours, limit))
        .await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

/// Seed 003 context injection: the markdown block to prepend to a prompt.
pub(in crate::server) async fn context(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: ContextArgs = parse(&body)?;
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let block = s
        .engine
        .read(move |m| m.context(&ns, &req.prompt, req.session_id.as_deref(), req.limit))
        .await??;
    Ok(Json(block).into_response())
}
