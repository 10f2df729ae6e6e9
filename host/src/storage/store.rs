//! `Store`: the backend a configuration names — a SQLite file (the embedded
//! default) or a Postgres database (`postgres://…`, many servers on one
//! store). The host holds a `Store`; each call goes to the backend's
//! method of the same name, so both keep one contract (the core's
//! `Storage` port, checked by `tests/it/contract.rs` against both) and the
//! host's own reads (export, integrity, the ledger) are written once per
//! backend, not once per caller.

use std::path::Path;

use mnemo_core::model::*;
use mnemo_core::ports::Storage;

use super::R;
use super::export::LinkedEntity;
use super::postgres::{Lead, PgStore, is_postgres_url};
use super::reader::Effect;
use super::{DecisionFilter, Integrity, SqliteStore, UsageSummary, VectorState};
use crate::storage::Usage;

pub enum Store {
    Sqlite(Box<SqliteStore>),
    Postgres(Box<PgStore>),
}

/// `$s` bound to whichever backend `$store` holds, then `$e`.
macro_rules! both {
    ($store:expr, $s:ident => $e:expr) => {
        match $store {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

impl Store {
    /// Opens `location`: a `postgres://` URL, else a SQLite file path.
    pub fn open(location: &Path) -> anyhow::Result<Self> {
        match location.to_str().filter(|l| is_postgres_url(l)) {
            Some(url) => Ok(Store::Postgres(Box::new(PgStore::open(url)?))),
            None => Ok(Store::Sqlite(Box::new(SqliteStore::open(location)?))),
        }
    }

    /// The SQLite store, if that is the backend (benchmarks and tests that read its file).
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match self {
            Store::Sqlite(s) => Some(s),
            Store::Postgres(_) => None,
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    pub fn reader(&self) -> anyhow::Result<Store> {
        Ok(match self {
            Store::Sqlite(s) => Store::Sqlite(Box::new(s.reader()?)),
            Store::Postgres(p) => Store::Postgres(Box::new(p.reader()?)),
        })
    }

    /// Another read-write connection, where writes lock namespaces
    /// (Postgres); `None` on a SQLite file, whose one writer is the file's.
    pub fn writer_beside(&self) -> anyhow::Result<Option<Store>> {
        Ok(match self {
            Store::Sqlite(_) => None,
            Store::Postgres(p) => Some(Store::Postgres(Box::new(p.writer()?))),
        })
    }

    pub fn rehearsal(&self) -> anyhow::Result<Store> {
        Ok(match self {
            Store::Sqlite(s) => Store::Sqlite(Box::new(s.rehearsal()?)),
            Store::Postgres(p) => Store::Postgres(Box::new(p.rehearsal()?)),
        })
    }

    /// Whether this server runs background `job` (on Postgres, one of the
    /// servers sharing the database does; a SQLite file has one server).
    pub fn lead(&self, job: Lead) -> bool {
        match self {
            Store::Sqlite(_) => true,
            Store::Postgres(p) => p.lead(job),
        }
    }

    pub fn is_reader(&self) -> bool {
        both!(self, s => s.is_reader())
    }

    /// Whether the database cannot be written (a read-only SQLite file).
    pub fn is_read_only(&self) -> bool {
        match self {
            Store::Sqlite(s) => s.is_read_only(),
            Store::Postgres(_) => false,
        }
    }

    pub fn take_effects(&self) -> Vec<Effect> {
        both!(self, s => s.take_effects())
    }

    pub fn drop_effects(&self) {
        both!(self, s => s.drop_effects())
    }

    /// Forgets a reader's kept accesses and renewals (not its decisions):
    /// the read was made by a key that may not write the namespace.
    pub fn forget_touches(&self) {
        both!(self, s => s.forget_touches())
    }

    /// The namespaces of memories `ids` on Postgres, whose writes lock
    /// namespaces; none on SQLite, whose one writer locks the file.
    pub fn namespaces_of(&self, ids: &[String]) -> R<Vec<String>> {
        match self {
            Store::Sqlite(_) => Ok(Vec::new()),
            Store::Postgres(p) => p.namespaces_of(ids),
        }
    }

    pub fn apply_effects(&self, effects: &[Effect]) -> R<()> {
        both!(self, s => s.apply_effects(effects))
    }

    pub fn vector_state(&self) -> VectorState {
        both!(self, s => s.vector_state())
    }

    pub fn lock_embedder(&self, model: &str, dimension: u32) -> anyhow::Result<VectorState> {
        both!(self, s => s.lock_embedder(model, dimension))
    }

    pub fn reset_vectors(&self, model: &str, dimension: u32) -> anyhow::Result<()> {
        both!(self, s => s.reset_vectors(model, dimension))
    }

    pub fn missing_vectors(
        &self,
        target: Target,
        limit: u32,
    ) -> anyhow::Result<Vec<(String, String)>> {
        both!(self, s => s.missing_vectors(target, limit))
    }

    pub fn vector_still_missing(
        &self,
        target: Target,
        id: &str,
        text: &str,
    ) -> anyhow::Result<bool> {
        both!(self, s => s.vector_still_missing(target, id, text))
    }

    /// The HNSW settings of the SQLite store (Postgres has pgvector's index).
    pub fn set_ann(&self, min_rows: Option<usize>, flush_at: Option<usize>) {
        if let Store::Sqlite(s) = self {
            s.set_ann(min_rows, flush_at);
        }
    }

    pub fn set_ann_min_rows(&self, min_rows: Option<usize>) {
        if let Store::Sqlite(s) = self {
            s.set_ann_min_rows(min_rows);
        }
    }

    /// Turns the derived full-text index on or off (`storage/text/`,
    /// `storage/postgres/text.rs`; off, FTS5 or SQL answers every search).
    pub fn set_text_index(&self, on: bool) {
        match self {
            Store::Sqlite(s) => s.set_text_index(on),
            Store::Postgres(s) => s.set_text_index(on),
        }
    }

    /// The smallest full-text partition saved to disk beside a SQLite
    /// database (`None`: none is); Postgres's servers keep theirs in memory.
    pub fn set_text_save_min_rows(&self, rows: Option<usize>) {
        if let Store::Sqlite(s) = self {
            s.set_text_save_min_rows(rows);
        }
    }

    /// Queues the saved full-text partitions for loading (`serve`, at
    /// start).
    pub fn text_preload(&self) {
        if let Store::Sqlite(s) = self {
            s.text_preload();
        }
    }

    /// Ends the full-text partitions' builder thread, before the engines
    /// close the database: no partition is built after.
    pub fn close_text_builder(&self) {
        match self {
            Store::Sqlite(s) => s.close_text_builder(),
            Store::Postgres(s) => s.close_text_builder(),
        }
    }

    /// The derived full-text index at a glance.
    pub fn text_status(&self) -> Option<super::text::TextStatus> {
        match self {
            Store::Sqlite(s) => Some(s.text_status()),
            Store::Postgres(s) => Some(s.text_status()),
        }
    }

    /// Queues the build of `ns`'s full-text partition unless this server
    /// holds it or builds it, as a search would (`text_store.rs`,
    /// `postgres/text.rs`). A bulk write calls it, so the searches after it
    /// find the partition built instead of answering from FTS5 (BM25 in
    /// SQL on Postgres) while it builds: 338–367 ms a recall for the 15 s
    /// a 1,000,000-row partition took to build after an import
    /// (docs/benchmarks.md).
    pub fn text_warm(&self, target: Target, ns: &str) {
        match self {
            Store::Sqlite(s) => s.text_warm(target, ns),
            Store::Postgres(s) => s.text_warm(target, ns),
        }
    }

    /// Applies the committed text changes to the derived full-text index
    /// (in the background: `server/engine.rs`).
    pub fn text_catch_up_all(&self) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(s) => Ok(s.text_catch_up_all()?),
            Store::Postgres(s) => Ok(s.text_catch_up_all()?),
        }
    }

    /// Whether `text_changes` holds more than it keeps (any connection may
    /// ask; the writer prunes).
    pub fn text_prune_due(&self) -> bool {
        match self {
            Store::Sqlite(s) => s.text_prune_due(),
            Store::Postgres(s) => s.text_prune_due(),
        }
    }

    /// Drops old entries of `text_changes` (the writer, from time to
    /// time); the entries dropped.
    pub fn prune_text_changes(&self) -> anyhow::Result<usize> {
        match self {
            Store::Sqlite(s) => s.prune_text_changes(),
            Store::Postgres(s) => s.prune_text_changes(),
        }
    }

    /// Waits for HNSW builds in progress (SQLite; none in Postgres).
    pub fn ann_wait(&self) -> Vec<(usize, u128)> {
        match self {
            Store::Sqlite(s) => s.ann_wait(),
            Store::Postgres(_) => Vec::new(),
        }
    }

    /// The HNSW graphs at a glance: the SQLite store's segments, or what
    /// Postgres's graph holds (`None` when it cannot be read: logged).
    pub fn ann_status(&self) -> Option<super::ann::AnnStatus> {
        match self {
            Store::Sqlite(s) => Some(s.ann_status()),
            Store::Postgres(p) => p
                .graph_status()
                .inspect_err(|e| tracing::warn!(error = %format!("{e:#}"), "reading the HNSW graph's state failed"))
                .ok(),
        }
    }

    /// Folds the pending changes of Postgres's full-text counts (in the
    /// background: `server/engine.rs`); nothing to do on SQLite.
    pub fn fold_counts(&self) -> anyhow::Result<u64> {
        match self {
            Store::Sqlite(_) => Ok(0),
            Store::Postgres(p) => p.fold_counts(),
        }
    }

    /// Lists Postgres's large namespaces and starts the next build of
    /// their HNSW segments (in the background: `server/engine.rs`;
    /// `postgres/graph.rs` says why); nothing to do on SQLite, whose graphs
    /// are its own.
    pub fn grow_graphs(&self) -> anyhow::Result<super::GraphRound> {
        match self {
            Store::Sqlite(_) => Ok(Default::default()),
            Store::Postgres(p) => p.grow_graphs(),
        }
    }

    /// Holds in memory the sealed HNSW segments no index serves yet, once
    /// no write can enter them, and lets go of the built ones (every
    /// server, in the background: `postgres/tail.rs`); nothing on SQLite,
    /// whose fresh rows are its own.
    pub fn tail_catch_up(&self) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(_) => Ok(()),
            Store::Postgres(p) => p.tail_catch_up(),
        }
    }

    /// (segments, rows) of sealed segments held in memory
    /// ([`Store::tail_catch_up`]).
    pub fn tail_status(&self) -> (usize, usize) {
        match self {
            Store::Sqlite(_) => (0, 0),
            Store::Postgres(p) => p.tail_status(),
        }
    }

    pub fn memories_changed(&self) -> u64 {
        both!(self, s => s.memories_changed())
    }

    pub fn needs_topic_tree(&self) -> R<bool> {
        both!(self, s => s.needs_topic_tree())
    }

    pub fn integrity(&self) -> anyhow::Result<Integrity> {
        both!(self, s => s.integrity())
    }

    pub fn decision_log(&self, f: &DecisionFilter) -> anyhow::Result<Vec<Decision>> {
        both!(self, s => s.decision_log(f))
    }

    pub fn sessions(
        &self,
        namespace: &str,
        pending: bool,
        limit: u32,
    ) -> anyhow::Result<Vec<Session>> {
        both!(self, s => s.sessions(namespace, pending, limit))
    }

    pub fn record_usage(&self, entries: &[Usage]) -> anyhow::Result<()> {
        both!(self, s => s.record_usage(entries))
    }

    pub fn usage(&self, limit: u32) -> anyhow::Result<Vec<Usage>> {
        both!(self, s => s.usage(limit))
    }

    pub fn usage_summary(&self) -> anyhow::Result<Vec<UsageSummary>> {
        both!(self, s => s.usage_summary())
    }

    pub fn namespaces(&self) -> anyhow::Result<Vec<String>> {
        both!(self, s => s.namespaces())
    }

    pub fn all_meta(&self) -> anyhow::Result<Vec<(String, String)>> {
        both!(self, s => s.all_meta())
    }

    /// Opens a transaction for a batch of writes outside an engine call
    /// (`mnemo migrate`); end it with [`Self::end_batch`].
    pub fn begin_batch(&self) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(s) => s.begin_immediate(),
            Store::Postgres(p) => p.begin(Some(&super::Locks::All)).map(drop),
        }
    }

    pub fn end_batch(&self, commit: bool) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(s) => {
                s.ending(false, commit);
                Ok(s.connection()
                    .execute_batch(if commit { "COMMIT" } else { "ROLLBACK" })?)
            }
            Store::Postgres(p) => p.end(false, commit),
        }
    }

    pub fn all_memories(&self, ns: Option<&str>) -> anyhow::Result<Vec<Memory>> {
        both!(self, s => s.all_memories(ns))
    }

    pub fn all_episodes(&self, ns: Option<&str>) -> anyhow::Result<Vec<Episode>> {
        both!(self, s => s.all_episodes(ns))
    }

    pub fn all_sessions(&self, ns: Option<&str>) -> anyhow::Result<Vec<Session>> {
        both!(self, s => s.all_sessions(ns))
    }

    pub fn all_versions(&self, ns: Option<&str>) -> anyhow::Result<Vec<MemoryVersion>> {
        both!(self, s => s.all_versions(ns))
    }

    pub fn all_facts(&self, ns: Option<&str>) -> anyhow::Result<Vec<Fact>> {
        both!(self, s => s.all_facts(ns))
    }

    pub fn all_entities(&self, ns: Option<&str>) -> anyhow::Result<Vec<LinkedEntity>> {
        both!(self, s => s.all_entities(ns))
    }
}

