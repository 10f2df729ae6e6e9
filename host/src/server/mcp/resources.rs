//! MCP resources: what an agent reads rather than calls. Each is JSON, the
//! same value the matching tool or HTTP route answers:
//!
//! | URI | what |
//! |---|---|
//! | `mnemo://namespaces/{namespace}/resume` | session-recovery context (`GET /resume`) |
//! | `mnemo://namespaces/{namespace}/core` | the Core memories |
//! | `mnemo://namespaces/{namespace}/topics/{id}` | a topic and its memories (`POST /topic`) |
//! | `mnemo://namespaces/{namespace}/memories/{id}` | one memory |
//! | `mnemo://namespaces/{namespace}/memories/{id}/history` | its earlier states |
//!
//! The namespace is part of the path (not the URI's host: a namespace may
//! hold `:`), so the API's access layer reads it from the URI as it reads a
//! tool's `namespace` argument. `resources/list` names the request's
//! namespace's resume, Core and topics; the templates cover the rest.

use mnemo_core::model::{Layer, ListRequest, Memory, ResumeRequest};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde::Serialize;

use super::{flat, protocol_error};
use crate::server::engine::Engines;
use crate::server::error::ApiError;
use crate::server::routes::{History, topic_map};

/// Every resource URI starts with this; the namespace follows.
pub const PREFIX: &str = "mnemo://namespaces/";
const JSON: &str = "application/json";
/// Core memories one read of `…/core` returns at most (Core is small by
/// design: what the agent should always know).
const CORE_LIMIT: u32 = 500;

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Target {
    Resume(String),
    Core(String),
    Topic(String, String),
    Memory(String, String),
    History(String, String),
}

/// The namespace a `mnemo://` resource URI names, if it is one.
pub fn namespace_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(PREFIX)?.split('/').next()
}

impl Target {
    pub(super) fn parse(uri: &str) -> Result<Self, ErrorData> {
        let unknown = || {
            ErrorData::resource_not_found(
                format!(
                    "no resource `{uri}`: mnemo's resources are {PREFIX}{{namespace}}/resume, /core, /topics/{{id}}, /memories/{{id}} and /memories/{{id}}/history"
                ),
                None,
            )
        };
        let rest = uri.strip_prefix(PREFIX).ok_or_else(unknown)?;
        let parts: Vec<&str> = rest.split('/').collect();
        let ns = parts.first().copied().unwrap_or_default();
        let ns = mnemo_core::valid_namespace(ns)
            .map_err(|e| ErrorData::invalid_params(format!("{uri}: {e}"), None))?;
        Ok(match parts[1..] {
            ["resume"] => Self::Resume(ns),
            ["core"] => Self::Core(ns),
            ["topics", id] if !id.is_empty() => Self::Topic(ns, id.into()),
            ["memories", id] if !id.is_empty() => Self::Memory(ns, id.into()),
            ["memories", id, "history"] if !id.is_empty() => Self::History(ns, id.into()),
            _ => return Err(unknown()),
        })
    }

    pub(super) fn uri(&self) -> String {
        match self {
            Self::Resume(ns) => format!("{PREFIX}{ns}/resume"),
            Self::Core(ns) => format!("{PREFIX}{ns}/core"),
            Self::Topic(ns, id) => format!("{PREFIX}{ns}/topics/{id}"),
            Self::Memory(ns, id) => format!("{PREFIX}{ns}/memories/{id}"),
            Self::History(ns, id) => format!("{PREFIX}{ns}/memories/{id}/history"),
        }
    }

    /// The resource's JSON now; `untouched`: what it shows is not renewed.
    pub(super) async fn read(&self, engine: &Engines, untouched: bool) -> Result<String, ApiError> {
        fn text<T: Serialize>(v: T) -> Result<String, ApiError> {
            let v = crate::server::json::tidied(v).map_err(ApiError::storage)?;
            serde_json::to_string_pretty(&v).map_err(ApiError::storage)
        }
        match self.clone() {
            Self::Resume(namespace) => {
                let req = ResumeRequest {
                    namespace,
                    hours: 0,
                    context: None,
                };
                text(flat(
                    engine.read_as(untouched, move |m| m.resume(req)).await,
                )?)
            }
            Self::Core(namespace) => {
                let req = ListRequest {
                    namespace,
                    layers: vec![Layer::Core],
                    limit: CORE_LIMIT,
                    ..Default::default()
                };
                let memories: Vec<Memory> = flat(engine.read(move |m| m.list(req)).await)?;
                text(crate::server::routes::Memories { memories })
            }
            Self::Topic(ns, id) => {
                let ids = vec![id.clone()];
                let topics = flat(engine.read(move |m| m.topics(&ns, &ids)).await)?;
                let mut map = topic_map(topics);
                match map.remove(&id) {
                    Some(topic) => text(topic),
                    None => Err(ApiError::new(
                        axum::http::StatusCode::NOT_FOUND,
                        "not_found",
                        format!("no topic `{id}`"),
                    )),
                }
            }
            Self::Memory(ns, id) => text(flat(engine.read(move |m| m.get(&ns, &id)).await)?),
            Self::History(ns, id) => {
                text(flat(engine.read(move |m| History::of(m, &ns, &id)).await)?)
            }
        }
    }
}

