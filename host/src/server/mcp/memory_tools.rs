//! The memory tools: search and recall, remember, confirm, correct, edit,
//! forget and restore, history and revert, one memory, stats, an entity.
//! Each runs as its HTTP route does (the route is named on each).

use mnemo_core::model::*;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{ErrorData, tool, tool_router};
use serde_json::json;

use super::{MnemoMcp, answer, flat, namespace, namespace_or_all};
use crate::server::args::*;
use crate::server::error::ApiError;
use crate::server::routes::{Entities, Written};

type Answer = Result<CallToolResult, ErrorData>;

/// Default and largest hit count of `search_memory`.
const SEARCH_LIMIT: u32 = 8;
const SEARCH_LIMIT_MAX: u32 = 50;
/// Linked memories per entity in `get_entity_info` (`GET /entities/{name}`).
const ENTITY_LIMIT: u32 = 20;

#[tool_router(router = memory_tools, vis = "pub(super)")]
impl MnemoMcp {
    /// `POST /recall` with past dialogue included, hits in short form.
    #[tool(
        description = "Hybrid search over remembered facts and past dialogue: the main retrieval tool. Returns each hit's id, type (memory or episode), text and score."
    )]
    async fn search_memory(
        &self,
        Parameters(a): Parameters<SearchArgs>,
        ext: Extensions,
    ) -> Answer {
        let req = RecallRequest {
            query: a.query,
            namespace: namespace(a.namespace.as_deref(), &ext),
            limit: a.limit.unwrap_or(SEARCH_LIMIT).clamp(1, SEARCH_LIMIT_MAX),
            include_episodes: true,
            ..Default::default()
        };
        let r = flat(self.engine.read(move |m| m.recall(req)).await);
        answer(r.map(|r| {
            let hits: Vec<_> = r
                .hits
                .iter()
                .map(|h| {
                    json!({
                        "id": h.item.id(),
                        "type": match h.item { Item::Memory(_) => "memory", Item::Episode(_) => "episode" },
                        "content": h.item.content(),
                        "score": h.score,
                    })
                })
                .collect();
            json!({ "hits": hits, "warnings": r.warnings })
        }))
    }

    /// `POST /recall`.
    #[tool(
        description = "Recall with every option of POST /recall: filters (layers, kinds, tags as a soft boost, time range, source, min_score), token_budget, sort, dry (no reinforcement), episodes, LLM query expansion and rerank; each hit carries its score explanation (channels, ranks, factors)."
    )]
    async fn recall(
        &self,
        Parameters(mut req): Parameters<RecallRequest>,
        ext: Extensions,
    ) -> Answer {
        req.namespace = namespace(Some(&req.namespace), &ext);
        answer(flat(self.engine.read(move |m| m.recall(req)).await))
    }

    /// `POST /memories`.
    #[tool(
        description = "Save a fact explicitly. A restatement of a known fact reinforces it instead of duplicating it (`created` false, with the dedup reason)."
    )]
    async fn remember_fact(
        &self,
        Parameters(mut req): Parameters<RememberRequest>,
        ext: Extensions,
    ) -> Answer {
        req.namespace = namespace(Some(&req.namespace), &ext);
        if req.source.is_none() {
            req.source = Some("mcp".into());
        }
        let primed = self.engine.embed_ahead(vec![req.content.clone()]).await;
        let out = flat(
            self.engine
                .run(move |m| {
                    primed.prime(m);
                    m.remember(req)
                })
                .await,
        );
        answer(out.map(Written::from))
    }

    /// `GET /memories/{id}`.
    #[tool(description = "One memory by id, with all its fields.")]
    async fn get_memory(&self, Parameters(a): Parameters<IdArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(self.engine.read(move |m| m.get(&ns, &a.id)).await))
    }

    /// `POST /memories/{id}/correct`.
    #[tool(
        description = "Replace a fact with a corrected one: the old one is soft-deleted (restorable) and the new one supersedes it."
    )]
    async fn correct_fact(
        &self,
        Parameters(a): Parameters<CorrectArgs>,
        ext: Extensions,
    ) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = self
            .engine
            .run(move |m| m.correct(&ns, &a.id, &a.content))
            .await;
        answer(flat(out))
    }

    /// `POST /memories/{id}/confirm`.
    #[tool(description = "Confirm a fact: it is protected from decay for good.")]
    async fn confirm_fact(&self, Parameters(a): Parameters<IdArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(self.engine.run(move |m| m.confirm(&ns, &a.id)).await))
    }

    /// `PATCH /memories/{id}`.
    #[tool(
        description = "Change a memory's text, tags, importance or kind; the earlier state is kept as a version (see `history`, `revert`)."
    )]
    async fn edit_memory(&self, Parameters(a): Parameters<EditArgs>, ext: Extensions) -> Answer {
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
        let out = self.engine.run(move |m| m.update(&ns, &a.id, patch)).await;
        answer(flat(out))
    }

    /// `DELETE /memories/{id}`.
    #[tool(description = "Move a memory to the trash, with a reason. `restore` brings it back.")]
    async fn forget(&self, Parameters(a): Parameters<ForgetArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let reason = a.reason.unwrap_or_else(|| "forgotten via MCP".into());
        let out = self
            .engine
            .run(move |m| m.delete(&ns, &a.id, &reason))
            .await;
        answer(flat(out))
    }

    /// `POST /memories/{id}/restore`.
    #[tool(description = "Bring a memory back from the trash.")]
    async fn restore(&self, Parameters(a): Parameters<IdArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        answer(flat(self.engine.run(move |m| m.restore(&ns, &a.id)).await))
    }

    /// `GET /memories/{id}/history`.
    #[tool(description = "A memory's earlier states (edits, merges, reverts), oldest first.")]
    async fn history(&self, Parameters(a): Parameters<IdArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = flat(self.engine.read(move |m| m.history(&ns, &a.id)).await);
        answer(out.map(|versions| json!({ "versions": versions })))
    }

    /// `POST /memories/{id}/revert`.
    #[tool(description = "Put an earlier version of a memory back (a number from `history`).")]
    async fn revert(&self, Parameters(a): Parameters<RevertArgs>, ext: Extensions) -> Answer {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = self
            .engine
            .run(move |m| m.revert(&ns, &a.id, a.version))
            .await;
        answer(flat(out))
    }

    /// `GET /stats`.
    #[tool(
        description = "Counts by layer and kind, the trash, episodes, entities, the latest record time; for one namespace, or every one when none is given."
    )]
    async fn memory_stats(&self, Parameters(a): Parameters<NsArgs>, ext: Extensions) -> Answer {
        let ns = namespace_or_all(a.namespace, &ext);
        answer(flat(
            self.engine.read(move |m| m.stats(ns.as_deref())).await,
        ))
    }

    /// `GET /entities/{name}`.
    #[tool(
        description = "Everything about a person, place, organisation or project: its profile, facts and linked memories."
    )]
    async fn get_entity_info(
        &self,
        Parameters(a): Parameters<EntityArgs>,
        ext: Extensions,
    ) -> Answer {
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