/// The port, forwarded to the backend.
impl Storage for Store {
    fn insert_memory(&self, m: &Memory) -> R<()> {
        both!(self, s => s.insert_memory(m))
    }
    fn update_memory(&self, m: &Memory) -> R<()> {
        both!(self, s => s.update_memory(m))
    }
    fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
        both!(self, s => s.get_memories(ids))
    }
    fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        both!(self, s => s.find_exact(namespaces, content))
    }
    fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        both!(self, s => s.list_memories(q))
    }
    fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        both!(self, s => s.touch_memories(ids, at))
    }
    fn renew_memories(&self, ids: &[String], at: Millis) -> R<()> {
        both!(self, s => s.renew_memories(ids, at))
    }
    fn insert_episode(&self, e: &Episode) -> R<()> {
        both!(self, s => s.insert_episode(e))
    }
    fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        both!(self, s => s.get_episodes(ids))
    }
    fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        both!(self, s => s.get_session(namespace, id))
    }
    fn put_session(&self, x: &Session) -> R<()> {
        both!(self, s => s.put_session(x))
    }
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        both!(self, s => s.pending_sessions(namespace, exclude))
    }
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        both!(self, s => s.session_episodes(namespace, session_id, offset, limit))
    }
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        both!(self, s => s.fts_search(target, terms, f, limit, context_weight))
    }
    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        both!(self, s => s.vector_search(target, v, f, limit))
    }
    fn near_search(
        &self,
        target: Target,
        v: Option<&[f32]>,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<(Vec<ScoredId>, Vec<ScoredId>)> {
        both!(self, s => s.near_search(target, v, terms, f, limit, context_weight))
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        both!(self, s => s.entity_search(target, names, f, limit))
    }
    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        both!(self, s => s.put_vector(target, id, v))
    }
    fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        both!(self, s => s.get_vectors(target, ids))
    }
    fn delete_vector(&self, target: Target, id: &str) -> R<()> {
        both!(self, s => s.delete_vector(target, id))
    }
    fn vectors_enabled(&self) -> R<bool> {
        both!(self, s => s.vectors_enabled())
    }
    fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
        both!(self, s => s.find_entity(namespace, name, t))
    }
    fn put_entity(&self, e: &Entity) -> R<()> {
        both!(self, s => s.put_entity(e))
    }
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
        both!(self, s => s.link_entity(target, item_id, entity_id))
    }
    fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
        both!(self, s => s.find_entities(namespaces, name))
    }
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
        both!(self, s => s.linked_items(target, entity_id, limit))
    }
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> R<Vec<EnrichmentCandidate>> {
        both!(self, s => s.enrichment_candidates(target, max_entities, limit))
    }
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        both!(self, s => s.mark_enriched(target, id, at))
    }
    fn put_fact(&self, f: &Fact) -> R<()> {
        both!(self, s => s.put_fact(f))
    }
    fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
        both!(self, s => s.query_facts(q))
    }
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
        both!(self, s => s.tag_counts(namespaces, prefix))
    }
    fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
        both!(self, s => s.stats(namespaces))
    }
    fn active_namespaces(&self) -> R<Vec<String>> {
        both!(self, s => s.active_namespaces())
    }
    fn log_decision(&self, e: &Decision) -> R<()> {
        both!(self, s => s.log_decision(e))
    }
    fn put_version(&self, v: &MemoryVersion) -> R<()> {
        both!(self, s => s.put_version(v))
    }
    fn memory_versions(&self, memory_id: &str) -> R<Vec<MemoryVersion>> {
        both!(self, s => s.memory_versions(memory_id))
    }
    fn get_meta(&self, key: &str) -> R<Option<String>> {
        both!(self, s => s.get_meta(key))
    }
    fn set_meta(&self, key: &str, value: &str) -> R<()> {
        both!(self, s => s.set_meta(key, value))
    }
}
