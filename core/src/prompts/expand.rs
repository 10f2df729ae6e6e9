//! LLM query expansion (seed 004 §4.4).

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`expand.txt`).
pub const SYSTEM: &str = include_str!("expand.txt");

pub fn request(query: &str) -> ChatRequest {
    chat(
        LlmComponent::Expand,
        SYSTEM,
        format!("Query: {query}"),
        tool(
            "search_phrases",
            "Alternative search phrases for the query.",
            json!({
                "type": "object",
                "properties": { "phrases": { "type": "array", "items": { "type": "string" } } },
                "required": ["phrases"]
            }),
        ),
        256,
    )
}

/// At most `max` distinct non-empty phrases that differ from the query.
pub fn parse(arguments: &str, query: &str, max: usize) -> CoreResult<Vec<String>> {
    let v = parse_json("query_expand", arguments)?;
    let mut out: Vec<String> = Vec::new();
    for p in list("query_expand", &v, "phrases")? {
        let Some(p) = p.as_str().map(str::trim).filter(|p| !p.is_empty()) else {
            continue;
        };
        if !p.eq_ignore_ascii_case(query.trim()) && !out.iter().any(|o| o.eq_ignore_ascii_case(p)) {
            out.push(p.chars().take(300).collect());
        }
    }
    out.truncate(max);
    Ok(out)
}
