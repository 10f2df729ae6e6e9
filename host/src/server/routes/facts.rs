//! `/facts` (add, query, history, graph, conflicts) and `/entities/{name}`.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use mnemo_core::model::*;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Body, Reply};

use super::*;

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Entities {
    /// Every entity of that name (one per type).
    pub(in crate::server) entities: Vec<EntityProfile>,
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Facts {
    /// The matching facts.
    pub(in crate::server) facts: Vec<Fact>,
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Conflicts {
    /// Pairs of valid facts with one subject and predicate and two objects.
    conflicts: Vec<(Fact, Fact)>,
}

pub(in crate::server) async fn entity_info(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<NsQuery>,
) -> Answer<Entities> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let limit = q.limit.unwrap_or(20);
    let profiles = s
        .engine
        .read(move |m| m.entity_info(&ns, &name, limit))
        .await??;
    if profiles.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such entity",
        ));
    }
    Reply::ok(Entities { entities: profiles })
}

pub(in crate::server) async fn add_fact(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(mut input): Body<FactInput>,
) -> Answer<FactOutcome> {
    input.namespace = namespace(&headers, &input.namespace);
    let out = s
        .engine
        .run_in(input.namespace.clone(), move |m| m.add_fact(input))
        .await??;
    Reply::created(out)
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct FactsQuery {
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    namespace: Option<String>,
    /// Only facts with this subject.
    subject: Option<String>,
    /// Only facts with this predicate.
    predicate: Option<String>,
    /// Only facts with this object.
    object: Option<String>,
    /// Only facts with this entity as subject or object (the graph's start).
    entity: Option<String>,
    /// Facts to return (default: all).
    limit: Option<u32>,
    /// The graph's reach from `entity` (default 2, at most 2).
    hops: Option<u32>,
}

impl FactsQuery {
    fn query(self, headers: &HeaderMap, include_invalid: bool) -> FactQuery {
        FactQuery {
            namespaces: vec![namespace(headers, self.namespace.as_deref().unwrap_or(""))],
            subject: self.subject,
            predicate: self.predicate,
            object: self.object,
            entity: self.entity,
            include_invalid,
            limit: self.limit.unwrap_or(0),
            ..Default::default()
        }
    }
}

pub(in crate::server) async fn query_facts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> Answer<Facts> {
    let q = q.query(&headers, false);
    let facts = s.engine.read(move |m| m.query_facts(q)).await??;
    Reply::ok(Facts { facts })
}

/// Every version of the matching facts, superseded ones included.
pub(in crate::server) async fn fact_history(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> Answer<Facts> {
    if q.subject.is_none() && q.entity.is_none() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "history needs `subject` or `entity`",
        ));
    }
    let q = q.query(&headers, true);
    let facts = s.engine.read(move |m| m.query_facts(q)).await??;
    Reply::ok(Facts { facts })
}

pub(in crate::server) async fn fact_graph(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> Answer<Facts> {
    let Some(entity) = q.entity.clone() else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "the graph needs `entity`",
        ));
    };
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let hops = q.hops.unwrap_or(2);
    let facts = s
        .engine
        .read(move |m| m.fact_graph(&ns, &entity, hops))
        .await??;
    Reply::ok(Facts { facts })
}

pub(in crate::server) async fn fact_conflicts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> Answer<Conflicts> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let pairs = s.engine.read(move |m| m.fact_conflicts(&ns)).await??;
    Reply::ok(Conflicts { conflicts: pairs })
}
