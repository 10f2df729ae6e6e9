//! Reconciling a same-topic update with an older memory (seed 004 §3.2).

use serde_json::json;

use super::*;
use crate::error::{CoreError, CoreResult};
use crate::model::*;

/// The system text (`reconcile.txt`).
pub const SYSTEM: &str = include_str!("reconcile.txt");

pub fn request(older: &Memory, newer: &Memory) -> ChatRequest {
    chat(
        LlmComponent::Reconcile,
        SYSTEM,
        format!(
            "Older ({} days old): {}\nNewer: {}",
            (newer.created_at - older.created_at).max(0) / 86_400_000,
            older.content,
            newer.content
        ),
        tool(
            "reconcile_entries",
            "Decide how the two entries relate.",
            json!({
                "type": "object",
                "properties": {
                    "decision": { "type": "string", "enum": ["update", "absorb", "keep_both"] },
                    "merged_content": { "type": "string" }
                },
                "required": ["decision"]
            }),
        ),
        1024,
    )
}

/// `update` and `absorb` fall back to the newer content when the merged one
/// is empty (seed 004 §3.2).
pub fn parse(arguments: &str, newer: &Memory) -> CoreResult<PairDecision> {
    let v = parse_json("reconcile", arguments)?;
    let content =
        merge::merged_content("reconcile", &v, "merged_content").unwrap_or(newer.content.clone());
    match v["decision"].as_str() {
        Some("update") => Ok(PairDecision::Update(content)),
        Some("absorb") => Ok(PairDecision::Merge(content)),
        Some("keep_both") => Ok(PairDecision::KeepBoth),
        other => Err(CoreError::Llm(format!(
            "malformed reconcile answer: decision {other:?}"
        ))),
    }
}
