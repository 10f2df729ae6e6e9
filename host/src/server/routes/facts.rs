//! `/facts` (add, query, history, graph, conflicts) and `/entities/{name}`.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mnemo_core::model::*;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult, parse};

use super::*;

pub(in crate::server) async fn entity_info(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
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
    Ok(Json(json!({ "entities": profiles })).into_response())
}

pub(in crate::server) async fn add_fact(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut input: FactInput = parse(&body)?;
    input.namespace = namespace(&headers, &input.namespace);
    let out = s.engine.run(move |m| m.add_fact(input)).await??;
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(in crate::server) struct FactsQuery {
    namespace: Option<String>,
    subject: Option<String>,
    predicate: Option<String>,
    object: Option<String>,
    entity: Option<String>,
    limit: Option<u32>,
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
) -> ApiResult {
    let q = q.query(&headers, false);
    let facts = s.engine.read(move |m| m.query_facts(q)).await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

/// Every version of the matching facts, superseded ones included.
pub(in crate::server) async fn fact_history(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
    if q.subject.is_none() && q.entity.is_none() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "history needs `subject` or `entity`",
        ));
    }
    let q = q.query(&headers, true);
    let facts = s.engine.read(move |m| m.query_facts(q)).await??;
    Ok(Json(json!({ "facts": facts })).into_response())
}

pub(in crate::server) async fn fact_graph(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FactsQuery>,
) -> ApiResult {
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
    Ok(Json(json!({ "facts": facts })).into_response())
}

pub(in crate::server) async fn fact_conflicts(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let pairs = s.engine.read(move |m| m.fact_conflicts(&ns)).await??;
    let pairs: Vec<Value> = pairs.into_iter().map(|(a, b)| json!([a, b])).collect();
    Ok(Json(json!({ "conflicts": pairs })).into_response())
}
