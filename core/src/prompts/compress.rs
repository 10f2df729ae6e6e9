//! Seed 004's "resume compress" / Core summary (§3 step 19): the Core an
//! agent is shown, compressed to its budget.

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`compress.txt`).
pub const SYSTEM: &str = include_str!("compress.txt");

pub fn request(core: &[Memory], max_chars: usize) -> ChatRequest {
    let lines: Vec<String> = core.iter().map(|m| format!("- {}", m.content)).collect();
    chat(
        LlmComponent::Compress,
        SYSTEM,
        format!("At most {max_chars} characters.\n{}", lines.join("\n")),
        tool(
            "save_summary",
            "Save the compressed Core.",
            json!({
                "type": "object",
                "properties": { "summary": { "type": "string" } },
                "required": ["summary"]
            }),
        ),
        (max_chars / crate::thresholds::CHARS_PER_TOKEN + 64) as u32,
    )
}

/// The summary, cut to `max_chars` characters.
pub fn parse(arguments: &str, max_chars: usize) -> CoreResult<String> {
    let v = parse_json("compress", arguments)?;
    merge::merged_content("compress", &v, "summary").map(|s| s.chars().take(max_chars).collect())
}
