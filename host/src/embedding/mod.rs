//! Embedding providers behind the core's `Embedder` port, with a small
//! query cache. One file per backend. While a recall, a context or a
//! resume runs ([`Embeddings::searching`]) the core's texts go to the provider's query
//! path, which may be cheaper (the local MPNet's 8-bit weights); every
//! vector that is stored comes from `embed`.

mod bert;
mod hash;
mod layer;
mod local;
mod mpnet;
mod remote;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mnemo_core::model::EmbedderInfo;
use mnemo_core::ports::Embedder;
use mnemo_core::{CoreError, CoreResult};

use crate::ledger::{Ledger, Usage, now_ms};

pub use hash::HashEmbedder;
pub use local::{LocalEmbedder, Precision, configure_threads};
pub use remote::RemoteEmbedder;

/// Entries kept in the query-embedding cache before it is cleared.
const QUERY_CACHE_ENTRIES: usize = 1024;

/// A backend that turns texts into L2-normalised vectors.
pub trait EmbeddingProvider: Send + Sync {
    fn info(&self) -> EmbedderInfo;
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>>;
    /// The vectors of texts to search with, never stored: a provider may
    /// compute them more cheaply than `embed` (the local MPNet uses 8-bit
    /// weights, see `Precision`), as long as they compare with `embed`'s.
    fn embed_queries(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        self.embed(texts)
    }
    /// Whether the provider writes its own ledger entries (with the
    /// endpoint's token counts); otherwise `Embeddings` records each call.
    fn records_usage(&self) -> bool {
        false
    }
}

/// The provider the host runs, with a cache for single-text (query) calls;
/// every call that reaches the provider goes to the usage ledger.
pub struct Embeddings {
    /// Shared by the writers, the readers, the embedding worker and the
    /// server's embedding ahead of writes: one model in memory however many
    /// instances run.
    provider: Arc<dyn EmbeddingProvider>,
    /// Behind a mutex only so the worker can lend it to a rayon pool.
    cache: Mutex<HashMap<String, Vec<f32>>>,
    /// Query vectors, apart from `cache`: a vector made for searching is
    /// never handed to a write.
    queries: Mutex<HashMap<String, Vec<f32>>>,
    /// Set while a recall, context or resume runs
    /// ([`Embeddings::searching`]): the texts the core embeds then are
    /// queries.
    searching: Arc<AtomicBool>,
    ledger: Ledger,
}

/// While alive, the core's embeddings are queries (see
/// [`EmbeddingProvider::embed_queries`]).
pub struct Searching(Arc<AtomicBool>);

impl Drop for Searching {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Embeddings {
    pub fn new(provider: Box<dyn EmbeddingProvider>, ledger: Ledger) -> Self {
        Self {
            provider: Arc::from(provider),
            cache: Mutex::new(HashMap::new()),
            queries: Mutex::new(HashMap::new()),
            searching: Arc::new(AtomicBool::new(false)),
            ledger,
        }
    }

    /// Marks what the core embeds until the guard drops as queries: a
    /// recall stores no vector, so its texts may take the provider's
    /// query path.
    pub fn searching(&self) -> Searching {
        self.searching.store(true, Ordering::Release);
        Searching(Arc::clone(&self.searching))
    }

    /// The same provider and ledger, with a query cache of its own (for
    /// another instance on another thread).
    pub fn share(&self) -> Self {
        Self {
            provider: Arc::clone(&self.provider),
            cache: Mutex::new(HashMap::new()),
            queries: Mutex::new(HashMap::new()),
            searching: Arc::new(AtomicBool::new(false)),
            ledger: self.ledger.clone(),
        }
    }

    /// Puts vectors computed elsewhere (beside the writer, before a write:
    /// the server's `embed_ahead`) into the cache, so the write finds them
    /// instead of calling the provider.
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
        self.call_provider(texts, false)
    }

    /// One call to the provider (its query path when `queries`), recorded
    /// in the usage ledger.
    fn call_provider(&self, texts: &[String], queries: bool) -> anyhow::Result<Vec<Vec<f32>>> {
        let started = std::time::Instant::now();
        let result = if queries {
            self.provider.embed_queries(texts)
        } else {
            self.provider.embed(texts)
        };
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
        let queries = self.searching.load(Ordering::Acquire);
        let cache = if queries { &self.queries } else { &self.cache };
        if let [one] = texts
            && let Some(v) = cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(one)
                .cloned()
        {
            return Ok(vec![v]);
        }
        let out = self
            .call_provider(texts, queries)
            .map_err(|e| CoreError::Embedding(format!("{e:#}")))?;
        if out.len() != texts.len() {
            return Err(CoreError::Embedding(format!(
                "asked for {} vectors, got {}",
                texts.len(),
                out.len()
            )));
        }
        if let ([one], [v]) = (texts, out.as_slice()) {
            let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks each vector with the path that made it: 1.0 from `embed`,
    /// 2.0 from `embed_queries`.
    struct TwoPaths;

    impl EmbeddingProvider for TwoPaths {
        fn info(&self) -> EmbedderInfo {
            EmbedderInfo {
                model: "two-paths".into(),
                dimension: 1,
            }
        }
        fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }
        fn embed_queries(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![2.0]).collect())
        }
    }

    fn one(e: &Embeddings, text: &str) -> f32 {
        e.embed(&[text.to_string()]).unwrap()[0][0]
    }

    /// While a recall runs the core's texts are queries; before and after,
    /// and in batches, they are vectors to store, and a query's vector is
    /// never served from the cache to a write (or the other way round).
    #[test]
    fn a_recall_embeds_on_the_query_path_and_a_write_never_does() {
        let e = Embeddings::new(Box::new(TwoPaths), Ledger::default());
        assert_eq!(one(&e, "tea"), 1.0);
        {
            let _recall = e.searching();
            assert_eq!(one(&e, "tea"), 2.0, "not the cached stored vector");
            assert_eq!(one(&e, "coffee"), 2.0);
            let batch = e.embed_batch(&["coffee".to_string()]).unwrap();
            assert_eq!(batch[0][0], 1.0, "background batches store");
        }
        assert_eq!(one(&e, "coffee"), 1.0, "not the cached query vector");
        assert_eq!(one(&e, "tea"), 1.0);
        let shared = e.share();
        let _recall = e.searching();
        assert_eq!(
            one(&shared, "milk"),
            1.0,
            "another instance is not searching"
        );
    }
}
