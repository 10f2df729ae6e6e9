//! OpenAI-compatible `POST {base}/chat/completions`.

use mnemo_core::CoreError;
use mnemo_core::model::{ChatRequest, ChatResponse};
use serde_json::{Value, json};

use super::{Endpoint, malformed};
use crate::http::{HttpPolicy, Limiter, post_json};

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
    if req.json {
        body["response_format"] = json!({"type": "json_object"});
    }
    let mut headers = Vec::new();
    if let Some(k) = &ep.api_key {
        headers.push(("Authorization", format!("Bearer {k}")));
    }
    let url = format!("{}/chat/completions", ep.base_url.trim_end_matches('/'));
    let v = post_json(&url, &headers, &body, policy, limiter)
        .map_err(|e| (CoreError::Llm(e.to_string()), e.outcome()))?;
    parse(&v).map_err(|e| (e, "malformed".to_string()))
}

fn parse(v: &Value) -> Result<ChatResponse, CoreError> {
    let choice = v["choices"].get(0).ok_or_else(|| malformed("no choices"))?;
    if choice["finish_reason"] == "length" {
        return Err(malformed(
            "truncated at max_tokens (finish_reason = length)",
        ));
    }
    let content = choice["message"]["content"]
        .as_str()
        .ok_or_else(|| malformed("choices[0].message.content is not text"))?
        .to_string();
    Ok(ChatResponse {
        content,
        model: v["model"].as_str().unwrap_or_default().to_string(),
        input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
        output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0) as u32,
    })
}
