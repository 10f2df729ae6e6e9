//! The LLM review of Working and Core (seed 004 §5): proposals the review
//! rules then judge.

use serde_json::{Value, json};

use super::*;
use crate::error::{CoreError, CoreResult};
use crate::model::*;

/// The system text (`review.txt`).
pub const SYSTEM: &str = include_str!("review.txt");

/// `hints` are pairs of memories that may overlap (merge candidates).
pub fn request(memories: &[Memory], hints: &[(String, String)], now: i64) -> ChatRequest {
    let mut user = String::from("Memories:\n");
    for m in memories {
        let modified = (now - m.modified_at).max(0) / 86_400_000;
        user.push_str(&format!(
            "[{}] L{} mod={}d {}\n",
            short_id(&m.id),
            match m.layer {
                crate::model::Layer::Buffer => 1,
                crate::model::Layer::Working => 2,
                crate::model::Layer::Core => 3,
            },
            modified,
            describe(m, now)
        ));
    }
    if !hints.is_empty() {
        user.push_str("\nPossibly overlapping:\n");
        for (a, b) in hints {
            user.push_str(&format!("[{}] ~ [{}]\n", short_id(a), short_id(b)));
        }
    }
    chat(
        LlmComponent::Review,
        SYSTEM,
        user,
        tool(
            "audit_operations",
            "Propose audit operations.",
            json!({
                "type": "object",
                "properties": { "operations": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "op": { "type": "string", "enum": ["promote", "demote", "adjust", "merge"] },
                        "ids": { "type": "array", "items": { "type": "string" } },
                        "layer": { "type": "string", "enum": ["buffer", "working", "core"] },
                        "importance": { "type": "number" },
                        "content": { "type": "string" },
                        "reason": { "type": "string" }
                    },
                    "required": ["op", "ids"]
                }}},
                "required": ["operations"]
            }),
        ),
        2048,
    )
}

/// The proposed operations with ids resolved; an unknown id is kept as
/// given, so the review rules refuse it by name.
pub fn parse(arguments: &str, memories: &[Memory]) -> CoreResult<Vec<crate::model::ReviewOp>> {
    let v = parse_json("audit", arguments)?;
    let mut out = Vec::new();
    for op in list("audit", &v, "operations")? {
        let ids = op["ids"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(|h| resolve(h, memories).map_or_else(|| h.to_string(), |m| m.id.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let name = op["op"].as_str().unwrap_or_default();
        let action = name.parse::<ReviewAction>().map_err(|_| {
            CoreError::Llm(format!(
                "malformed review answer: `{name}` is not a review power"
            ))
        })?;
        out.push(ReviewOp {
            op: action,
            ids,
            target_layer: op["layer"].as_str().and_then(|l| l.parse().ok()),
            importance: op["importance"].as_f64().map(|x| x as f32),
            content: op["content"].as_str().map(String::from),
            reason: op["reason"].as_str().unwrap_or_default().to_string(),
            allowed: false,
            verdict: String::new(),
        });
    }
    Ok(out)
}
