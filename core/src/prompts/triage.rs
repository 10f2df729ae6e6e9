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

/// The triage without an LLM (design: with the LLM `off` every step has a
/// heuristic path): a Buffer memory is promoted to Working when it shows it
/// is worth keeping — it was read or restated, the agent marked it
/// important, it is confirmed, it is a fact distilled from dialogue, it is
/// a statement of fact (see `is_statement_of_fact`), or the gate's
/// whitelist heuristic recognises a lesson, identity, constraint or
/// decision. Anything else (chatter, episodic notes) stays in Buffer, where
/// the cap, importance decay and fading may later move it to the trash
/// (restorable). Returns the reason.
pub fn heuristic(m: &Memory) -> Option<String> {
    use crate::thresholds::PROMOTE_MIN_IMPORTANCE;
    if m.is_protected() {
        return Some("confirmed".into());
    }
    if m.access_count > 0 {
        return Some(format!("read {} times", m.access_count));
    }
    if m.repetition_count > 0 {
        return Some(format!("restated {} times", m.repetition_count));
    }
    if m.importance >= PROMOTE_MIN_IMPORTANCE {
        return Some(format!("importance {:.2}", m.importance));
    }
    if m.source.as_deref() == Some("consolidation") || m.tags.iter().any(|t| t == "fact") {
        return Some("a fact from dialogue".into());
    }
    if m.kind != Kind::Episodic && is_statement_of_fact(&m.content) {
        return Some("a statement of fact".into());
    }
    gate::heuristic(m).map(|category| format!("heuristic: {category}"))
}

/// A sentence that states something specific: at least four words and a
/// number, a proper name (a capitalised word other than the first and
/// "I"), or something the user has ("my …", "the user …").
pub fn is_statement_of_fact(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let number = text.chars().any(|c| c.is_ascii_digit());
    let name = words.iter().skip(1).any(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        w != "I" && w.chars().next().is_some_and(char::is_uppercase)
    });
    let possession = lower.starts_with("my ")
        || lower.contains(" my ")
        || lower.contains("the user")
        || lower.starts_with("user ");
    number || name || possession
}
