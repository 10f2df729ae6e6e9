//! Seed 003's weekly reflection.

use serde_json::json;

use super::*;
use crate::error::{CoreError, CoreResult};
use crate::model::*;

/// The system text (`reflection.txt`).
pub const SYSTEM: &str = include_str!("reflection.txt");

pub fn request(facts: &[Memory], dialogue: &[String]) -> ChatRequest {
    let mut user = String::from("Facts of the week:\n");
    for f in facts {
        user.push_str("- ");
        user.push_str(&f.content);
        user.push('\n');
    }
    if !dialogue.is_empty() {
        user.push_str("\nSome of the week's dialogue:\n");
        for d in dialogue {
            user.push_str("- ");
            user.push_str(d);
            user.push('\n');
        }
    }
    chat(
        LlmComponent::Reflection,
        SYSTEM,
        user,
        tool(
            "save_reflection",
            "Save the weekly reflection.",
            json!({
                "type": "object",
                "properties": { "reflection": { "type": "string" } },
                "required": ["reflection"]
            }),
        ),
        512,
    )
}

pub fn parse(arguments: &str) -> CoreResult<String> {
    let v = parse_json("reflection", arguments)?;
    v["reflection"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .ok_or_else(|| CoreError::Llm("malformed reflection answer: no `reflection`".into()))
}
