//! Any OpenAI-compatible `POST {base}/embeddings` endpoint, batched, with the
//! shared retry policy and concurrency limit; each call goes to the usage
//! ledger. Matryoshka: asks for `dimensions` and truncates + renormalises
//! whatever comes back to the configured dimension.

use std::time::Instant;

use anyhow::{Context, anyhow};
use mnemo_core::model::EmbedderInfo;
use serde_json::json;

use super::{EmbeddingProvider, normalize};
use crate::http::{HttpPolicy, Limiter, post_json};
use crate::ledger::{Ledger, Usage, now_ms};

/// Texts per request.
const BATCH: usize = 64;

pub struct HttpEmbedder {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub dimension: usize,
    /// Send `dimensions` in the request (text-embedding-3 models accept it).
    pub send_dimensions: bool,
    pub policy: HttpPolicy,
    pub limiter: Limiter,
    pub ledger: Ledger,
}

impl HttpEmbedder {
    fn call(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut body = json!({ "model": self.model, "input": texts });
        if self.send_dimensions {
            body["dimensions"] = json!(self.dimension);
        }
        let mut headers = Vec::new();
        if let Some(k) = &self.api_key {
            headers.push(("Authorization", format!("Bearer {k}")));
        }
        let url = format!("{}/embeddings", self.base_url.trim_end_matches('/'));
        let started = Instant::now();
        let result = post_json(&url, &headers, &body, &self.policy, &self.limiter);
        let (tokens, outcome) = match &result {
            Ok(v) => (
                v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
                "ok".to_string(),
            ),
            Err(e) => (0, e.outcome()),
        };
        self.ledger.record(Usage {
            at: now_ms(),
            component: "embedding".into(),
            model: self.model.clone(),
            input_tokens: tokens,
            output_tokens: 0,
            duration_ms: started.elapsed().as_millis() as u64,
            outcome,
        });
        let v = result?;
        let mut data: Vec<(u64, Vec<f32>)> = v["data"]
            .as_array()
            .ok_or_else(|| anyhow!("malformed embeddings response: no `data` list"))?
            .iter()
            .map(|d| {
                let idx = d["index"].as_u64().unwrap_or(0);
                let vec = serde_json::from_value::<Vec<f32>>(d["embedding"].clone()).context(
                    "malformed embeddings response: `embedding` is not a list of numbers",
                )?;
                Ok((idx, vec))
            })
            .collect::<anyhow::Result<_>>()?;
        anyhow::ensure!(
            data.len() == texts.len(),
            "asked for {} embeddings, got {}",
            texts.len(),
            data.len()
        );
        data.sort_by_key(|(i, _)| *i);
        data.into_iter()
            .map(|(_, mut v)| {
                anyhow::ensure!(
                    v.len() >= self.dimension,
                    "the endpoint returned {} dimensions; MNEMO_EMBEDDING_DIM is {}",
                    v.len(),
                    self.dimension
                );
                v.truncate(self.dimension);
                normalize(&mut v);
                Ok(v)
            })
            .collect()
    }
}

impl EmbeddingProvider for HttpEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model: format!("{}@{}", self.model, self.dimension),
            dimension: self.dimension as u32,
        }
    }

    fn records_usage(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.call(chunk)?);
        }
        Ok(out)
    }
}
