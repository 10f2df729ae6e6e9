//! Fact extraction from a session's dialogue (seed 003's consolidation).

use serde_json::{Value, json};

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`extract.txt`).
pub const SYSTEM: &str = include_str!("extract.txt");

/// One fact distilled from dialogue.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedFact {
    pub content: String,
    pub kind: Kind,
    pub importance: Option<f32>,
    pub triple: Option<(String, String, String)>,
    /// Whether the predicate holds a single value (a new object replaces the old).
    pub exclusive: bool,
    /// Indexes into the chunk's turns.
    pub turns: Vec<usize>,
}

/// `turns` are (speaker, text) in dialogue order.
pub fn request(turns: &[(String, String)]) -> ChatRequest {
    let lines: Vec<String> = turns
        .iter()
        .enumerate()
        .map(|(i, (who, text))| format!("{i}. {who}: {text}"))
        .collect();
    chat(
        LlmComponent::Extract,
        SYSTEM,
        format!("Dialogue:\n{}", lines.join("\n")),
        tool(
            "save_facts",
            "Save the durable facts of the dialogue.",
            json!({
                "type": "object",
                "properties": { "facts": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "content": { "type": "string" },
                        "kind": { "type": "string", "enum": ["semantic", "procedural", "episodic"] },
                        "importance": { "type": "number" },
                        "subject": { "type": "string" },
                        "predicate": { "type": "string" },
                        "object": { "type": "string" },
                        "single_valued": { "type": "boolean" },
                        "turns": { "type": "array", "items": { "type": "integer" } }
                    },
                    "required": ["content"]
                }}},
                "required": ["facts"]
            }),
        ),
        2048,
    )
}

pub fn parse(arguments: &str, turns: usize) -> CoreResult<Vec<ExtractedFact>> {
    let v = parse_json("extract", arguments)?;
    let mut out = Vec::new();
    for f in list("extract", &v, "facts")? {
        let Some(content) = f["content"]
            .as_str()
            .map(str::trim)
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        let part = |k: &str| {
            f[k].as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let triple = match (part("subject"), part("predicate"), part("object")) {
            (Some(s), Some(p), Some(o)) => Some((s, p, o)),
            _ => None,
        };
        out.push(ExtractedFact {
            content: content.to_string(),
            kind: f["kind"]
                .as_str()
                .and_then(|k| k.parse().ok())
                .unwrap_or(Kind::Semantic),
            importance: f["importance"].as_f64().map(|x| (x as f32).clamp(0.0, 1.0)),
            triple,
            exclusive: f["single_valued"].as_bool().unwrap_or(false),
            turns: f["turns"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_u64)
                        .map(|i| i as usize)
                        .filter(|i| *i < turns)
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    Ok(out)
}
