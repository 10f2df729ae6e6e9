//! `/resume`, `/topics`, `/topic` and `/triggers`: seed 004's session recovery.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use mnemo_core::model::*;
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Body, Reply};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn resume(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ResumeArgs>,
) -> Answer<ResumeBlock> {
    let req = ResumeRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        hours: q.hours.unwrap_or(0),
        context: q.context,
    };
    let untouched = crate::server::access::untouched(&headers);
    let r = s
        .engine
        .read_as(untouched, move |m| m.resume(req))
        .await??;
    Reply::ok(r)
}

/// A topic of the index, without its memories.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct TopicRef {
    /// `kb…` for a leaf, `kp…` for a parent.
    id: String,
    /// The topic's name.
    name: String,
    /// The parent's id, if any.
    parent: Option<String>,
    /// A parent's leaves.
    children: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Topics {
    /// Leaves and parents.
    topics: Vec<TopicRef>,
}

pub(in crate::server) async fn list_topics(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> Answer<Topics> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let topics = s.engine.read(move |m| m.topics(&ns, &[])).await??;
    Reply::ok(Topics::from(topics))
}

impl From<Vec<Topic>> for Topics {
    /// The index without the memories (`GET /topics`, the `topics` tool).
    fn from(topics: Vec<Topic>) -> Self {
        let topics = topics
            .into_iter()
            .map(|t| TopicRef {
                id: t.id,
                name: t.name,
                parent: t.parent,
                children: t.children,
            })
            .collect();
        Self { topics }
    }
}

/// Topics by id with their memories (`POST /topic`, the `topic` tool).
pub(in crate::server) fn topic_map(topics: Vec<Topic>) -> BTreeMap<String, TopicMemories> {
    topics
        .into_iter()
        .map(|t| {
            let topic = TopicMemories {
                name: t.name,
                memories: t.memories,
                parent: t.parent,
                children: t.children,
            };
            (t.id, topic)
        })
        .collect()
}

/// A topic with its memories (a parent's are its leaves').
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct TopicMemories {
    /// The topic's name.
    name: String,
    /// Its memories (a parent's: its leaves').
    memories: Vec<Memory>,
    /// A leaf's parent, if any.
    parent: Option<String>,
    /// A parent's leaves.
    children: Vec<String>,
}

/// Seed 004 `POST /topic`: `{"kb1": {"name", "memories"}, ...}`.
pub(in crate::server) async fn topic(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(req): Body<TopicArgs>,
) -> Answer<BTreeMap<String, TopicMemories>> {
    if req.ids.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "`ids` must name at least one topic",
        ));
    }
    let ns = namespace(&headers, req.namespace.as_deref().unwrap_or(""));
    let topics = s.engine.read(move |m| m.topics(&ns, &req.ids)).await??;
    Reply::ok(topic_map(topics))
}

/// A `trigger:*` tag and how often its memories were read.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Trigger {
    /// The name after `trigger:`.
    name: String,
    /// The summed access count of its memories.
    access: u64,
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Triggers {
    /// Most read first.
    triggers: Vec<Trigger>,
}

pub(in crate::server) async fn triggers(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NsQuery>,
) -> Answer<Triggers> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let list = s.engine.read(move |m| m.triggers(&ns)).await??;
    Reply::ok(Triggers::from(list))
}

impl From<Vec<(String, u64)>> for Triggers {
    /// `(name, summed access)` pairs as the answer lists them.
    fn from(list: Vec<(String, u64)>) -> Self {
        let triggers = list
            .into_iter()
            .map(|(name, access)| Trigger { name, access })
            .collect();
        Self { triggers }
    }
}

/// The memories of one trigger.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct TriggerMemories {
    /// The trigger's name.
    trigger: String,
    /// The memories tagged `trigger:<name>`.
    memories: Vec<Memory>,
}

/// Memories tagged `trigger:<name>`: what to recall before that action.
pub(in crate::server) async fn trigger_memories(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<NsQuery>,
) -> Answer<TriggerMemories> {
    let req = ListRequest {
        namespace: namespace(&headers, q.namespace.as_deref().unwrap_or("")),
        tags: vec![format!("trigger:{name}")],
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
        ..Default::default()
    };
    let memories = s.engine.read(move |m| m.list(req)).await??;
    Reply::ok(TriggerMemories {
        trigger: name,
        memories,
    })
}
