//! `/memories` (create, list, get, patch, delete, restore, confirm,
//! correct, history, revert, batch) and `/trash`.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mnemo_core::model::*;

use serde::Deserialize;
use serde_json::json;

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult, parse};

use super::*;

pub(in crate::server) async fn create_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut req: RememberRequest = parse(&body)?;
    req.namespace = namespace(&headers, &req.namespace);
    let primed = s.engine.embed_ahead(vec![req.content.clone()]).await;
    let out = s
        .engine
        .run(move |m| {
            primed.prime(m);
            m.remember(req)
        })
        .await??;
    let status = if out.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(Written::from(out))).into_response())
}

/// A remember's answer (`POST /memories`, MCP's `remember_fact`): the
/// memory and, beside its fields, what the write did.
#[derive(serde::Serialize)]
pub(in crate::server) struct Written {
    #[serde(flatten)]
    memory: Memory,
    created: bool,
    dedup_reason: Option<String>,
    similarity: Option<f32>,
}

impl From<RememberOutcome> for Written {
    fn from(out: RememberOutcome) -> Self {
        Self {
            memory: out.memory,
            created: out.created,
            dedup_reason: out.dedup_reason,
            similarity: out.similarity,
        }
    }
}

/// `GET /memories` and `GET /trash`: comma-separated filters, every one
/// narrowing (`layer=working,core&kind=semantic&tag=project`).
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct ListQuery {
    namespace: Option<String>,
    layer: Option<String>,
    kind: Option<String>,
    tag: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
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
    let list = s.engine.read(move |m| m.list(req)).await??;
    Ok(Json(json!({ "memories": list })).into_response())
}

pub(in crate::server) async fn list_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> ApiResult {
    listing(s, headers, q, false).await
}

pub(in crate::server) async fn trash(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> ApiResult {
    listing(s, headers, q, true).await
}

pub(in crate::server) async fn get_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.read(move |m| m.get(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

pub(in crate::server) async fn update_memory(
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
pub(in crate::server) struct DeleteQuery {
    reason: Option<String>,
}

pub(in crate::server) async fn delete_memory(
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

pub(in crate::server) async fn restore_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.restore(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

/// `GET /memories/{id}/history`: the states edits, merges and reverts
/// replaced, oldest first, and the memory as it is now.
pub(in crate::server) async fn memory_history(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let (memory, versions) = s
        .engine
        .read(move |m| -> Result<_, crate::runtime::CallError> {
            Ok((m.get(&ns, &id)?, m.history(&ns, &id)?))
        })
        .await??;
    Ok(Json(json!({ "memory": memory, "versions": versions })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Revert {
    version: u32,
}

/// `POST /memories/{id}/revert` `{"version": N}`: put version N back; the
/// state it replaces becomes a version too.
pub(in crate::server) async fn revert_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult {
    let Revert { version } = parse(&body)?;
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.revert(&ns, &id, version)).await??;
    Ok(Json(memory).into_response())
}

/// `POST /memories/{id}/confirm`: seed 003's `confirm_fact`.
pub(in crate::server) async fn confirm_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult {
    let ns = namespace(&headers, "");
    let memory = s.engine.run(move |m| m.confirm(&ns, &id)).await??;
    Ok(Json(memory).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Correction {
    content: String,
}

/// `POST /memories/{id}/correct` `{"content"}`: seed 003's `correct_fact`;
/// 201 with the new memory, which supersedes the old one.
pub(in crate::server) async fn correct_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult {
    let Correction { content } = parse(&body)?;
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run(move |m| m.correct(&ns, &id, &content))
        .await??;
    Ok((StatusCode::CREATED, Json(memory)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Batch {
    memories: Vec<RememberRequest>,
}

/// Many memories in one transaction: one invalid item and none is stored.
pub(in crate::server) async fn create_batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut batch: Batch = parse(&body)?;
    for req in &mut batch.memories {
        req.namespace = namespace(&headers, &req.namespace);
    }
    let texts = batch.memories.iter().map(|r| r.content.clone()).collect();
    let primed = s.engine.embed_ahead(texts).await;
    let outcomes = s
        .engine
        .run(move |m| {
            primed.prime(m);
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
