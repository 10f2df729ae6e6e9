//! The operator's tools: lists and the trash, the decision log, the LLM
//! usage ledger, export and import, fading and enrichment now. Each runs
//! as its HTTP route does (the route is named on each).

use mnemo_core::model::*;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::Extensions;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::{Failure, Json, MnemoMcp, answer, flat, namespace, namespace_or_all};
use crate::server::args::*;
use crate::server::error::ApiError;
use crate::server::routes::{Decisions, Memories};

/// `export`'s answer.
#[derive(Serialize, JsonSchema)]
pub(super) struct Exported {
    /// The JSON lines `import` (or `POST /import`) reads back.
    jsonl: String,
}

#[tool_router(router = admin_tools, vis = "pub(super)")]
impl MnemoMcp {
    /// `GET /memories` (and `GET /trash` with `deleted`).
    #[tool(
        description = "List memories, newest first, narrowed by layers, kinds and tags (all given must match); `deleted` lists the trash instead.",
        title = "List memories",
        annotations(
            title = "List memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_memories(
        &self,
        Parameters(mut req): Parameters<ListRequest>,
        ext: Extensions,
    ) -> Result<Json<Memories>, Failure> {
        req.namespace = namespace(Some(&req.namespace), &ext);
        let out = flat(self.engine.read(move |m| m.list(req)).await);
        answer(out.map(|memories| Memories { memories }))
    }

    /// `GET /decisions`.
    #[tool(
        description = "The decision log: what the lifecycle, the scheduler and every edit did, with the reason and what was there before; newest first.",
        title = "The decision log",
        annotations(
            title = "The decision log",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn decisions(
        &self,
        Parameters(a): Parameters<DecisionsArgs>,
        ext: Extensions,
    ) -> Result<Json<Decisions>, Failure> {
        let ns = namespace_or_all(a.namespace.clone(), &ext);
        let filter = a.filter(ns);
        let out = self
            .engine
            .read(move |m| m.ports().store.decision_log(&filter))
            .await
            .and_then(|r| r.map_err(ApiError::storage));
        answer(out.map(|entries| Decisions { entries }))
    }

    /// `GET /llm-usage`.
    #[tool(
        description = "The LLM and embedding call ledger: totals per component and model, and the latest calls.",
        title = "LLM usage",
        annotations(title = "LLM usage", read_only_hint = true, open_world_hint = false)
    )]
    async fn llm_usage(
        &self,
        Parameters(a): Parameters<UsageArgs>,
    ) -> Result<Json<crate::ledger::UsageReport>, Failure> {
        let limit = a.limit();
        let out = self
            .engine
            .settled(move |m| m.usage_report(limit))
            .await
            .and_then(|r| r.map_err(ApiError::storage));
        answer(out)
    }

    /// `GET /export`.
    #[tool(
        description = "Export memories, turns, sessions, entities, facts and their history as JSON lines (the text of `export`), for one namespace or every one.",
        title = "Export",
        annotations(title = "Export", read_only_hint = true, open_world_hint = false)
    )]
    async fn export(
        &self,
        Parameters(a): Parameters<ExportArgs>,
        ext: Extensions,
    ) -> Result<Json<Exported>, Failure> {
        let ns = namespace_or_all(a.namespace, &ext);
        let out = self
            .engine
            .read(move |m| {
                let mut out = Vec::new();
                crate::transfer::export(m, &mut out, ns.as_deref(), a.vectors).map(|_| out)
            })
            .await
            .and_then(|r| r.map_err(ApiError::storage));
        answer(out.map(|bytes| Exported {
            jsonl: String::from_utf8_lossy(&bytes).into_owned(),
        }))
    }

    /// `POST /import`.
    #[tool(
        description = "Import JSON lines written by `export` (one transaction: a bad line and nothing is stored); what is already there is kept.",
        title = "Import",
        annotations(
            title = "Import",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn import(
        &self,
        Parameters(a): Parameters<ImportArgs>,
    ) -> Result<Json<crate::transfer::Counts>, Failure> {
        let out = self
            .engine
            .run(move |m| {
                crate::transfer::import(m, std::io::Cursor::new(a.jsonl.into_bytes()), |_, _| {})
            })
            .await
            .and_then(|r| {
                r.map_err(|e| {
                    ApiError::new(
                        axum::http::StatusCode::BAD_REQUEST,
                        "invalid_input",
                        format!("{e:#}"),
                    )
                })
            });
        answer(out)
    }

    /// `POST /fade`.
    #[tool(
        description = "Fade confidence now (the nightly task): memories not used for a while lose confidence; Buffer ones that fall below the floor go to the trash (restorable).",
        title = "Fade confidence now",
        annotations(
            title = "Fade confidence now",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn fade(&self) -> Result<Json<FadeReport>, Failure> {
        answer(flat(self.engine.run(move |m| m.fade_as_configured()).await))
    }

    /// `POST /enrich`.
    #[tool(
        description = "Run the accurate entity recognition pass now (the nightly task) over items not yet enriched.",
        title = "Enrich entities now",
        annotations(
            title = "Enrich entities now",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn enrich(
        &self,
        Parameters(a): Parameters<EnrichArgs>,
    ) -> Result<Json<EnrichReport>, Failure> {
        let limit = a.limit();
        answer(flat(
            self.engine
                .run_planned(None, move |m, _| m.enrich(limit))
                .await,
        ))
    }
}
