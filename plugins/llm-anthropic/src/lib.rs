//! The `anthropic` LLM provider: `POST {base}/v1/messages`, with a forced
//! tool call for structured output. The host adds the key as `x-api-key`;
//! this plugin never sees it.

use mnemo_llm_sdk::http::{join, post_json};
use mnemo_llm_sdk::serde_json::{Value, json};
use mnemo_llm_sdk::{Auth, Capability, ChatRequest, ChatResponse, Error, Info, Provider, Usage};

pub struct Anthropic;

/// The Messages API version this plugin speaks.
const API_VERSION: &str = "2023-06-01";

fn malformed(what: impl std::fmt::Display) -> Error {
    Error::MalformedResponse(what.to_string())
}

/// The request body: the system prompt apart from the turns.
pub fn body(r: &ChatRequest) -> Result<Value, Error> {
    let system: Vec<&str> = r
        .messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let turns: Vec<Value> = r
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let mut body = json!({ "model": r.model, "max_tokens": r.max_tokens, "messages": turns });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if let Some(t) = r.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(tool) = &r.tool {
        let schema = tool.schema()?;
        body["tools"] =
            json!([{ "name": tool.name, "description": tool.description, "input_schema": schema }]);
        body["tool_choice"] = json!({ "type": "tool", "name": tool.name });
    }
    Ok(body)
}

/// Reads a message: the tool call's input or, from a model that answered
/// in text instead, the text (the core repairs what it can).
pub fn parse(v: &Value, tool: Option<&str>) -> Result<ChatResponse, Error> {
    if v["stop_reason"] == "max_tokens" {
        return Err(malformed(
            "truncated at max_tokens (stop_reason = max_tokens)",
        ));
    }
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| malformed("no content blocks"))?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    let content = match tool {
        Some(name) => match blocks
            .iter()
            .find(|b| b["type"] == "tool_use" && b["name"] == name)
        {
            Some(call) => call["input"].to_string(),
            None if !text.trim().is_empty() => text,
            None => return Err(malformed(format!("expected a call of tool `{name}`"))),
        },
        None => text,
    };
    if content.is_empty() {
        return Err(malformed("no text in the content blocks"));
    }
    Ok(ChatResponse {
        content,
        model: v["model"].as_str().unwrap_or_default().to_string(),
        usage: Usage {
            input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0) as u32,
            output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0) as u32,
        },
    })
}

impl Provider for Anthropic {
    fn info() -> Info {
        Info {
            name: "anthropic".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            auth: Auth::Header("x-api-key".into()),
            capabilities: vec![Capability::Chat],
        }
    }

    fn chat(base_url: &str, r: &ChatRequest) -> Result<ChatResponse, Error> {
        let headers = [("anthropic-version", API_VERSION)];
        let v = post_json(&join(base_url, "v1/messages"), &headers, &body(r)?)?;
        parse(&v, r.tool.as_ref().map(|t| t.name.as_str()))
    }
}

mnemo_llm_sdk::export_provider!(Anthropic);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_llm_sdk::Message;

    #[test]
    fn the_system_prompt_travels_apart() {
        let r = ChatRequest {
            model: "c".into(),
            messages: vec![
                Message {
                    role: "system".into(),
                    content: "rules".into(),
                },
                Message {
                    role: "user".into(),
                    content: "hi".into(),
                },
            ],
            tool: None,
            json: false,
            max_tokens: 8,
            temperature: None,
        };
        let b = body(&r).unwrap();
        assert_eq!(b["system"], "rules");
        assert_eq!(b["messages"].as_array().unwrap().len(), 1);
        let cut = json!({"stop_reason": "max_tokens", "content": []});
        assert!(parse(&cut, None).is_err());
    }
}
