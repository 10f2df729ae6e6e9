//! Session notes distilled into a project status (seed 004 §3.3).

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`distill.txt`).
pub const SYSTEM: &str = include_str!("distill.txt");

pub fn request(notes: &[Memory]) -> ChatRequest {
    let lines: Vec<String> = notes.iter().map(|n| format!("- {}", n.content)).collect();
    chat(
        LlmComponent::Distill,
        SYSTEM,
        lines.join("\n"),
        tool(
            "save_snapshot",
            "Save the project status snapshot.",
            json!({
                "type": "object",
                "properties": { "snapshot": { "type": "string" } },
                "required": ["snapshot"]
            }),
        ),
        256,
    )
}

pub fn parse(arguments: &str) -> CoreResult<String> {
    let v = parse_json("distill", arguments)?;
    merge::merged_content("distill", &v, "snapshot").map(|s| s.chars().take(250).collect())
}
