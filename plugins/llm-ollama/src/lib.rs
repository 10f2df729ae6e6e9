//! The `ollama` LLM provider: Ollama's native API, which the host never
//! knew — `POST {base}/api/chat` with `stream: false` and, for structured
//! output, the tool's JSON Schema as `format` (Ollama constrains decoding to
//! it), and `POST {base}/api/embed`. It exists to show a new provider is a
//! plugin, not a host change. Ollama has no key (`Auth::None`).

use mnemo_llm_sdk::http::{join, post_json};
use mnemo_llm_sdk::serde_json::{Value, json};
use mnemo_llm_sdk::{
    Auth, Capability, ChatRequest, ChatResponse, EmbedRequest, EmbedResponse, Error, Info,
    Provider, Usage,
};

pub struct Ollama;

fn malformed(what: impl std::fmt::Display) -> Error {
    Error::MalformedResponse(what.to_string())
}

/// The request body of one chat call.
pub fn chat_body(r: &ChatRequest) -> Result<Value, Error> {
    let mut options = json!({ "num_predict": r.max_tokens });
    if let Some(t) = r.temperature {
        options["temperature"] = json!(t);
    }
    let mut body = json!({
        "model": r.model,
        "messages": r.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "stream": false,
        "options": options,
    });
    if let Some(tool) = &r.tool {
        let schema = tool.schema()?;
        body["format"] = schema;
    } else if r.json {
        body["format"] = json!("json");
    }
    Ok(body)
}

/// Reads a chat answer: `message.content`, cut-offs reported as malformed.
pub fn parse_chat(v: &Value) -> Result<ChatResponse, Error> {
    if v["done_reason"] == "length" {
        return Err(malformed("truncated at num_predict (done_reason = length)"));
    }
    if let Some(e) = v["error"].as_str() {
        return Err(Error::InvalidRequest(e.to_string()));
    }
    let content = v["message"]["content"]
        .as_str()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| malformed("message.content is not text"))?;
    Ok(ChatResponse {
        content: content.to_string(),
        model: v["model"].as_str().unwrap_or_default().to_string(),
        usage: Usage {
            input_tokens: v["prompt_eval_count"].as_u64().unwrap_or(0) as u32,
            output_tokens: v["eval_count"].as_u64().unwrap_or(0) as u32,
        },
    })
}

/// Reads `/api/embed`'s answer.
pub fn parse_embed(v: &Value, expected: usize) -> Result<EmbedResponse, Error> {
    let vectors = v["embeddings"]
        .as_array()
        .ok_or_else(|| malformed("no `embeddings` array"))?
        .iter()
        .map(|row| {
            row.as_array()
                .ok_or_else(|| malformed("a vector is not an array"))?
                .iter()
                .map(|x| {
                    x.as_f64()
                        .map(|f| f as f32)
                        .ok_or_else(|| malformed("a non-number in a vector"))
                })
                .collect::<Result<Vec<f32>, Error>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    if vectors.len() != expected {
        return Err(malformed(format!(
            "{} vectors for {expected} texts",
            vectors.len()
        )));
    }
    Ok(EmbedResponse {
        vectors,
        model: v["model"].as_str().unwrap_or_default().to_string(),
        usage: Usage {
            input_tokens: v["prompt_eval_count"].as_u64().unwrap_or(0) as u32,
            output_tokens: 0,
        },
    })
}

impl Provider for Ollama {
    fn info() -> Info {
        Info {
            name: "ollama".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            auth: Auth::None,
            capabilities: vec![Capability::Chat, Capability::Embed],
        }
    }

    fn chat(base_url: &str, r: &ChatRequest) -> Result<ChatResponse, Error> {
        let v = post_json(&join(base_url, "api/chat"), &[], &chat_body(r)?)?;
        parse_chat(&v)
    }

    fn embed(base_url: &str, r: &EmbedRequest) -> Result<EmbedResponse, Error> {
        let mut body = json!({"model": r.model, "input": r.texts});
        if let Some(d) = r.dimensions {
            body["dimensions"] = json!(d);
        }
        let v = post_json(&join(base_url, "api/embed"), &[], &body)?;
        parse_embed(&v, r.texts.len())
    }
}

mnemo_llm_sdk::export_provider!(Ollama);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_llm_sdk::http::{Response, with_transport};
    use mnemo_llm_sdk::{Message, Tool};

    #[test]
    fn a_tool_becomes_the_format_and_the_answer_is_read() {
        let r = ChatRequest {
            model: "llama3.2".into(),
            messages: vec![Message {
                role: "user".into(),
                content: "hi".into(),
            }],
            tool: Some(Tool {
                name: "decide".into(),
                description: "d".into(),
                parameters: r#"{"type":"object"}"#.into(),
            }),
            json: true,
            max_tokens: 16,
            temperature: None,
        };
        let out = with_transport(
            |req| {
                let sent: Value = mnemo_llm_sdk::serde_json::from_slice(&req.body).unwrap();
                assert_eq!(req.url, "http://o:11434/api/chat");
                assert_eq!(sent["format"]["type"], "object");
                assert_eq!(sent["stream"], false);
                Ok(Response {
                    status: 200,
                    headers: vec![],
                    body: br#"{"model":"llama3.2","message":{"role":"assistant","content":"{\"decision\":\"keep\"}"},"done_reason":"stop","prompt_eval_count":9,"eval_count":4}"#.to_vec(),
                })
            },
            || Ollama::chat("http://o:11434/", &r),
        )
        .unwrap();
        assert_eq!(out.content, r#"{"decision":"keep"}"#);
        assert_eq!(
            out.usage,
            Usage {
                input_tokens: 9,
                output_tokens: 4
            }
        );
    }
}
