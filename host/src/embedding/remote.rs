//! Embeddings from a remote endpoint through an LLM provider plugin's
//! `embed` (`openai`: any OpenAI-compatible `/embeddings`; `ollama`:
//! `/api/embed`; or a plugin from the folder), batched, under the shared
//! retry policy and concurrency limit, each call in the usage ledger.
//! Matryoshka: asks for `dimensions` if told to, and truncates and
//! renormalises whatever comes back to the configured dimension.

use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use mnemo_core::model::EmbedderInfo;

use super::{EmbeddingProvider, normalize};
use crate::http::{HttpPolicy, Limiter};
use crate::ledger::{Ledger, Usage, now_ms};
use crate::plugins::llm::{Grant, LlmPlugin};

/// Texts per request.
const BATCH: usize = 64;

pub struct RemoteEmbedder {
    pub plugin: Arc<LlmPlugin>,
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

impl RemoteEmbedder {
    fn call(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let grant = Grant {
            base_url: self.base_url.clone(),
            key: self.api_key.clone(),
            policy: self.policy.clone(),
            limiter: self.limiter.clone(),
        };
        let dims = self.send_dimensions.then_some(self.dimension as u32);
        let started = Instant::now();
        let (result, wire) = self.plugin.embed(grant, &self.model, texts, dims);
        let (tokens, outcome) = match &result {
            Ok(e) => (e.input_tokens, "ok".to_string()),
            Err(_) => (0, wire.outcome().unwrap_or_else(|| "failed".into())),
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
        let embedded = result.map_err(|e| anyhow!("{e}"))?;
        embedded
            .vectors
            .into_iter()
            .map(|mut v| {
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

impl EmbeddingProvider for RemoteEmbedder {
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
