//! The WIT imports of the core world, implemented by delegating to the
//! host's ports (`crate::ports::HostPorts`) across the conversions.

use mnemo_core::ports::Storage as _;
use mnemo_core::ports::{Clock, Embedder, Llm, Ner};
use mnemo_core::{CoreResult, Cross};

use super::HostState;
use super::bindings::mnemo::core::{clock, embedding, llm, ner, resources, storage, types as wit};
use super::timings::timed;

type W<T> = Result<T, wit::Error>;

/// A port's answer, crossed into the bindings' types.
fn out<T: Cross<U>, U>(r: CoreResult<T>) -> W<U> {
    r.cross()
}

impl wit::Host for HostState {}

impl storage::Host for HostState {
    fn insert_memory(&mut self, m: wit::Memory) -> W<()> {
        timed("insert-memory", || {
            out(self.ports.store.insert_memory(&m.cross()))
        })
    }
    fn update_memory(&mut self, m: wit::Memory) -> W<()> {
        timed("update-memory", || {
            out(self.ports.store.update_memory(&m.cross()))
        })
    }
    fn get_memories(&mut self, ids: Vec<String>) -> W<Vec<wit::Memory>> {
        timed("get-memories", || out(self.ports.store.get_memories(&ids)))
    }
    fn find_exact(&mut self, namespaces: Vec<String>, content: String) -> W<Option<wit::Memory>> {
        timed("find-exact", || {
            out(self.ports.store.find_exact(&namespaces, &content))
        })
    }
    fn list_memories(&mut self, q: storage::ListQuery) -> W<Vec<wit::Memory>> {
        timed("list-memories", || {
            out(self.ports.store.list_memories(&q.cross()))
        })
    }
    fn touch_memories(&mut self, ids: Vec<String>, at: i64) -> W<()> {
        timed("touch-memories", || {
            out(self.ports.store.touch_memories(&ids, at))
        })
    }
    fn renew_memories(&mut self, ids: Vec<String>, at: i64) -> W<()> {
        timed("renew-memories", || {
            out(self.ports.store.renew_memories(&ids, at))
        })
    }
    fn insert_episode(&mut self, e: wit::Episode) -> W<()> {
        timed("insert-episode", || {
            out(self.ports.store.insert_episode(&e.cross()))
        })
    }
    fn get_episodes(&mut self, ids: Vec<String>) -> W<Vec<wit::Episode>> {
        timed("get-episodes", || out(self.ports.store.get_episodes(&ids)))
    }
    fn get_session(&mut self, namespace: String, id: String) -> W<Option<wit::Session>> {
        timed("get-session", || {
            out(self.ports.store.get_session(&namespace, &id))
        })
    }
    fn put_session(&mut self, s: wit::Session) -> W<()> {
        timed("put-session", || {
            out(self.ports.store.put_session(&s.cross()))
        })
    }
    fn pending_sessions(
        &mut self,
        namespace: String,
        exclude: Option<String>,
    ) -> W<Vec<wit::Session>> {
        timed("pending-sessions", || {
            out(self
                .ports
                .store
                .pending_sessions(&namespace, exclude.as_deref()))
        })
    }
    fn fts_search(
        &mut self,
        t: wit::Target,
        terms: Vec<String>,
        f: wit::SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> W<Vec<wit::ScoredId>> {
        timed("fts-search", || {
            out(self
                .ports
                .store
                .fts_search(t.cross(), &terms, &f.cross(), limit, context_weight))
        })
    }
    fn vector_search(
        &mut self,
        t: wit::Target,
        v: Vec<f32>,
        f: wit::SearchFilter,
        limit: u32,
    ) -> W<Vec<wit::ScoredId>> {
        timed("vector-search", || {
            out(self
                .ports
                .store
                .vector_search(t.cross(), &v, &f.cross(), limit))
        })
    }
    fn near_search(
        &mut self,
        t: wit::Target,
        v: Option<Vec<f32>>,
        terms: Vec<String>,
        f: wit::SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> W<(Vec<wit::ScoredId>, Vec<wit::ScoredId>)> {
        timed("near-search", || {
            out(self.ports.store.near_search(
                t.cross(),
                v.as_deref(),
                &terms,
                &f.cross(),
                limit,
                context_weight,
            ))
        })
    }
    fn entity_search(
        &mut self,
        t: wit::Target,
        names: Vec<String>,
        f: wit::SearchFilter,
        limit: u32,
    ) -> W<Vec<wit::ScoredId>> {
        timed("entity-search", || {
            out(self
                .ports
                .store
                .entity_search(t.cross(), &names, &f.cross(), limit))
        })
    }
    fn put_vector(&mut self, t: wit::Target, id: String, v: Vec<f32>) -> W<()> {
        timed("put-vector", || {
            out(self.ports.store.put_vector(t.cross(), &id, &v))
        })
    }
    fn get_vectors(&mut self, t: wit::Target, ids: Vec<String>) -> W<Vec<(String, Vec<f32>)>> {
        timed("get-vectors", || {
            out(self.ports.store.get_vectors(t.cross(), &ids))
        })
    }
    fn delete_vector(&mut self, t: wit::Target, id: String) -> W<()> {
        timed("delete-vector", || {
            out(self.ports.store.delete_vector(t.cross(), &id))
        })
    }
    fn vectors_enabled(&mut self) -> W<bool> {
        timed("vectors-enabled", || {
            out(self.ports.store.vectors_enabled())
        })
    }
    fn find_entity(
        &mut self,
        namespace: String,
        name: String,
        t: wit::EntityType,
    ) -> W<Option<wit::Entity>> {
        timed("find-entity", || {
            out(self.ports.store.find_entity(&namespace, &name, t.cross()))
        })
    }
    fn put_entity(&mut self, e: wit::Entity) -> W<()> {
        timed("put-entity", || {
            out(self.ports.store.put_entity(&e.cross()))
        })
    }
    fn link_entity(&mut self, t: wit::Target, item_id: String, entity_id: String) -> W<()> {
        timed("link-entity", || {
            out(self
                .ports
                .store
                .link_entity(t.cross(), &item_id, &entity_id))
        })
    }
    fn find_entities(&mut self, namespaces: Vec<String>, name: String) -> W<Vec<wit::Entity>> {
        timed("find-entities", || {
            out(self.ports.store.find_entities(&namespaces, &name))
        })
    }
    fn linked_items(&mut self, t: wit::Target, entity_id: String, limit: u32) -> W<Vec<String>> {
        timed("linked-items", || {
            out(self.ports.store.linked_items(t.cross(), &entity_id, limit))
        })
    }
    fn enrichment_candidates(
        &mut self,
        t: wit::Target,
        max_entities: u32,
        limit: u32,
    ) -> W<Vec<storage::EnrichmentCandidate>> {
        timed("enrichment-candidates", || {
            out(self
                .ports
                .store
                .enrichment_candidates(t.cross(), max_entities, limit))
        })
    }
    fn mark_enriched(&mut self, t: wit::Target, id: String, at: i64) -> W<()> {
        timed("mark-enriched", || {
            out(self.ports.store.mark_enriched(t.cross(), &id, at))
        })
    }
    fn put_fact(&mut self, f: wit::Fact) -> W<()> {
        timed("put-fact", || out(self.ports.store.put_fact(&f.cross())))
    }
    fn query_facts(&mut self, q: wit::FactQuery) -> W<Vec<wit::Fact>> {
        timed("query-facts", || {
            out(self.ports.store.query_facts(&q.cross()))
        })
    }
    fn tag_counts(&mut self, namespaces: Vec<String>, prefix: String) -> W<Vec<(String, u64)>> {
        timed("tag-counts", || {
            out(self.ports.store.tag_counts(&namespaces, &prefix))
        })
    }
    fn session_episodes(
        &mut self,
        namespace: String,
        session_id: String,
        offset: u32,
        limit: u32,
    ) -> W<Vec<wit::Episode>> {
        timed("session-episodes", || {
            out(self
                .ports
                .store
                .session_episodes(&namespace, &session_id, offset, limit))
        })
    }
    fn stats(&mut self, namespaces: Vec<String>) -> W<wit::StoreStats> {
        timed("stats", || out(self.ports.store.stats(&namespaces)))
    }
    fn active_namespaces(&mut self) -> W<Vec<String>> {
        timed("active-namespaces", || {
            out(self.ports.store.active_namespaces())
        })
    }
    fn log_decision(&mut self, e: wit::Decision) -> W<()> {
        timed("log-decision", || {
            out(self.ports.store.log_decision(&e.cross()))
        })
    }
    fn put_version(&mut self, v: wit::MemoryVersion) -> W<()> {
        timed("put-version", || {
            out(self.ports.store.put_version(&v.cross()))
        })
    }
    fn memory_versions(&mut self, memory_id: String) -> W<Vec<wit::MemoryVersion>> {
        timed("memory-versions", || {
            out(self.ports.store.memory_versions(&memory_id))
        })
    }
    fn get_meta(&mut self, key: String) -> W<Option<String>> {
        timed("get-meta", || out(self.ports.store.get_meta(&key)))
    }
    fn set_meta(&mut self, key: String, value: String) -> W<()> {
        timed("set-meta", || out(self.ports.store.set_meta(&key, &value)))
    }
}

impl embedding::Host for HostState {
    fn info(&mut self) -> embedding::EmbedderInfo {
        self.ports.embeddings.info().cross()
    }
    fn embed(&mut self, texts: Vec<String>) -> W<Vec<Vec<f32>>> {
        timed("embed", || out(self.ports.embeddings.embed(&texts)))
    }
}

impl llm::Host for HostState {
    fn level(&mut self) -> llm::LlmLevel {
        self.ports.llm.level().cross()
    }
    fn complete(&mut self, req: llm::ChatRequest) -> W<llm::ChatResponse> {
        timed("complete", || out(self.ports.llm.complete(&req.cross())))
    }
}

impl ner::Host for HostState {
    fn extract(&mut self, text: String, strategy: wit::NerStrategy) -> W<ner::NerResult> {
        timed("extract", || {
            out(self.ports.ner.extract(&text, strategy.cross()))
        })
    }
    fn accurate_available(&mut self) -> bool {
        self.ports.ner.accurate_available()
    }
}

impl resources::Host for HostState {
    fn jieba_dictionary(&mut self) -> String {
        mnemo_core::search_text::JIEBA_DICTIONARY.to_string()
    }
}

impl clock::Host for HostState {
    fn now(&mut self) -> i64 {
        self.ports.clock.now()
    }
    fn random(&mut self) -> u64 {
        self.ports.clock.random()
    }
}
