//! `/memories` (create, list, get, patch, delete, restore, confirm,
//! correct, history, revert, batch) and `/trash`.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use mnemo_core::model::*;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Body, Reply};
use crate::storage::Locks;

use super::*;

pub(in crate::server) async fn create_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(mut req): Body<RememberRequest>,
) -> Answer<Written> {
    req.namespace = namespace(&headers, &req.namespace);
    let primed = s.engine.embed_ahead(vec![req.content.clone()]).await;
    let out = s
        .engine
        .run_in(req.namespace.clone(), move |m| {
            primed.prime(m);
            m.remember(req)
        })
        .await??;
    Reply::created_if(out.created, Written::from(out))
}

/// A remember's answer (`POST /memories`, MCP's `remember_fact`): the
/// memory and, beside its fields, what the write did.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Written {
    #[serde(flatten)]
    memory: Memory,
    /// True when a new memory was stored (201); false when it reinforced a
    /// duplicate (200).
    created: bool,
    /// Why it counted as a duplicate (`exact`, `semantic`, ...).
    dedup_reason: Option<String>,
    /// The cosine similarity to the duplicate it reinforced.
    similarity: Option<f32>,
}

/// A page of memories.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Memories {
    /// Newest first.
    pub(in crate::server) memories: Vec<Memory>,
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
#[derive(Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct ListQuery {
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    namespace: Option<String>,
    /// Comma-separated layers: `buffer`, `working`, `core`.
    layer: Option<String>,
    /// Comma-separated kinds: `episodic`, `semantic`, `procedural`.
    kind: Option<String>,
    /// Comma-separated tags; a memory must carry every one.
    tag: Option<String>,
    /// Memories to return (default 50).
    limit: Option<u32>,
    /// Memories to skip (newest first).
    offset: Option<u32>,
}

/// Active memories (or the trash), newest first.
async fn listing(s: AppState, headers: HeaderMap, q: ListQuery, deleted: bool) -> Answer<Memories> {
    let req = ListRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        layers: parse_items(q.layer.as_deref())?,
        kinds: parse_items(q.kind.as_deref())?,
        tags: items(q.tag.as_deref()).map(String::from).collect(),
        deleted,
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
    };
    let memories = s.engine.read(move |m| m.list(req)).await??;
    Reply::ok(Memories { memories })
}

pub(in crate::server) async fn list_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Answer<Memories> {
    listing(s, headers, q, false).await
}

pub(in crate::server) async fn trash(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Answer<Memories> {
    listing(s, headers, q, true).await
}

pub(in crate::server) async fn get_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s.engine.read(move |m| m.get(&ns, &id)).await??;
    Reply::ok(memory)
}

pub(in crate::server) async fn update_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Body(patch): Body<MemoryPatch>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.update(&ns, &id, patch))
        .await??;
    Reply::ok(memory)
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct DeleteQuery {
    /// Why it is deleted (kept with it; default "deleted via API").
    reason: Option<String>,
}

pub(in crate::server) async fn delete_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let reason = q.reason.unwrap_or_else(|| "deleted via API".into());
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.delete(&ns, &id, &reason))
        .await??;
    Reply::ok(memory)
}

pub(in crate::server) async fn restore_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.restore(&ns, &id))
        .await??;
    Reply::ok(memory)
}

/// A memory as it is now and the states it had.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct History {
    /// The memory as it is now.
    memory: Memory,
    /// Oldest first.
    versions: Vec<MemoryVersion>,
}

impl History {
    /// Memory `id` of `ns` as it is now and the states it had (the route,
    /// the MCP tool and the MCP resource answer this).
    pub(in crate::server) fn of(
        m: &mut crate::Mnemo,
        ns: &str,
        id: &str,
    ) -> Result<Self, crate::runtime::CallError> {
        Ok(Self {
            memory: m.get(ns, id)?,
            versions: m.history(ns, id)?,
        })
    }
}

/// `GET /memories/{id}/history`: the states edits, merges and reverts
/// replaced, oldest first, and the memory as it is now.
pub(in crate::server) async fn memory_history(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Answer<History> {
    let ns = namespace(&headers, "");
    Reply::ok(s.engine.read(move |m| History::of(m, &ns, &id)).await??)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Revert {
    /// The version to put back (a `seq` from the history).
    version: u32,
}

/// `POST /memories/{id}/revert` `{"version": N}`: put version N back; the
/// state it replaces becomes a version too.
pub(in crate::server) async fn revert_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Body(Revert { version }): Body<Revert>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.revert(&ns, &id, version))
        .await??;
    Reply::ok(memory)
}

/// `POST /memories/{id}/confirm`: seed 003's `confirm_fact`.
pub(in crate::server) async fn confirm_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.confirm(&ns, &id))
        .await??;
    Reply::ok(memory)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Correction {
    /// The corrected statement; it supersedes the old one.
    content: String,
}

/// `POST /memories/{id}/correct` `{"content"}`: seed 003's `correct_fact`;
/// 201 with the new memory, which supersedes the old one.
pub(in crate::server) async fn correct_memory(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Body(Correction { content }): Body<Correction>,
) -> Answer<Memory> {
    let ns = namespace(&headers, "");
    let memory = s
        .engine
        .run_in(ns.clone(), move |m| m.correct(&ns, &id, &content))
        .await??;
    Reply::created(memory)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct Batch {
    /// What to remember, in order.
    memories: Vec<RememberRequest>,
}

/// What a batch did.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct BatchWritten {
    /// New memories stored.
    created: usize,
    /// Duplicates that reinforced a memory instead.
    reinforced: usize,
    /// Each item's outcome, in order.
    results: Vec<RememberOutcome>,
}

/// Many memories in one transaction: one invalid item and none is stored.
pub(in crate::server) async fn create_batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(mut batch): Body<Batch>,
) -> Answer<BatchWritten> {
    for req in &mut batch.memories {
        req.namespace = namespace(&headers, &req.namespace);
    }
    let texts = batch.memories.iter().map(|r| r.content.clone()).collect();
    let primed = s.engine.embed_ahead(texts).await;
    // On the writer of the first item's namespace (a batch is usually one
    // namespace's); the transaction locks each namespace it writes.
    let first = batch.memories.first().map(|r| r.namespace.clone());
    let outcomes = s
        .engine
        .run_in(first.unwrap_or_default(), move |m| {
            primed.prime(m);
            let locks = Locks::each(batch.memories.iter().map(|r| r.namespace.as_str()));
            m.atomically(locks, |m| -> Result<Vec<RememberOutcome>, ApiError> {
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
    Reply::created(BatchWritten {
        created,
        reinforced: outcomes.len() - created,
        results: outcomes,
    })
}
