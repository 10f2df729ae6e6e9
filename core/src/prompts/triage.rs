//! Buffer triage (seed 004 §2.3): promote durable knowledge, keep the rest.

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`triage.txt`).
pub const SYSTEM: &str = include_str!("triage.txt");

pub fn request(memories: &[Memory], now: i64) -> ChatRequest {
    let lines: Vec<String> = memories.iter().map(|m| describe(m, now)).collect();
    chat(
        LlmComponent::Triage,
        SYSTEM,
        format!("Buffer memories:\n{}", lines.join("\n")),
        tool(
            "triage_decisions",
            "Promote or keep each buffer memory.",
            json!({
                "type": "object",
                "properties": { "decisions": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "decision": { "type": "string", "enum": ["promote", "keep"] },
                        "kind": { "type": "string", "enum": ["semantic", "procedural", "episodic"] },
                        "reason": { "type": "string" }
                    },
                    "required": ["id", "decision"]
                }}},
                "required": ["decisions"]
            }),
        ),
        1024,
    )
}

pub fn parse(arguments: &str, memories: &[Memory]) -> CoreResult<Vec<Verdict>> {
    gate::parse_verdicts("triage", arguments, memories, "promote")
}
