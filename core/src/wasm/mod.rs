//! The WASM edge of the core: the generated bindings, the ports bound to
//! the WIT imports, and (in `exports.rs`) the engine export. Conversions
//! come from the model's lists through `impl_cross!`; nothing here names a
//! record's fields.

wit_bindgen::generate!({
    path: "../wit/core",
    world: "mnemo",
});

mod engine_export;

use exports::mnemo::core::engine;
use mnemo::core::{clock, embedding, llm, ner, resources, storage, types};

use crate::cross::Cross;
use crate::error::CoreResult;
use crate::impl_cross;
use crate::model::*;
use crate::ports;

crate::cross_contract!();

/// A host answer, crossed into the core's types.
fn back<T: Cross<U>, U>(r: Result<T, types::Error>) -> CoreResult<U> {
    r.map(Cross::cross).map_err(Cross::cross)
}

/// The jieba dictionary, from the host (`text.rs` asks once, on the first
/// Chinese text).
pub(crate) fn jieba_dictionary() -> String {
    resources::jieba_dictionary()
}

/// The ports, bound to the host's imports.
pub struct WitPorts;

impl ports::Storage for WitPorts {
    fn insert_memory(&self, m: &Memory) -> CoreResult<()> {
        back(storage::insert_memory(&m.clone().cross()))
    }
    fn update_memory(&self, m: &Memory) -> CoreResult<()> {
        back(storage::update_memory(&m.clone().cross()))
    }
    fn get_memories(&self, ids: &[String]) -> CoreResult<Vec<Memory>> {
        back(storage::get_memories(ids))
    }
    fn find_exact(&self, namespaces: &[String], content: &str) -> CoreResult<Option<Memory>> {
        back(storage::find_exact(namespaces, content))
    }
    fn list_memories(&self, q: &ListQuery) -> CoreResult<Vec<Memory>> {
        back(storage::list_memories(&q.clone().cross()))
    }
    fn touch_memories(&self, ids: &[String], at: Millis) -> CoreResult<()> {
        back(storage::touch_memories(ids, at))
    }
    fn renew_memories(&self, ids: &[String], at: Millis) -> CoreResult<()> {
        back(storage::renew_memories(ids, at))
    }
    fn insert_episode(&self, e: &Episode) -> CoreResult<()> {
        back(storage::insert_episode(&e.clone().cross()))
    }
    fn get_episodes(&self, ids: &[String]) -> CoreResult<Vec<Episode>> {
        back(storage::get_episodes(ids))
    }
    fn get_session(&self, namespace: &str, id: &str) -> CoreResult<Option<Session>> {
        back(storage::get_session(namespace, id))
    }
    fn put_session(&self, s: &Session) -> CoreResult<()> {
        back(storage::put_session(&s.clone().cross()))
    }
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> CoreResult<Vec<Session>> {
        back(storage::pending_sessions(namespace, exclude))
    }
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> CoreResult<Vec<Episode>> {
        back(storage::session_episodes(
            namespace, session_id, offset, limit,
        ))
    }
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<Vec<ScoredId>> {
        let f = f.clone().cross();
        back(storage::fts_search(
            target.cross(),
            terms,
            &f,
            limit,
            context_weight,
        ))
    }
    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        back(storage::vector_search(
            target.cross(),
            v,
            &f.clone().cross(),
            limit,
        ))
    }
    fn near_search(
        &self,
        target: Target,
        vector: Option<&[f32]>,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<(Vec<ScoredId>, Vec<ScoredId>)> {
        back(storage::near_search(
            target.cross(),
            vector,
            terms,
            &f.clone().cross(),
            limit,
            context_weight,
        ))
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        back(storage::entity_search(
            target.cross(),
            names,
            &f.clone().cross(),
            limit,
        ))
    }
    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> CoreResult<()> {
        back(storage::put_vector(target.cross(), id, v))
    }
    fn get_vectors(&self, target: Target, ids: &[String]) -> CoreResult<Vec<(String, Vec<f32>)>> {
        back(storage::get_vectors(target.cross(), ids))
    }
    fn delete_vector(&self, target: Target, id: &str) -> CoreResult<()> {
        back(storage::delete_vector(target.cross(), id))
    }
    fn vectors_enabled(&self) -> CoreResult<bool> {
        back(storage::vectors_enabled())
    }
    fn find_entity(
        &self,
        namespace: &str,
        name: &str,
        t: EntityType,
    ) -> CoreResult<Option<Entity>> {
        back(storage::find_entity(namespace, name, t.cross()))
    }
    fn put_entity(&self, e: &Entity) -> CoreResult<()> {
        back(storage::put_entity(&e.clone().cross()))
    }
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> CoreResult<()> {
        back(storage::link_entity(target.cross(), item_id, entity_id))
    }
    fn find_entities(&self, namespaces: &[String], name: &str) -> CoreResult<Vec<Entity>> {
        back(storage::find_entities(namespaces, name))
    }
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> CoreResult<Vec<String>> {
        back(storage::linked_items(target.cross(), entity_id, limit))
    }
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> CoreResult<Vec<EnrichmentCandidate>> {
        back(storage::enrichment_candidates(
            target.cross(),
            max_entities,
            limit,
        ))
    }
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> CoreResult<()> {
        back(storage::mark_enriched(target.cross(), id, at))
    }
    fn put_fact(&self, f: &Fact) -> CoreResult<()> {
        back(storage::put_fact(&f.clone().cross()))
    }
    fn query_facts(&self, q: &FactQuery) -> CoreResult<Vec<Fact>> {
        back(storage::query_facts(&q.clone().cross()))
    }
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> CoreResult<Vec<(String, u64)>> {
        back(storage::tag_counts(namespaces, prefix))
    }
    fn stats(&self, namespaces: &[String]) -> CoreResult<StoreStats> {
        back(storage::stats(namespaces))
    }
    fn active_namespaces(&self) -> CoreResult<Vec<String>> {
        back(storage::active_namespaces())
    }
    fn log_decision(&self, entry: &Decision) -> CoreResult<()> {
        back(storage::log_decision(&entry.clone().cross()))
    }
    fn put_version(&self, v: &MemoryVersion) -> CoreResult<()> {
        back(storage::put_version(&v.clone().cross()))
    }
    fn memory_versions(&self, memory_id: &str) -> CoreResult<Vec<MemoryVersion>> {
        back(storage::memory_versions(memory_id))
    }
    fn get_meta(&self, key: &str) -> CoreResult<Option<String>> {
        back(storage::get_meta(key))
    }
    fn set_meta(&self, key: &str, value: &str) -> CoreResult<()> {
        back(storage::set_meta(key, value))
    }
}

