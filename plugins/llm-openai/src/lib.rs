//! The `openai` LLM provider: `POST {base}/chat/completions` with a forced
//! function call (or `response_format: json_object`) for structured output,
//! and `POST {base}/embeddings`. It speaks to anything OpenAI-compatible:
//! OpenAI, Ollama's `/v1`, llama.cpp's server, vLLM. The key is the host's
//! business (`Authorization: Bearer`), never this plugin's.

use mnemo_llm_sdk::http::{join, post_json};
use mnemo_llm_sdk::serde_json::{Value, json};
use mnemo_llm_sdk::{
    Auth, Capability, ChatRequest, ChatResponse, EmbedRequest, EmbedResponse, Error, Info,
    Provider, Usage,
};

pub struct OpenAi;

fn malformed(what: impl std::fmt::Display) -> Error {
    Error::MalformedResponse(what.to_string())
}

/// The request body of one chat completion.
pub fn chat_body(r: &ChatRequest) -> Result<Value, Error> {
    let mut body = json!({
        "model": r.model,
        "messages": r.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "max_tokens": r.max_tokens,
    });
    if let Some(t) = r.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(tool) = &r.tool {
        let parameters = tool.schema()?;
        let function =
            json!({ "name": tool.name, "description": tool.description, "parameters": parameters });
        body["tools"] = json!([{ "type": "function", "function": function }]);
        body["tool_choice"] = json!({ "type": "function", "function": { "name": tool.name } });
    } else if r.json {
        body["response_format"] = json!({"type": "json_object"});
    }
    Ok(body)
}

/// Reads a chat completion: the forced call's arguments as sent or, from a
/// model that ignored the tool, its text (the core repairs what it can).
pub fn parse_chat(v: &Value, tool: Option<&str>) -> Result<ChatResponse, Error> {
    let choice = v["choices"].get(0).ok_or_else(|| malformed("no choices"))?;
    if choice["finish_reason"] == "length" {
        return Err(malformed(
            "truncated at max_tokens (finish_reason = length)",
        ));
    }
    let text = choice["message"]["content"]
        .as_str()
        .filter(|t| !t.trim().is_empty());
    let content = match tool {
        Some(name) => {
            let call = choice["message"]["tool_calls"]
                .as_array()
                .and_then(|calls| calls.iter().find(|c| c["function"]["name"] == name));
            match (call, text) {
                (Some(call), _) => match &call["function"]["arguments"] {
                    Value::String(args) => args.clone(),
                    args @ Value::Object(_) => args.to_string(),
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
        usage: Usage {
            input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
            output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0) as u32,
        },
    })
}

/// Reads an embeddings answer, putting the vectors back in input order.
pub fn parse_embeddings(v: &Value, expected: usize) -> Result<EmbedResponse, Error> {
    let data = v["data"]
        .as_array()
        .ok_or_else(|| malformed("no `data` array"))?;
    if data.len() != expected {
        return Err(malformed(format!(
            "{} vectors for {expected} texts",
            data.len()
        )));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (i, item) in data.iter().enumerate() {
        let at = item["index"].as_u64().map_or(i, |x| x as usize);
        let vector = item["embedding"]
            .as_array()
            .ok_or_else(|| malformed("an item has no `embedding`"))?
            .iter()
            .map(|x| {
                x.as_f64()
                    .map(|f| f as f32)
                    .ok_or_else(|| malformed("a non-number in a vector"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        match vectors.get_mut(at) {
            Some(slot @ None) => *slot = Some(vector),
            _ => return Err(malformed(format!("index {at} is out of range or repeated"))),
        }
    }
    Ok(EmbedResponse {
        vectors: vectors.into_iter().flatten().collect(),
        model: v["model"].as_str().unwrap_or_default().to_string(),
        usage: Usage {
            input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
            output_tokens: 0,
        },
    })
}

impl Provider for OpenAi {
    fn info() -> Info {
        Info {
            name: "openai".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            auth: Auth::Bearer,
            capabilities: vec![Capability::Chat, Capability::Embed],
        }
    }

    fn chat(base_url: &str, r: &ChatRequest) -> Result<ChatResponse, Error> {
        let v = post_json(&join(base_url, "chat/completions"), &[], &chat_body(r)?)?;
        parse_chat(&v, r.tool.as_ref().map(|t| t.name.as_str()))
    }

    fn embed(base_url: &str, r: &EmbedRequest) -> Result<EmbedResponse, Error> {
        let mut body = json!({"model": r.model, "input": r.texts});
        if let Some(d) = r.dimensions {
            body["dimensions"] = json!(d);
        }
        let v = post_json(&join(base_url, "embeddings"), &[], &body)?;
        parse_embeddings(&v, r.texts.len())
    }
}

mnemo_llm_sdk::export_provider!(OpenAi);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_length_cut_is_malformed_and_text_stands_in_for_a_missing_call() {
        let cut =
            json!({"choices": [{"finish_reason": "length", "message": {"content": "{\"a\":"}}]});
        assert!(matches!(
            parse_chat(&cut, None),
            Err(Error::MalformedResponse(_))
        ));
        let prose = json!({"model": "m", "choices": [{"finish_reason": "stop", "message": {"content": "promote"}}]});
        assert_eq!(
            parse_chat(&prose, Some("decide")).unwrap().content,
            "promote"
        );
    }

    #[test]
    fn embeddings_come_back_in_input_order() {
        let v =
            json!({"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]});
        assert_eq!(
            parse_embeddings(&v, 2).unwrap().vectors,
            vec![vec![1.0], vec![2.0]]
        );
        assert!(parse_embeddings(&v, 3).is_err());
    }
}
