//! `/resume`, `/topics`, `/topic` and `/triggers`: seed 004's session recovery.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mnemo_core::model::*;

use serde_json::{Value, json};

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult, parse};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn resume(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ResumeArgs>,
) -> ApiResult {
    let req = ResumeRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        hours: q.hours.unwrap_or(0),
        context: q.context,
    };
    let r = s.engine.read(move |m| m.resume(req)).await??;
    Ok(Json(r).into_response())
}

pub(in crate::server) async fn list_topics(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let topics = s.engine.read(move |m| m.topics(&ns, &[])).await??;
    let topics: Vec<Value> = topics
        .into_iter()
        .map(|t| json!({ "id": t.id, "name": t.name, "parent": t.parent, "children": t.children }))
        .collect();
    Ok(Json(json!({ "topics": topics })).into_response())
}

/// Seed 004 `POST /topic`: `{"kb1": {"name", "memories"}, ...}`.
pub(in crate::server) async fn topic(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let req: TopicArgs = parse(&body)?;
    if req.ids.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "`ids` must name at least one topic",
        ));
    }
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let topics = s.engine.read(move |m| m.topics(&ns, &req.ids)).await??;
    let mut out = serde_json::Map::new();
    for t in topics {
        out.insert(
            t.id,
            json!({ "name": t.name, "memories": t.memories, "parent": t.parent, "children": t.children }),
        );
    }
    Ok(Json(Value::Object(out)).into_response())
}

pub(in crate::server) async fn triggers(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let list = s.engine.read(move |m| m.triggers(&ns)).await??;
    let list: Vec<Value> = list
        .into_iter()
        .map(|(name, access)| json!({ "name": name, "access": access }))
        .collect();
    Ok(Json(json!({ "triggers": list })).into_response())
}

/// Memories tagged `trigger:<name>`: what to recall before that action.
pub(in crate::server) async fn trigger_memories(
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
    let list = s.engine.read(move |m| m.list(req)).await??;
    Ok(Json(json!({ "trigger": name, "memories": list })).into_response())
}
