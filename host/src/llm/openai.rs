//! OpenAI-compatible `POST {base}/chat/completions`, with JSON mode or a
//! forced function call for structured output.

use mnemo_core::CoreError;
use mnemo_core::model::{ChatRequest, ChatResponse, ToolSpec};
use serde_json::{Value, json};

use super::{Endpoint, malformed};
use crate::http::{HttpPolicy, Limiter, post_json};

/// A tool's JSON Schema, or an input error naming the tool.
pub(super) fn schema(tool: &ToolSpec) -> Result<Value, (CoreError, String)> {
    serde_json::from_str(&tool.parameters).map_err(|e| {
        let msg = format!("tool `{}` parameters are not a JSON schema: {e}", tool.name);
        (CoreError::InvalidInput(msg), "invalid".to_string())
    })
}

/// The answer, or the error with its ledger outcome.
pub(super) fn complete(
    ep: &Endpoint,
    req: &ChatRequest,
    max_tokens: u32,
    policy: &HttpPolicy,
    limiter: &Limiter,
) -> Result<ChatResponse, (CoreError, String)> {
    let mut body = json!({
        "model": ep.model,
        "messages": req.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "max_tokens": max_tokens,
    });
    if let Some(tool) = &req.tool {
        let function = json!({ "name": tool.name, "description": tool.description, "parameters": schema(tool)? });
        body["tools"] = json!([{ "type": "function", "function": function }]);
        body["tool_choice"] = json!({ "type": "function", "function": { "name": tool.name } });
    } else if req.json {
        body["response_format"] = json!({"type": "json_object"});
    }
    let mut headers = Vec::new();
    if let Some(k) = &ep.api_key {
        headers.push(("Authorization", format!("Bearer {k}")));
    }
    let url = format!("{}/chat/completions", ep.base_url.trim_end_matches('/'));
    let v = post_json(&url, &headers, &body, policy, limiter)
        .map_err(|e| (CoreError::Llm(e.to_string()), e.outcome()))?;
    parse(&v, req.tool.as_ref().map(|t| t.name.as_str())).map_err(|e| (e, "malformed".to_string()))
}

fn parse(v: &Value, tool: Option<&str>) -> Result<ChatResponse, CoreError> {
    let choice = v["choices"].get(0).ok_or_else(|| malformed("no choices"))?;
    if choice["finish_reason"] == "length" {
        return Err(malformed(
            "truncated at max_tokens (finish_reason = length)",
        ));
    }
    let text = choice["message"]["content"]
        .as_str()
        .filter(|t| !t.trim().is_empty());
    // The tool call's arguments as sent, or, from a model that ignored the
    // tool, its text: the core repairs what it can read (prompts/repair.rs)
    // and shows the model its error once.
    let content = match tool {
        Some(name) => {
            let call = choice["message"]["tool_calls"]
                .as_array()
                .and_then(|calls| calls.iter().find(|c| c["function"]["name"] == name));
            match (call, text) {
                (Some(call), _) => match &call["function"]["arguments"] {
                    Value::String(args) => args.clone(),
                    Value::Object(_) => call["function"]["arguments"].to_string(),
                    _ => return Err(malformed("tool arguments are neither text nor an object")),
                },
                (None, Some(text)) => text.to_string(),
                (None, None) => return Err(malformed(format!("expected a call of tool `{name}`"))),
            }
        }
        None => text
            .ok_or_else(|| malformed("choices[0].message.content is not text"))?
            .to_string(),
    };
    Ok(ChatResponse {
        content,
        model: v["model"].as_str().unwrap_or_default().to_string(),
        input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
        output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0) as u32,
    })
}
