//! Merging two near-duplicate memories (seed 004 §3.1).

use serde_json::{Value, json};

use super::*;
use crate::error::{CoreError, CoreResult};
use crate::model::*;

/// The system text (`merge.txt`).
pub const SYSTEM: &str = include_str!("merge.txt");

/// What the LLM decided about a pair.
#[derive(Debug, Clone, PartialEq)]
pub enum PairDecision {
    /// Combine into one entry with this content.
    Merge(String),
    /// The older entry is stale: the newer takes this content.
    Update(String),
    /// Different things: leave both.
    KeepBoth,
}

pub fn request(a: &Memory, b: &Memory) -> ChatRequest {
    chat(
        LlmComponent::Merge,
        SYSTEM,
        format!("Entry A: {}\nEntry B: {}", a.content, b.content),
        tool(
            "merge_entries",
            "Merge the two entries, or say they are distinct.",
            json!({
                "type": "object",
                "properties": {
                    "merged": { "type": "string" },
                    "distinct": { "type": "boolean" }
                },
                "required": ["merged"]
            }),
        ),
        1024,
    )
}

pub fn parse(arguments: &str) -> CoreResult<PairDecision> {
    let v = parse_json("merge", arguments)?;
    if v["distinct"].as_bool() == Some(true) {
        return Ok(PairDecision::KeepBoth);
    }
    merged_content("merge", &v, "merged").map(PairDecision::Merge)
}

pub(super) fn merged_content(step: &str, v: &Value, key: &str) -> CoreResult<String> {
    v[key]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .ok_or_else(|| CoreError::Llm(format!("malformed {step} answer: no `{key}`")))
}
