//! The ports: every effect the core needs, as small traits. The WASM build
//! binds them to the WIT imports (`wasm.rs`); the native host implements them
//! directly; unit tests use the in-memory fakes of `testing/`.

use crate::error::CoreResult;
use crate::model::*;

/// Persistence. Mirrors the WIT `storage` interface.
pub trait Storage {
    fn insert_memory(&self, m: &Memory) -> CoreResult<()>;
    fn update_memory(&self, m: &Memory) -> CoreResult<()>;
    fn get_memories(&self, ids: &[String]) -> CoreResult<Vec<Memory>>;
    fn find_exact(&self, namespaces: &[String], content: &str) -> CoreResult<Option<Memory>>;
    fn list_memories(&self, q: &ListQuery) -> CoreResult<Vec<Memory>>;
    fn touch_memories(&self, ids: &[String], at: Millis) -> CoreResult<()>;
    /// Stamps `attributes.renewed_at` (shown to the agent; not an access).
    fn renew_memories(&self, ids: &[String], at: Millis) -> CoreResult<()>;

    fn insert_episode(&self, e: &Episode) -> CoreResult<()>;
    fn get_episodes(&self, ids: &[String]) -> CoreResult<Vec<Episode>>;

    fn get_session(&self, namespace: &str, id: &str) -> CoreResult<Option<Session>>;
    fn put_session(&self, s: &Session) -> CoreResult<()>;
    /// An empty namespace means every namespace.
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> CoreResult<Vec<Session>>;
    /// A session's active episodes in dialogue order.
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> CoreResult<Vec<Episode>>;

    /// BM25; an episode's context (the turn before it) counts `context_weight`.
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        filter: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<Vec<ScoredId>>;
    fn vector_search(
        &self,
        target: Target,
        vector: &[f32],
        filter: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>>;
    /// `vector_search` (when `vector` is given) and `fts_search` under one
    /// filter and limit, in that order. A host may run the two side by
    /// side (the native one does: insert dedup asks both, and the writer
    /// would otherwise wait for each in turn).
    fn near_search(
        &self,
        target: Target,
        vector: Option<&[f32]>,
        terms: &[String],
        filter: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<(Vec<ScoredId>, Vec<ScoredId>)> {
        let near = match vector {
            Some(v) => self.vector_search(target, v, filter, limit)?,
            None => Vec::new(),
        };
        let best = self.fts_search(target, terms, filter, limit, context_weight)?;
        Ok((near, best))
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        filter: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>>;
    fn put_vector(&self, target: Target, id: &str, vector: &[f32]) -> CoreResult<()>;
    fn get_vectors(&self, target: Target, ids: &[String]) -> CoreResult<Vec<(String, Vec<f32>)>>;
    /// Forgets an item's vector; the host's backfill embeds it again.
    fn delete_vector(&self, target: Target, id: &str) -> CoreResult<()>;
    fn vectors_enabled(&self) -> CoreResult<bool>;

    fn find_entity(
        &self,
        namespace: &str,
        name: &str,
        entity_type: EntityType,
    ) -> CoreResult<Option<Entity>>;
    fn put_entity(&self, e: &Entity) -> CoreResult<()>;
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> CoreResult<()>;
    fn find_entities(&self, namespaces: &[String], name: &str) -> CoreResult<Vec<Entity>>;
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> CoreResult<Vec<String>>;
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> CoreResult<Vec<EnrichmentCandidate>>;
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> CoreResult<()>;

    fn put_fact(&self, f: &Fact) -> CoreResult<()>;
    /// Newest `valid_from` first.
    fn query_facts(&self, q: &FactQuery) -> CoreResult<Vec<Fact>>;
    /// Tags starting with `prefix` and the summed access count of their memories.
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> CoreResult<Vec<(String, u64)>>;

    fn stats(&self, namespaces: &[String]) -> CoreResult<StoreStats>;
    /// The namespaces holding at least one active memory, in order.
    fn active_namespaces(&self) -> CoreResult<Vec<String>>;
    /// Appends a line to the decision log (what the lifecycle and the
    /// write paths decided, and why).
    fn log_decision(&self, entry: &Decision) -> CoreResult<()>;
    /// Keeps an earlier state of a memory; a (memory id, seq) already kept is left alone.
    fn put_version(&self, v: &MemoryVersion) -> CoreResult<()>;
    /// The kept states of one memory, oldest first.
    fn memory_versions(&self, memory_id: &str) -> CoreResult<Vec<MemoryVersion>>;
    fn get_meta(&self, key: &str) -> CoreResult<Option<String>>;
    fn set_meta(&self, key: &str, value: &str) -> CoreResult<()>;
}

/// Text embeddings, L2-normalised by the provider.
pub trait Embedder {
    fn info(&self) -> EmbedderInfo;
    fn embed(&self, texts: &[String]) -> CoreResult<Vec<Vec<f32>>>;
}

/// Chat completions.
pub trait Llm {
    fn level(&self) -> LlmLevel;
    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse>;
}

/// Named-entity recognition through the host's strategies.
pub trait Ner {
    /// What the strategy's providers found; a provider that failed is
    /// named in `failures` while the others still answer.
    fn extract(&self, text: &str, strategy: NerStrategy) -> CoreResult<NerResult>;
    fn accurate_available(&self) -> bool;
}

/// Time and randomness.
pub trait Clock {
    fn now(&self) -> Millis;
    fn random(&self) -> u64;
}

/// The bundle of ports an [`crate::Engine`] runs against.
pub trait Ports {
    type Storage: Storage;
    type Embedder: Embedder;
    type Llm: Llm;
    type Ner: Ner;
    type Clock: Clock;

    fn storage(&self) -> &Self::Storage;
    fn embedder(&self) -> &Self::Embedder;
    fn llm(&self) -> &Self::Llm;
    fn ner(&self) -> &Self::Ner;
    fn clock(&self) -> &Self::Clock;
}
