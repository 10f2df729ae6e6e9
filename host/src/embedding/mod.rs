//! Embedding providers behind the core's `Embedder` port, with a small
//! query cache. One file per backend.

mod hash;
mod local;
mod mpnet;
mod remote;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mnemo_core::model::EmbedderInfo;
use mnemo_core::ports::Embedder;
use mnemo_core::{CoreError, CoreResult};

use crate::ledger::{Ledger, Usage, now_ms};

pub use hash::HashEmbedder;
pub use local::{LocalEmbedder, pin_thread_count};
pub use remote::RemoteEmbedder;

/// Entries kept in the query-embedding cache before it is cleared.
const QUERY_CACHE_ENTRIES: usize = 1024;

/// A backend that turns texts into L2-normalised vectors.
pub trait EmbeddingProvider: Send + Sync {
    fn info(&self) -> EmbedderInfo;
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>>;
    /// Whether the provider writes its own ledger entries (with the
    /// endpoint's token counts); otherwise `Embeddings` records each call.
    fn records_usage(&self) -> bool {
        false
    }
}

/// The provider the host runs, with a cache for single-text (query) calls;
/// every call that reaches the provider goes to the usage ledger.
pub struct Embeddings {
    /// Shared by the writer, the readers and the embedding worker: one
    /// model in memory however many instances run.
    provider: Arc<dyn EmbeddingProvider>,
    /// Behind a mutex only so the worker can lend it to a rayon pool.
    cache: Mutex<HashMap<String, Vec<f32>>>,
    ledger: Ledger,
}

impl Embeddings {
    pub fn new(provider: Box<dyn EmbeddingProvider>, ledger: Ledger) -> Self {
        Self {
            provider: Arc::from(provider),
            cache: Mutex::new(HashMap::new()),
            ledger,
        }
    }

    /// The same provider and ledger, with a query cache of its own (for
    /// another instance on another thread).
    pub fn share(&self) -> Self {
        Self {
            provider: Arc::clone(&self.provider),
            cache: Mutex::new(HashMap::new()),
            ledger: self.ledger.clone(),
        }
    }

    /// Puts vectors computed elsewhere (on a reader, before a write) into
    /// the cache, so the write finds them instead of calling the provider.
    pub fn prime(&self, texts: &[String], vectors: Vec<Vec<f32>>) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() + texts.len() > QUERY_CACHE_ENTRIES {
            cache.clear();
        }
        for (t, v) in texts.iter().zip(vectors) {
            cache.insert(t.clone(), v);
        }
    }

    /// Batch embedding for background work: no cache.
    pub fn embed_batch(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let started = std::time::Instant::now();
        let result = self.provider.embed(texts);
        if !self.provider.records_usage() {
            self.ledger.record(Usage {
                at: now_ms(),
                component: "embedding".into(),
                model: self.provider.info().model,
                input_tokens: texts
                    .iter()
                    .map(|t| mnemo_core::search_text::estimate_tokens(t) as u32)
                    .sum(),
                output_tokens: 0,
                duration_ms: started.elapsed().as_millis() as u64,
                outcome: if result.is_ok() {
                    "ok".into()
                } else {
                    "error".into()
                },
            });
        }
        result
    }
}

impl Embedder for Embeddings {
    fn info(&self) -> EmbedderInfo {
        self.provider.info()
    }

    fn embed(&self, texts: &[String]) -> CoreResult<Vec<Vec<f32>>> {
        if let [one] = texts
            && let Some(v) = self
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(one)
                .cloned()
        {
            return Ok(vec![v]);
        }
        let out = self
            .embed_batch(texts)
            .map_err(|e| CoreError::Embedding(format!("{e:#}")))?;
        if out.len() != texts.len() {
            return Err(CoreError::Embedding(format!(
                "asked for {} vectors, got {}",
                texts.len(),
                out.len()
            )));
        }
        if let ([one], [v]) = (texts, out.as_slice()) {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.len() >= QUERY_CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(one.clone(), v.clone());
        }
        Ok(out)
    }
}

/// Scales `v` to unit length: the core's, so every embedder normalises alike.
pub use mnemo_core::normalize;
