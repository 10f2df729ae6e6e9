//! The LLM as a NER provider for the `accurate` strategy, through the `llm`
//! port (the host's LLM, never a network of its own): one forced tool call
//! returns the entities; each is located in the text to get its byte span,
//! and names the model made up (not in the text) are dropped.

use crate::error::{CoreError, CoreResult};
use crate::model::{ChatMessage, ChatRequest, EntityType, LlmComponent, Mention, ToolSpec};

pub const NER_SYSTEM: &str = "You extract named entities from a text for a personal memory system. \
Return every person, organization, location and project the text names, and notable dates. \
Copy each entity's text exactly as it appears; do not invent, normalise or translate names. \
Types: person, organization, location, project, date, other.";

pub const NER_TOOL: &str = "record_entities";
/// Confidence given to LLM mentions (between the rules' and regex's).
pub const LLM_CONFIDENCE: f32 = 0.8;
pub const PROVIDER: &str = "llm";

fn tool() -> ToolSpec {
    ToolSpec {
        name: NER_TOOL.into(),
        description: "Record the named entities found in the text.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "entities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": { "type": "string" },
                            "type": { "type": "string", "enum": ["person", "organization", "location", "project", "date", "other"] }
                        },
                        "required": ["text", "type"]
                    }
                }
            },
            "required": ["entities"]
        })
        .to_string(),
    }
}

/// Builds the request for `text`.
pub fn request(text: &str) -> ChatRequest {
    ChatRequest {
        component: LlmComponent::Ner,
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: NER_SYSTEM.into(),
            },
            ChatMessage {
                role: "user".into(),
                content: text.into(),
            },
        ],
        json: true,
        max_tokens: Some(512),
        tool: Some(tool()),
    }
}

/// Parses the tool arguments into mentions located in `text`.
pub fn parse(text: &str, arguments: &str) -> CoreResult<Vec<Mention>> {
    let v = super::parse_json("NER", arguments)?;
    let items = v["entities"]
        .as_array()
        .ok_or_else(|| CoreError::Llm("malformed NER answer: no `entities` list".into()))?;
    let mut out: Vec<Mention> = Vec::new();
    for item in items {
        let Some(name) = item["text"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let entity_type = item["type"]
            .as_str()
            .and_then(|t| t.parse::<EntityType>().ok())
            .unwrap_or(EntityType::Other);
        // The first occurrence not already taken; none means the model made it up.
        let mut from = 0;
        let span = loop {
            match text.get(from..).and_then(|rest| rest.find(name)) {
                Some(i) => {
                    let start = from + i;
                    let end = start + name.len();
                    if out
                        .iter()
                        .any(|m| (m.start as usize) < end && start < m.end as usize)
                    {
                        from = end;
                        continue;
                    }
                    break Some((start, end));
                }
                None => break None,
            }
        };
        if let Some((start, end)) = span {
            out.push(Mention {
                text: name.to_string(),
                entity_type,
                start: start as u32,
                end: end as u32,
                confidence: LLM_CONFIDENCE,
                provider: PROVIDER.into(),
            });
        }
    }
    out.sort_by_key(|m| m.start);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_located_and_inventions_dropped() {
        let text = "Caroline met Caroline's friend in Paris.";
        let args = r#"{"entities": [{"text": "Caroline", "type": "person"}, {"text": "Paris", "type": "location"},
                       {"text": "Atlantis", "type": "location"}, {"text": "Caroline", "type": "person"}, {"text": "x", "type": "weird"}]}"#;
        let got = parse(text, args).unwrap_or_default();
        let spans: Vec<(&str, u32, EntityType)> = got
            .iter()
            .map(|m| (m.text.as_str(), m.start, m.entity_type))
            .collect();
        assert_eq!(
            spans,
            [
                ("Caroline", 0, EntityType::Person),
                ("Caroline", 13, EntityType::Person),
                ("Paris", 34, EntityType::Location)
            ]
        );
    }

    #[test]
    fn malformed_answers_are_errors() {
        assert!(matches!(parse("t", "not json"), Err(CoreError::Llm(_))));
        assert!(matches!(
            parse("t", r#"{"nope": 1}"#),
            Err(CoreError::Llm(_))
        ));
        assert!(parse("t", r#"{"entities": []}"#).is_ok_and(|v| v.is_empty()));
    }

    #[test]
    fn the_request_forces_the_tool() {
        let r = request("hello");
        assert_eq!(r.component, LlmComponent::Ner);
        assert_eq!(r.tool.map(|t| t.name), Some(NER_TOOL.to_string()));
    }
}
