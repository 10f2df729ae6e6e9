//! `/consolidate`, `/reflect` and `/audit` (the decision log, and a run of the
//! LLM review).

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use mnemo_core::model::*;
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, OptionalBody, Reply};

use super::*;
use crate::server::args::*;

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Decisions {
    /// Newest first.
    pub(in crate::server) entries: Vec<Decision>,
}

pub(in crate::server) async fn decisions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DecisionsArgs>,
) -> Answer<Decisions> {
    let ns = namespace_or_all(&headers, q.namespace.clone());
    let filter = q.filter(ns);
    let entries = s
        .engine
        .read(move |m| m.ports().store.decision_log(&filter))
        .await?
        .map_err(ApiError::storage)?;
    Reply::ok(Decisions { entries })
}

/// One consolidation cycle (`"dry": true` reports without writing), in one
/// transaction: a failure leaves the store as it was. Planned then applied
/// (`engine.rs`): its LLM calls never hold the writer.
pub(in crate::server) async fn consolidate(
    State(s): State<AppState>,
    headers: HeaderMap,
    OptionalBody(mut req): OptionalBody<ConsolidateRequest>,
) -> Answer<ConsolidateReport> {
    req.namespace = namespace_or_all(&headers, req.namespace.take());
    let report = if req.dry {
        s.engine
            .dry(move |m| m.consolidate_as_configured(req).map_err(ApiError::from))
            .await??
    } else {
        s.engine
            .run_planned(req.namespace.clone(), move |m, _| {
                m.consolidate_as_configured(req.clone())
                    .map_err(ApiError::from)
            })
            .await??
    };
    Reply::ok(report)
}

/// Seed 003's confidence fading now (as the 04:00 task runs it), over the
/// configured layers.
pub(in crate::server) async fn fade(State(s): State<AppState>) -> Answer<FadeReport> {
    let report = s.engine.run(move |m| m.fade_as_configured()).await??;
    Reply::ok(report)
}

/// The accurate NER pass now (as the 02:00 task runs it), planned then
/// applied: an LLM provider's calls never hold the writer.
pub(in crate::server) async fn enrich(
    State(s): State<AppState>,
    OptionalBody(req): OptionalBody<EnrichArgs>,
) -> Answer<EnrichReport> {
    let limit = req.limit();
    let report = s
        .engine
        .run_planned(None, move |m, _| m.enrich(limit))
        .await??;
    Reply::ok(report)
}

pub(in crate::server) async fn reflect(
    State(s): State<AppState>,
    headers: HeaderMap,
    OptionalBody(req): OptionalBody<ReflectArgs>,
) -> Answer<ReflectOutcome> {
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let out = s
        .engine
        .run_planned(Some(ns.clone()), move |m, _| m.reflect(&ns, req.force))
        .await??;
    Reply::created_if(out.memory.is_some(), out)
}

/// Seed 004's LLM audit, mnemo's review: proposals, the review rules' verdicts, what ran.
pub(in crate::server) async fn review(
    State(s): State<AppState>,
    headers: HeaderMap,
    OptionalBody(req): OptionalBody<ReviewArgs>,
) -> Answer<ReviewReport> {
    let ns = namespace_or_all(&headers, req.namespace);
    let review =
        move |m: &mut crate::Mnemo| m.review(ns.as_deref(), req.dry).map_err(ApiError::from);
    let report = if req.dry {
        s.engine.dry(review).await??
    } else {
        s.engine.run_planned(None, move |m, _| review(m)).await??
    };
    Reply::ok(report)
}
