//! Anthropic `POST {base}/v1/messages`, with a forced tool call for
//! structured output.

use mnemo_core::CoreError;
use mnemo_core::model::{ChatRequest, ChatResponse};
use serde_json::{Value, json};

use super::{Endpoint, malformed};
use crate::http::{HttpPolicy, Limiter, post_json};

const API_VERSION: &str = "2023-06-01";

pub(super) fn complete(
    ep: &Endpoint,
    req: &ChatRequest,
    max_tokens: u32,
    policy: &HttpPolicy,
    limiter: &Limiter,
) -> Result<ChatResponse, (CoreError, String)> {
    // Anthropic takes the system prompt apart from the turns.
    let system: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let turns: Vec<Value> = req
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let mut body = json!({ "model": ep.model, "max_tokens": max_tokens, "messages": turns });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if let Some(tool) = &req.tool {
        let schema = super::openai::schema(tool)?;
        body["tools"] =
            json!([{ "name": tool.name, "description": tool.description, "input_schema": schema }]);
        body["tool_choice"] = json!({ "type": "tool", "name": tool.name });
    }
    let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
    if let Some(k) = &ep.api_key {
        headers.push(("x-api-key", k.clone()));
    }
    let url = format!("{}/v1/messages", ep.base_url.trim_end_matches('/'));
    let v = post_json(&url, &headers, &body, policy, limiter)
        .map_err(|e| (CoreError::Llm(e.to_string()), e.outcome()))?;
    parse(&v, req.tool.as_ref().map(|t| t.name.as_str())).map_err(|e| (e, "malformed".to_string()))
}

fn parse(v: &Value, tool: Option<&str>) -> Result<ChatResponse, CoreError> {
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
    // The tool call's input, or, from a model that answered in text
    // instead, the text: the core repairs what it can (prompts/repair.rs).
    let content: String = match tool {
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
        input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0) as u32,
        output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0) as u32,
    })
}
