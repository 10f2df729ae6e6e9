//! `/recall`, `/search`, `/recent` and `/context`: what an agent reads.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use mnemo_core::model::*;

use serde::Deserialize;

use crate::server::AppState;
use crate::server::reply::{Answer, Body, Reply};
use rmcp::schemars::{self, JsonSchema};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn recall(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(mut req): Body<RecallRequest>,
) -> Answer<RecallResponse> {
    req.namespace = namespace(&headers, &req.namespace);
    let untouched = crate::server::access::untouched(&headers);
    let res = s
        .engine
        .read_as(untouched, move |m| m.recall(req))
        .await??;
    Reply::ok(res)
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct SearchQuery {
    /// What to look for.
    #[schemars(pattern(r"\S"))]
    q: String,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    namespace: Option<String>,
    /// Hits to return (default 5).
    limit: Option<u32>,
}

/// Quick search: a dry recall (no reinforcement) with a small default limit.
pub(in crate::server) async fn quick_search(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SearchQuery>,
) -> Answer<RecallResponse> {
    let req = RecallRequest {
        query: q.q,
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        limit: q.limit.unwrap_or(QUICK_SEARCH_LIMIT),
        dry: true,
        ..Default::default()
    };
    let res = s.engine.read(move |m| m.recall(req)).await??;
    Reply::ok(res)
}

/// Default hit count of `GET /search`.
const QUICK_SEARCH_LIMIT: u32 = 5;

pub(in crate::server) async fn recent(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<RecentArgs>,
) -> Answer<Memories> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (hours, limit) = q.window();
    let memories = s
        .engine
        .read(move |m| m.recent(&ns, hours, limit))
        .await??;
    Reply::ok(Memories { memories })
}

/// Seed 003 context injection: the markdown block to prepend to a prompt.
pub(in crate::server) async fn context(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(req): Body<ContextArgs>,
) -> Answer<ContextBlock> {
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let untouched = crate::server::access::untouched(&headers);
    let block = s
        .engine
        .read_as(untouched, move |m| {
            m.context(&ns, &req.prompt, req.session_id.as_deref(), req.limit)
        })
        .await??;
    Reply::ok(block)
}