impl ports::Embedder for WitPorts {
    fn info(&self) -> EmbedderInfo {
        embedding::info().cross()
    }
    fn embed(&self, texts: &[String]) -> CoreResult<Vec<Vec<f32>>> {
        back(embedding::embed(texts))
    }
}

impl ports::Llm for WitPorts {
    fn level(&self) -> LlmLevel {
        llm::level().cross()
    }
    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        back(llm::complete(&req.clone().cross()))
    }
}

impl ports::Ner for WitPorts {
    fn extract(&self, text: &str, strategy: NerStrategy) -> CoreResult<NerResult> {
        back(ner::extract(text, strategy.cross()))
    }
    fn accurate_available(&self) -> bool {
        ner::accurate_available()
    }
}

impl ports::Clock for WitPorts {
    fn now(&self) -> Millis {
        clock::now()
    }
    fn random(&self) -> u64 {
        clock::random()
    }
}

impl ports::Ports for WitPorts {
    type Storage = Self;
    type Embedder = Self;
    type Llm = Self;
    type Ner = Self;
    type Clock = Self;
    fn storage(&self) -> &Self {
        self
    }
    fn embedder(&self) -> &Self {
        self
    }
    fn llm(&self) -> &Self {
        self
    }
    fn ner(&self) -> &Self {
        self
    }
    fn clock(&self) -> &Self {
        self
    }
}
