//! The route handlers: each parses its input, runs one job on the engine
//! thread and answers JSON. Logic stays in the core; what is here is
//! request shape, namespace and status codes.
//!
//! One file per resource; this one holds what they share: the namespace
//! from the header or the body, and comma-separated filter lists.

mod admin;
mod agent;
mod dialogue;
mod facts;
mod keys;
mod lifecycle;
mod llm;
mod memories;
mod recall;

pub(super) use admin::*;
pub(super) use agent::*;
pub(super) use dialogue::*;
pub(super) use facts::*;
pub(super) use keys::*;
pub(super) use lifecycle::*;
pub(super) use llm::*;
pub(super) use memories::*;
pub(super) use recall::*;

use axum::http::HeaderMap;

use crate::runtime::CallError;

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::error::ApiError;

/// The `X-Namespace` header, if any.
pub(super) fn header_namespace(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-namespace").and_then(|v| v.to_str().ok())
}

/// The body's namespace, else the `X-Namespace` header, else `default`.
pub fn namespace(headers: &HeaderMap, body_ns: &str) -> String {
    if !body_ns.is_empty() {
        return body_ns.to_string();
    }
    header_namespace(headers).unwrap_or("default").to_string()
}

/// The given namespace, else the `X-Namespace` header, else none: the
/// operator's reads and runs (stats, audit, export, consolidate) then cover
/// every namespace.
pub(super) fn namespace_or_all(headers: &HeaderMap, given: Option<String>) -> Option<String> {
    given
        .filter(|n| !n.is_empty())
        .or_else(|| header_namespace(headers).map(String::from))
}

/// The query string most reads take.
#[derive(Deserialize, Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(super) struct NsQuery {
    /// Namespace (default: the `X-Namespace` header, else `default`; the
    /// operator's reads, such as stats, cover every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    namespace: Option<String>,
    /// Items to return (default 50; a session's turns 200; an entity's
    /// linked memories 20).
    limit: Option<u32>,
    /// Items to skip.
    offset: Option<u32>,
}

/// The values of a comma-separated filter.
pub(super) fn items(list: Option<&str>) -> impl Iterator<Item = &str> {
    list.into_iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The values of a comma-separated filter, each parsed: a bad one is the
/// core's invalid-input error (400), naming the accepted values.
pub(super) fn parse_items<T: std::str::FromStr<Err = mnemo_core::CoreError>>(
    list: Option<&str>,
) -> Result<Vec<T>, ApiError> {
    items(list)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| ApiError::from(CallError::Core(e)))
}
