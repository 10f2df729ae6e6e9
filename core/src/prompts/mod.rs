//! Every LLM prompt of the core, its tool schema and its parser: one file
//! per step, its system text in the `.txt` file beside it. Each step is one
//! forced tool call through the `llm` port; a malformed answer is a typed
//! `llm` error, never a silent decision.

use serde_json::Value;

use crate::error::{CoreError, CoreResult};
use crate::model::{ChatMessage, ChatRequest, Kind, LlmComponent, Memory, ToolSpec};

pub mod compress;
pub mod distill;
pub mod expand;
pub mod extract;
pub mod gate;
pub mod merge;
pub mod naming;
pub mod ner;
pub mod reconcile;
pub mod reflection;
pub mod repair;
pub mod rerank;
pub mod review;
pub mod triage;

#[cfg(test)]
mod tests;

pub use extract::ExtractedFact;
pub use merge::PairDecision;
pub use repair::ask;

/// A gate or triage decision on one memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub id: String,
    pub promote: bool,
    pub kind: Option<Kind>,
    pub reason: String,
}

pub(super) fn chat(
    component: LlmComponent,
    system: &str,
    user: String,
    tool: ToolSpec,
    max: u32,
) -> ChatRequest {
    ChatRequest {
        component,
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: system.into(),
            },
            ChatMessage {
                role: "user".into(),
                content: user,
            },
        ],
        json: true,
        max_tokens: Some(max),
        tool: Some(tool),
    }
}

pub(super) fn tool(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: parameters.to_string(),
    }
}

/// A step's answer as JSON, repaired where that is safe (`repair.rs`).
pub(super) fn parse_json(step: &str, arguments: &str) -> CoreResult<Value> {
    repair::json(step, arguments)
}

pub(super) fn list<'a>(step: &str, v: &'a Value, key: &str) -> CoreResult<&'a Vec<Value>> {
    v[key]
        .as_array()
        .ok_or_else(|| CoreError::Llm(format!("malformed {step} answer: no `{key}` list")))
}

/// The handle a memory goes by in a prompt: the last 8 characters of its
/// id after the last `_` (characters, not bytes: an imported id may hold
/// any text).
pub fn short_id(id: &str) -> &str {
    let tail = id.rsplit('_').next().unwrap_or(id);
    let start = tail.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    tail.get(start..).unwrap_or(tail)
}

pub(super) fn describe(m: &Memory, now: i64) -> String {
    let days = (now - m.created_at).max(0) / 86_400_000;
    format!(
        "[{}] imp={:.2} access={} rep={} age={}d kind={} tags=[{}] {}",
        short_id(&m.id),
        m.importance,
        m.access_count,
        m.repetition_count,
        days,
        m.kind.as_str(),
        m.tags.join(","),
        m.content
    )
}

pub(super) fn resolve<'a>(handle: &str, memories: &'a [Memory]) -> Option<&'a Memory> {
    memories
        .iter()
        .find(|m| short_id(&m.id) == handle || m.id == handle)
}
