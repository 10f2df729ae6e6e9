//! The Working→Core gate (seed 004 §2.5): the whitelist as an LLM prompt,
//! and the same whitelist as a heuristic for the LLM level `off`.

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`gate.txt`).
pub const SYSTEM: &str = include_str!("gate.txt");

pub fn request(candidates: &[Memory], now: i64) -> ChatRequest {
    let lines: Vec<String> = candidates
        .iter()
        .map(|m| {
            let mut line = describe(m, now);
            if m.access_count >= crate::thresholds::GATE_HIGH_ACCESS
                || m.repetition_count >= crate::thresholds::GATE_HIGH_REPETITION
            {
                line.push_str("  (recalled or restated often)");
            }
            line
        })
        .collect();
    chat(
        LlmComponent::Gate,
        SYSTEM,
        format!("Candidates for Core:\n{}", lines.join("\n")),
        tool(
            "gate_decisions",
            "Approve or reject each candidate.",
            json!({
                "type": "object",
                "properties": { "decisions": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "decision": { "type": "string", "enum": ["approve", "reject"] },
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

/// Verdicts for the candidates the answer names; unknown ids are dropped.
pub fn parse(arguments: &str, candidates: &[Memory]) -> CoreResult<Vec<Verdict>> {
    parse_verdicts("gate", arguments, candidates, "approve")
}

pub(super) fn parse_verdicts(
    step: &str,
    arguments: &str,
    memories: &[Memory],
    yes: &str,
) -> CoreResult<Vec<Verdict>> {
    let v = parse_json(step, arguments)?;
    let mut out = Vec::new();
    for d in list(step, &v, "decisions")? {
        let Some(m) = d["id"].as_str().and_then(|h| resolve(h, memories)) else {
            continue;
        };
        out.push(Verdict {
            id: m.id.clone(),
            promote: d["decision"].as_str() == Some(yes),
            kind: d["kind"].as_str().and_then(|k| k.parse().ok()),
            reason: d["reason"].as_str().unwrap_or_default().to_string(),
        });
    }
    Ok(out)
}

/// Seed 004's whitelist, without an LLM: procedures, and memories tagged or
/// phrased as a lesson, identity, constraint or decision.
pub fn heuristic(m: &Memory) -> Option<&'static str> {
    const TAGS: [&str; 6] = [
        "lesson",
        "identity",
        "constraint",
        "decision",
        "preference",
        "rule",
    ];
    const TEMPORARY: [&str; 4] = ["for now", "temporarily", "temporary", "until further"];
    let lower = m.content.to_lowercase();
    if TEMPORARY.iter().any(|t| lower.contains(t)) {
        return None;
    }
    if m.kind == Kind::Procedural {
        return Some("procedure");
    }
    if let Some(t) = m.tags.iter().find(|t| TAGS.contains(&t.as_str())) {
        return Some(match t.as_str() {
            "lesson" => "lesson",
            "identity" | "preference" => "identity",
            "decision" => "decision rationale",
            _ => "constraint",
        });
    }
    const CUES: [(&str, &str); 9] = [
        ("always ", "constraint"),
        ("never ", "constraint"),
        ("must ", "constraint"),
        ("lesson", "lesson"),
        ("learned that", "lesson"),
        ("my name is", "identity"),
        ("i prefer", "identity"),
        ("prefers ", "identity"),
        ("because ", "decision rationale"),
    ];
    CUES.iter()
        .find(|(c, _)| lower.contains(c))
        .map(|(_, k)| *k)
}
