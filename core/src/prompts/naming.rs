//! Topic naming (seed 004 §6, Topiary).

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`naming.txt`).
pub const SYSTEM: &str = include_str!("naming.txt");

/// `clusters` are (topic id, sample texts).
pub fn request(clusters: &[(String, Vec<String>)], existing: &[String]) -> ChatRequest {
    let mut user = String::new();
    if !existing.is_empty() {
        user.push_str(&format!("Existing names: {}\n\n", existing.join("; ")));
    }
    for (id, samples) in clusters {
        user.push_str(&format!("Cluster {id}:\n"));
        for s in samples {
            user.push_str(&format!("  - {s}\n"));
        }
    }
    chat(
        LlmComponent::Naming,
        SYSTEM,
        user,
        tool(
            "name_topics",
            "Name each cluster.",
            json!({
                "type": "object",
                "properties": { "names": { "type": "array", "items": {
                    "type": "object",
                    "properties": { "id": { "type": "string" }, "name": { "type": "string" } },
                    "required": ["id", "name"]
                }}},
                "required": ["names"]
            }),
        ),
        1024,
    )
}

/// (topic id, name) for the ids asked about.
pub fn parse(arguments: &str, ids: &[String]) -> CoreResult<Vec<(String, String)>> {
    let v = parse_json("naming", arguments)?;
    let mut out = Vec::new();
    for n in list("naming", &v, "names")? {
        let (Some(id), Some(name)) = (n["id"].as_str(), n["name"].as_str()) else {
            continue;
        };
        let name = name.trim();
        if ids.iter().any(|i| i == id) && !name.is_empty() {
            out.push((id.to_string(), name.chars().take(60).collect()));
        }
    }
    Ok(out)
}
