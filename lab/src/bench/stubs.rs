//! The remote parts a load benchmark fakes, on 127.0.0.1: an
//! OpenAI-compatible embedding endpoint (deterministic hash vectors, so
//! recall is meaningful) and an OpenAI-compatible chat endpoint that takes
//! a fixed time per answer (a slow LLM for the stall table).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use mnemo_host::embedding::{EmbeddingProvider, HashEmbedder};
use serde_json::{Value, json};

/// The stub servers' base URL (`http://127.0.0.1:port/v1`); they stop with
/// the process.
pub struct Stubs {
    pub base: String,
}

#[derive(Clone)]
struct Setup {
    dimension: usize,
    llm_delay: Duration,
}

/// Starts both endpoints on one port.
pub fn start(dimension: usize, llm_delay: Duration) -> anyhow::Result<Stubs> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bench-stubs".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Err(anyhow::Error::from(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let app = Router::new()
                    .route("/v1/embeddings", post(embeddings))
                    .route("/v1/chat/completions", post(chat))
                    .with_state(Setup {
                        dimension,
                        llm_delay,
                    });
                let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(e.into()));
                        return;
                    }
                };
                let addr: anyhow::Result<SocketAddr> = listener.local_addr().map_err(Into::into);
                let _ = tx.send(addr);
                let _ = axum::serve(listener, app).await;
            });
        })?;
    let addr = rx.recv().context("the stub servers did not start")??;
    Ok(Stubs {
        base: format!("http://{addr}/v1"),
    })
}

async fn embeddings(State(setup): State<Setup>, Json(body): Json<Value>) -> Json<Value> {
    let texts: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let vectors = HashEmbedder::new(setup.dimension)
        .embed(&texts)
        .unwrap_or_default();
    let tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    Json(json!({
        "object": "list",
        "model": "bench-stub",
        "data": vectors.iter().enumerate().map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v})).collect::<Vec<_>>(),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

/// Answers after `llm_delay`: a fact for the session extraction (its first
/// turn restated), an empty decision list for any other tool.
async fn chat(State(setup): State<Setup>, Json(body): Json<Value>) -> Json<Value> {
    tokio::time::sleep(setup.llm_delay).await;
    let tool = body["tools"][0]["function"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let args = if tool == "save_facts" {
        let prompt = body["messages"][1]["content"].as_str().unwrap_or_default();
        let first = prompt.lines().nth(1).unwrap_or("0. user: nothing");
        let text = first.split_once(": ").map_or(first, |(_, t)| t);
        json!({"facts": [{"content": format!("The user said that {text}"), "turns": [0]}]})
    } else {
        json!({"decisions": []})
    };
    Json(json!({
        "model": "bench-stub",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 20},
    }))
}