/// `resources/read`: the resource's JSON, or the API's error as a protocol
/// error (an unknown id is `resource not found`).
pub(super) async fn read(
    engine: &Engines,
    uri: &str,
    untouched: bool,
) -> Result<ReadResourceResult, ErrorData> {
    let target = Target::parse(uri)?;
    match target.read(engine, untouched).await {
        Ok(json) => Ok(ReadResourceResult::new(vec![
            ResourceContents::text(json, uri).with_mime_type(JSON),
        ])),
        Err(e) if e.code == "not_found" => Err(ErrorData::resource_not_found(e.message, None)),
        Err(e) => Err(protocol_error(e)),
    }
}

/// `resources/list`: the namespace's resume and Core, and each of its topics.
pub(super) async fn list(engine: &Engines, ns: &str) -> Result<ListResourcesResult, ErrorData> {
    let ns = mnemo_core::valid_namespace(ns)
        .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    let mut out = vec![
        Resource::new(Target::Resume(ns.clone()).uri(), "resume")
            .with_title(format!("Resume ({ns})"))
            .with_description("Core memories, recent changes, the topic index and the triggers: read it at the start of a session.")
            .with_mime_type(JSON),
        Resource::new(Target::Core(ns.clone()).uri(), "core")
            .with_title(format!("Core memories ({ns})"))
            .with_description("What the agent should always know: the Core layer.")
            .with_mime_type(JSON),
    ];
    let scope = ns.clone();
    let topics = flat(engine.read(move |m| m.topics(&scope, &[])).await).map_err(protocol_error)?;
    for t in topics {
        out.push(
            Resource::new(Target::Topic(ns.clone(), t.id.clone()).uri(), t.id.clone())
                .with_title(t.name.clone())
                .with_description(format!("Topic `{}` and its memories.", t.name))
                .with_mime_type(JSON),
        );
    }
    Ok(ListResourcesResult::with_all_items(out))
}

/// `resources/templates/list`.
pub fn templates() -> ListResourceTemplatesResult {
    let t = |uri: &str, name: &str, title: &str, description: &str| {
        ResourceTemplate::new(format!("{PREFIX}{uri}"), name)
            .with_title(title)
            .with_description(description)
            .with_mime_type(JSON)
    };
    ListResourceTemplatesResult::with_all_items(vec![
        t(
            "{namespace}/resume",
            "resume",
            "Resume",
            "Session-recovery context of a namespace.",
        ),
        t(
            "{namespace}/core",
            "core",
            "Core memories",
            "A namespace's Core layer.",
        ),
        t(
            "{namespace}/topics/{id}",
            "topic",
            "Topic",
            "A topic of the resume index (kb1, kb2, ...) and its memories.",
        ),
        t(
            "{namespace}/memories/{id}",
            "memory",
            "Memory",
            "One memory, with all its fields.",
        ),
        t(
            "{namespace}/memories/{id}/history",
            "history",
            "Memory history",
            "A memory as it is now and its earlier states (edits, merges, reverts).",
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_name_their_namespace() {
        for t in [
            Target::Resume("a:b".into()),
            Target::Core("default".into()),
            Target::Topic("u1".into(), "kb3".into()),
            Target::Memory("u1".into(), "m-1".into()),
            Target::History("u1".into(), "m-1".into()),
        ] {
            let uri = t.uri();
            assert_eq!(Target::parse(&uri).ok(), Some(t.clone()), "{uri}");
            assert!(namespace_of(&uri).is_some());
        }
        assert_eq!(namespace_of("mnemo://namespaces/a:b/resume"), Some("a:b"));
        for bad in [
            "mnemo://namespaces/u1/nothing",
            "mnemo://namespaces/u1/memories/",
            "mnemo://namespaces/bad space/core",
            "file:///etc/passwd",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
