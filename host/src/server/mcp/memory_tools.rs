//! The memory tools: search and recall, remember, confirm, correct, edit,
//! forget and restore, history and revert, one memory, stats, an entity.
//! Each runs as its HTTP route does (the route is named on each).

use mnemo_core::model::*;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::Extensions;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::{Failure, Json, MnemoMcp, answer, flat, namespace, namespace_or_all, untouched};
use crate::server::args::*;
use crate::server::error::ApiError;
use crate::server::routes::{Entities, History, Written};

/// `search_memory`'s answer: the hits in short form.
#[derive(Serialize, JsonSchema)]
pub(super) struct SearchHits {
    /// Best first.
    hits: Vec<SearchHit>,
    /// What the search could not do (e.g. no vectors yet), if anything.
    warnings: Vec<String>,
}

/// One hit of `search_memory`.
#[derive(Serialize, JsonSchema)]
struct SearchHit {
    /// The memory's or turn's id (`get_memory` reads a memory).
    id: String,
    /// A remembered fact, or a turn of past dialogue.
    #[serde(rename = "type")]
    kind: HitKind,
    /// Its text.
    content: String,
    /// The fused relevance score (higher is better).
    score: f32,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum HitKind {
    Memory,
    Episode,
}

/// Default and largest hit count of `search_memory`.
const SEARCH_LIMIT: u32 = 8;
const SEARCH_LIMIT_MAX: u32 = 50;
/// Linked memories per entity in `get_entity_info` (`GET /entities/{name}`).
const ENTITY_LIMIT: u32 = 20;

#[tool_router(router = memory_tools, vis = "pub(super)")]
impl MnemoMcp {
    /// `POST /recall` with past dialogue included, hits in short form.
    #[tool(
        description = "Hybrid search over remembered facts and past dialogue: the main retrieval tool. Returns each hit's id, type (memory or episode), text and score.",
        title = "Search memory",
        annotations(
            title = "Search memory",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn search_memory(
        &self,
        Parameters(a): Parameters<SearchArgs>,
        ext: Extensions,
    ) -> Result<Json<SearchHits>, Failure> {
        let req = RecallRequest {
            query: a.query,
            namespace: namespace(a.namespace.as_deref(), &ext),
            limit: a.limit.unwrap_or(SEARCH_LIMIT).clamp(1, SEARCH_LIMIT_MAX),
            include_episodes: true,
            ..Default::default()
        };
        let r = flat(
            self.engine
                .read_as(untouched(&ext), move |m| m.recall(req))
                .await,
        );
        answer(r.map(|r| {
            SearchHits {
                hits: r
                    .hits
                    .iter()
                    .map(|h| SearchHit {
                        id: h.item.id().to_string(),
                        kind: match h.item {
                            Item::Memory(_) => HitKind::Memory,
                            Item::Episode(_) => HitKind::Episode,
                        },
                        content: h.item.content().to_string(),
                        score: h.score,
                    })
                    .collect(),
                warnings: r.warnings,
            }
        }))
    }

    /// `POST /recall`.
    #[tool(
        description = "Recall with every option of POST /recall: filters (layers, kinds, tags as a soft boost, time range, source, min_score), token_budget, sort, dry (no reinforcement), episodes, LLM query expansion and rerank; each hit carries its score explanation (channels, ranks, factors).",
        title = "Recall with explanations",
        annotations(
            title = "Recall with explanations",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn recall(
        &self,
        Parameters(mut req): Parameters<RecallRequest>,
        ext: Extensions,
    ) -> Result<Json<RecallResponse>, Failure> {
        req.namespace = namespace(Some(&req.namespace), &ext);
        let untouched = untouched(&ext);
        answer(flat(
            self.engine.read_as(untouched, move |m| m.recall(req)).await,
        ))
    }

    /// `POST /memories`.
    #[tool(
        description = "Save a fact explicitly. A restatement of a known fact reinforces it instead of duplicating it (`created` false, with the dedup reason).",
        title = "Remember a fact",
        annotations(
            title = "Remember a fact",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn remember_fact(
        &self,
        Parameters(mut req): Parameters<RememberRequest>,
        ext: Extensions,
    ) -> Result<Json<Written>, Failure> {
        req.namespace = namespace(Some(&req.namespace), &ext);
        if req.source.is_none() {
            req.source = Some("mcp".into());
        }
        let primed = self.engine.embed_ahead(vec![req.content.clone()]).await;
        let out = flat(
            self.engine
                .run_in(req.namespace.clone(), move |m| {
                    primed.prime(m);
                    m.remember(req)
                })
                .await,
        );
        answer(out.map(Written::from))
    }

    /// `GET /memories/{id}`.
    #[tool(
        description = "One memory by id, with all its fields.",
        title = "Get a memory",
        annotations(title = "Get a memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_memory(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(self.engine.read(move |m| m.get(&ns, &a.id)).await))
    }

    /// `POST /memories/{id}/correct`.
    #[tool(
        description = "Replace a fact with a corrected one: the old one is soft-deleted (restorable) and the new one supersedes it.",
        title = "Correct a fact",
        annotations(
            title = "Correct a fact",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn correct_fact(
        &self,
        Parameters(a): Parameters<CorrectArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = self
            .engine
            .run_in(ns.clone(), move |m| m.correct(&ns, &a.id, &a.content))
            .await;
        answer(flat(out))
    }

    /// `POST /memories/{id}/confirm`.
    #[tool(
        description = "Confirm a fact: it is protected from decay for good.",
        title = "Confirm a fact",
        annotations(
            title = "Confirm a fact",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn confirm_fact(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(
            self.engine
                .run_in(ns.clone(), move |m| m.confirm(&ns, &a.id))
                .await,
        ))
    }

    /// `PATCH /memories/{id}`.
    #[tool(
        description = "Change a memory's text, tags, importance or kind; the earlier state is kept as a version (see `history`, `revert`).",
        title = "Edit a memory",
        annotations(
            title = "Edit a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn edit_memory(
        &self,
        Parameters(a): Parameters<EditArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let patch = MemoryPatch {
            content: a.content,
            tags: a.tags,
            importance: a.importance,
            kind: a.kind,
            attributes: a
                .attributes
                .map(|o| serde_json::Value::Object(o).to_string()),
        };
        let out = self
            .engine
            .run_in(ns.clone(), move |m| m.update(&ns, &a.id, patch))
            .await;
        answer(flat(out))
    }

    /// `DELETE /memories/{id}`.
    #[tool(
        description = "Move a memory to the trash, with a reason. `restore` brings it back.",
        title = "Forget a memory",
        annotations(
            title = "Forget a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget(
        &self,
        Parameters(a): Parameters<ForgetArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let reason = a.reason.unwrap_or_else(|| "forgotten via MCP".into());
        let out = self
            .engine
            .run_in(ns.clone(), move |m| m.delete(&ns, &a.id, &reason))
            .await;
        answer(flat(out))
    }

    /// `POST /memories/{id}/restore`.
    #[tool(
        description = "Bring a memory back from the trash.",
        title = "Restore a memory",
        annotations(
            title = "Restore a memory",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn restore(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(
            self.engine
                .run_in(ns.clone(), move |m| m.restore(&ns, &a.id))
                .await,
        ))
    }

    /// `GET /memories/{id}/history`.
    #[tool(
        description = "A memory as it is now and its earlier states (edits, merges, reverts), oldest first.",
        title = "A memory's history",
        annotations(
            title = "A memory's history",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn history(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ext: Extensions,
    ) -> Result<Json<History>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(
            self.engine.read(move |m| History::of(m, &ns, &a.id)).await,
        ))
    }

    /// `POST /memories/{id}/revert`.
    #[tool(
        description = "Put an earlier version of a memory back (a number from `history`).",
        title = "Revert a memory",
        annotations(
            title = "Revert a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn revert(
        &self,
        Parameters(a): Parameters<RevertArgs>,
        ext: Extensions,
    ) -> Result<Json<Memory>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = self
            .engine
            .run_in(ns.clone(), move |m| m.revert(&ns, &a.id, a.version))
            .await;
        answer(flat(out))
    }

    /// `GET /stats`.
    #[tool(
        description = "Counts by layer and kind, the trash, episodes, entities, the latest record time; for one namespace, or every one when none is given.",
        title = "Memory statistics",
        annotations(
            title = "Memory statistics",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_stats(
        &self,
        Parameters(a): Parameters<NsArgs>,
        ext: Extensions,
    ) -> Result<Json<StoreStats>, Failure> {
        let ns = namespace_or_all(a.namespace, &ext);
        answer(flat(
            self.engine.read(move |m| m.stats(ns.as_deref())).await,
        ))
    }

    /// `GET /entities/{name}`.
    #[tool(
        description = "Everything about a person, place, organisation or project: its profile, facts and linked memories.",
        title = "About an entity",
        annotations(
            title = "About an entity",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_entity_info(
        &self,
        Parameters(a): Parameters<EntityArgs>,
        ext: Extensions,
    ) -> Result<Json<Entities>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let limit = a.limit.unwrap_or(ENTITY_LIMIT);
        let name = a.name.clone();
        let out = flat(
            self.engine
                .read(move |m| m.entity_info(&ns, &name, limit))
                .await,
        );
        answer(out.and_then(|profiles| {
            if profiles.is_empty() {
                return Err(ApiError::new(
                    axum::http::StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no entity named `{}`", a.name),
                ));
            }
            Ok(Entities { entities: profiles })
        }))
    }
}
