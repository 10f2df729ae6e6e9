//! `/llm/waiting` and `/llm/retry`: the LLM steps' circuits, the items
//! whose step failed (waiting out a backoff, or parked), and the retry by
//! hand (issue 42; the core's `guard/`).

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use mnemo_core::model::*;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use crate::server::AppState;
use crate::server::reply::{Answer, OptionalBody, Reply};

use super::*;

/// What `/health` says of the LLM steps.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct LlmHealth {
    /// Steps that failed since their last success; `open` ones are skipped
    /// until their cool-down passes and a probe call goes through.
    pub(in crate::server) circuits: Vec<CircuitState>,
    /// Items waiting for a retry, by step.
    pub(in crate::server) waiting: BTreeMap<String, u32>,
    /// Of those, the ones parked until retried by hand.
    pub(in crate::server) parked: u32,
}

impl LlmHealth {
    pub(in crate::server) fn of(state: LlmState) -> Self {
        let mut waiting = BTreeMap::new();
        for w in &state.waiting {
            *waiting.entry(w.step.to_string()).or_insert(0) += 1;
        }
        Self {
            circuits: state.circuits,
            parked: state
                .waiting
                .iter()
                .filter(|w| w.retry_at.is_none())
                .count() as u32,
            waiting,
        }
    }
}

pub(in crate::server) async fn llm_waiting(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> Answer<LlmState> {
    let ns = namespace_or_all(&headers, q.namespace);
    let state = s
        .engine
        .read(move |m| m.llm_status(ns.as_deref()))
        .await??;
    Reply::ok(state)
}

/// Which waiting items to retry.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct RetryRequest {
    /// Namespace (default: the `X-Namespace` header, else every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    namespace: Option<String>,
    /// One item (a session id, a memory id, `pair:<id>:<id>`); default all.
    id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Retried {
    /// Items made due now: the next cycle tries them.
    retried: u32,
}

pub(in crate::server) async fn llm_retry(
    State(s): State<AppState>,
    headers: HeaderMap,
    OptionalBody(req): OptionalBody<RetryRequest>,
) -> Answer<Retried> {
    let ns = namespace_or_all(&headers, req.namespace);
    let id = req.id;
    let retried = s
        .engine
        .run(move |m| m.retry_waiting(ns.as_deref(), id.as_deref()))
        .await??;
    Reply::ok(Retried { retried })
}
