//! `SqliteStore`: the core's `Storage` port over one SQLite connection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use mnemo_core::model::*;
use mnemo_core::ports::Storage;

use rusqlite::{Connection, params};

use super::ann::AnnIndex;
use super::filter::table;

use super::open_connection;
use super::vectors::{self, VectorState};

/// Most neighbours sqlite-vec returns per KNN query.
pub(super) const VEC_MAX_K: u32 = 4096;
/// KNN over-fetch, so post-filters (layer, kind, tags, deleted) still leave `limit`.
pub(super) const VEC_OVERFETCH: u32 = 3;

pub struct SqliteStore {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// What every connection of this process to the database shares.
    pub(super) shared: Arc<Shared>,
    /// Writer, reader or rehearsal (`reader.rs`).
    pub(super) role: super::reader::Role,
    /// The last text change committed when this connection's write
    /// transaction began (`begin_immediate`): what it may apply to the
    /// shared full-text index while the transaction is open (`text_store.rs`).
    pub(super) write_horizon: std::cell::Cell<Option<i64>>,
    /// The tokens of the rows this connection's index catch-ups read last.
    pub(super) text_docs: std::cell::RefCell<super::text::DocCache>,
    /// Its write transaction's own changes as its last search overlaid
    /// them (`None`: no transaction of `begin_immediate` is open).
    pub(super) own_text: std::cell::RefCell<Option<super::text::OwnText>>,
    /// This connection's small vector partitions, in memory (`exact.rs`).
    pub(super) exact: std::cell::RefCell<super::exact::ExactVectors>,
}

/// The in-memory state beside the database that the writer and the readers
/// share: the embedding lock's verdict, the HNSW graphs (a write through
/// one connection is found by a search through another) and the partition
/// counts that decide when a graph is worth building.
pub(super) struct Shared {
    vectors: RwLock<VectorState>,
    ann: Mutex<AnnIndex>,
    /// Rows per vector partition as last counted, and writes since.
    partition_rows: Mutex<HashMap<(Target, String), (usize, usize)>>,
    /// The database could not be written when it was opened (`open_connection`).
    pub(super) read_only: bool,
    /// The derived full-text index's partitions (`text/`).
    pub(super) text: Mutex<super::text::TextIndex>,
    /// Bumped when `vector_changes` loses entries (`ann_store.rs`): each
    /// connection's exact partitions (`exact.rs`) then start over.
    pub(super) vector_log_epoch: std::sync::atomic::AtomicU64,
}

/// A lock whose holder panicked still guards consistent data here (every
/// update is a single assignment or insert), so the poison is ignored.
fn unpoisoned<T>(r: Result<T, std::sync::PoisonError<T>>) -> T {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes to a partition between two counts of its rows (which decide
/// whether it is large enough for a graph).
pub(super) const RECOUNT_EVERY: usize = 1000;
/// A query term matching more rows than this is left out of the BM25 query
/// when the query has rarer terms (a bounded candidate list per channel).
pub(super) const FTS_TERM_MAX_DOCS: i64 = 5_000;
/// The terms of a BM25 query's two passes, given each term's row count
/// and the rows of the index. The first pass keeps the informative terms,
/// when there are any: a term is left out when it matches more than
/// `FTS_TERM_MAX_DOCS` rows, or at least half of them, where FTS5's idf,
/// ln((N − n + 0.5) / (n + 0.5)), is at most 0 and floored to 1e-6 — such
/// a term adds at most 2.2e-6 to a score, yet makes every row holding it a
/// candidate ("the", "I" in a store of dialogue). When that pass finds
/// fewer rows than asked, the second (if its terms differ) drops only the
/// terms above `FTS_TERM_MAX_DOCS`, so a row matching nothing but a
/// half-the-rows term still ranks, last, as it would in the full query.
/// Both stores apply it, so they rank alike.
pub(super) type Passes<T> = (Vec<(T, i64)>, Option<Vec<(T, i64)>>);

pub(super) fn query_passes<T: Clone>(counted: Vec<(T, i64)>, index_rows: i64) -> Passes<T> {
    let keep = |counted: &[(T, i64)], common: &dyn Fn(i64) -> bool| -> Vec<(T, i64)> {
        if counted.len() < 2 || counted.iter().all(|(_, df)| common(*df)) {
            return counted.to_vec();
        }
        counted
            .iter()
            .filter(|(_, df)| !common(*df))
            .cloned()
            .collect()
    };
    let wide = keep(&counted, &|df| df > FTS_TERM_MAX_DOCS);
    let first = keep(&counted, &|df| {
        df > FTS_TERM_MAX_DOCS || df.saturating_mul(2) >= index_rows
    });
    let second = (wide.len() != first.len()).then_some(wide);
    (first, second)
}

/// Runs `rank` on the first pass's terms, and on the second's when there is
/// one and the first found fewer than `limit` rows (`query_passes`).
pub(super) fn ranked_in_passes<P>(
    (first, second): (P, Option<P>),
    limit: u32,
    mut rank: impl FnMut(&P) -> R<Vec<ScoredId>>,
) -> R<Vec<ScoredId>> {
    let hits = rank(&first)?;
    match second {
        Some(terms) if (hits.len() as u32) < limit => rank(&terms),
        _ => Ok(hits),
    }
}

/// The FTS channel ranks this many times its limit by BM25 alone before
/// filtering (at least `FTS_SHORTLIST_MIN`); see `search.rs`.
pub(super) const FTS_SHORTLIST: u32 = 4;
pub(super) const FTS_SHORTLIST_MIN: u32 = 200;
/// Matches of one FTS query ranked at most (newest first): a query whose
/// terms are all common would otherwise rank most of the store. Twice
/// `FTS_TERM_MAX_DOCS`: a query of one or two rare terms is never cut.
pub(super) const FTS_SCAN_CAP: i64 = 2 * FTS_TERM_MAX_DOCS;
/// Default smallest partition served by the HNSW graph.
pub const ANN_MIN_ROWS: usize = 20_000;

pub(super) use super::{R, sql};

/// `s` with LIKE's wildcards escaped (escape character `\`).
pub(super) fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// `"a" OR "b"`: every term a quoted FTS5 string, so no user text is syntax.
pub(super) fn fts_match(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        // FTS5 reads a NUL as the end of the query: it would cut a string.
        .map(|t| t.replace('\0', " "))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

impl SqliteStore {
    /// Opens the database; vectors stay disabled until [`Self::lock_embedder`].
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let (conn, read_only) = open_connection(path)?;
        if read_only {
            tracing::warn!(db = %path.display(), "the database cannot be written: opened read-only; writes are refused");
        }
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            shared: Arc::new(Shared {
                vectors: RwLock::new(VectorState::Disabled {
                    reason: "no embedder configured".into(),
                }),
                ann: Mutex::new(AnnIndex::new(Some(ANN_MIN_ROWS))),
                partition_rows: Mutex::new(HashMap::new()),
                read_only,
                // A read-only database's partitions are loaded, never saved.
                text: Mutex::new(super::text::TextIndex::new(super::text::file::dir_of(path))),
                vector_log_epoch: Default::default(),
            }),
            // A read-only database is written by no one: its "writer" keeps a
            // read's effects aside like a reader (and they are dropped).
            role: if read_only {
                super::reader::Role::reader()
            } else {
                super::reader::Role::Writer
            },
            write_horizon: std::cell::Cell::new(None),
            text_docs: Default::default(),
            own_text: Default::default(),
            exact: Default::default(),
        })
    }

    pub(super) fn ann(&self) -> MutexGuard<'_, AnnIndex> {
        unpoisoned(self.shared.ann.lock())
    }

    pub(super) fn partition_rows(
        &self,
    ) -> MutexGuard<'_, HashMap<(Target, String), (usize, usize)>> {
        unpoisoned(self.shared.partition_rows.lock())
    }

    fn set_vector_state(&self, state: VectorState) {
        *unpoisoned(self.shared.vectors.write()) = state;
    }

    /// The smallest vector partition the HNSW graph serves; `None` keeps
    /// every search exact (sqlite-vec).
    pub fn set_ann_min_rows(&self, min_rows: Option<usize>) {
        self.set_ann(min_rows, None);
    }

    /// The same, and the fresh vectors at which a segment is built
    /// (`None`: `ANN_FLUSH_AT`).
    pub fn set_ann(&self, min_rows: Option<usize>, flush_at: Option<usize>) {
        let index = AnnIndex::new(min_rows);
        *self.ann() = match flush_at {
            Some(n) => index.with_flush_at(n),
            None => index,
        };
        self.partition_rows().clear();
    }

    /// Waits for graph builds in progress; (points, build ms) per graph.
    pub fn ann_wait(&self) -> Vec<(usize, u128)> {
        let built = self.ann().wait();
        self.ann_sync();
        built
    }

    /// The HNSW index at a glance.
    pub fn ann_status(&self) -> super::ann::AnnStatus {
        self.ann_sync();
        self.ann().status()
    }

    /// Checks (or sets, on first use) the embedding lock for this embedder.
    /// With vectors on, the saved HNSW graphs of this embedder are loaded.
    pub fn lock_embedder(&self, model: &str, dimension: u32) -> anyhow::Result<VectorState> {
        let state = vectors::ensure(&self.conn, model, dimension)?;
        self.set_vector_state(state.clone());
        if state.enabled()
            && let Err(e) = self.load_graphs(model, dimension)
        {
            tracing::warn!(error = %format!("{e:#}"), "saved HNSW graphs not loaded; rebuilt on demand");
        }
        Ok(state)
    }

    /// Forgets every vector and re-locks to a new embedder (`mnemo reindex --embeddings`).
    pub fn reset_vectors(&self, model: &str, dimension: u32) -> anyhow::Result<()> {
        vectors::reset(&self.conn, model, dimension)?;
        self.ann().clear();
        self.drop_graphs()?;
        self.load_graphs(model, dimension)?;
        self.set_vector_state(VectorState::Enabled {
            model: model.into(),
            dimension,
        });
        Ok(())
    }

    /// Whether the database was opened read-only (it cannot be written).
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    pub fn vector_state(&self) -> VectorState {
        unpoisoned(self.shared.vectors.read()).clone()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Active rows of `target` that have no vector yet, oldest first (from
    /// the waiting list: no scan of the store).
    pub fn missing_vectors(
        &self,
        target: Target,
        limit: u32,
    ) -> anyhow::Result<Vec<(String, String)>> {
        if !self.vector_state().enabled() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT x.id, x.content FROM vector_pending p JOIN {t} x ON x.rowid = p.row \
             WHERE p.target = ?2 AND x.valid_until IS NULL ORDER BY p.row LIMIT ?1"
        ))?;
        let rows = stmt.query_map(params![limit, table(target)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Whether active row `id` still has text `text` and no vector (what a
    /// background embedding checks before storing the vector it computed).
    pub fn vector_still_missing(
        &self,
        target: Target,
        id: &str,
        text: &str,
    ) -> anyhow::Result<bool> {
        let t = table(target);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT x.content FROM {t} x JOIN vector_pending p ON p.row = x.rowid AND p.target = ?2 \
             WHERE x.id = ?1 AND x.valid_until IS NULL"
        ))?;
        let now: Option<String> = stmt
            .query_row(params![id, table(target)], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        Ok(now.as_deref() == Some(text))
    }

    pub(super) fn vectors_on(&self) -> bool {
        unpoisoned(self.shared.vectors.read()).enabled()
    }
}

impl SqliteStore {
    /// Every metadata entry, by key.
    pub fn all_meta(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM metadata ORDER BY key")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every namespace that holds a memory or an episode.
    pub fn namespaces(&self) -> anyhow::Result<Vec<String>> {
        let mut stmt = self.conn.prepare(super::DISTINCT_NAMESPACES)?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// The port, method by method, over the per-concern files beside this one
/// (`memories.rs`, `dialogue.rs`, `search.rs`, `graph.rs`, `meta.rs`),
/// whose inherent methods of the same names do the work.
impl Storage for SqliteStore {
    fn insert_memory(&self, m: &Memory) -> R<()> {
        SqliteStore::insert_memory(self, m)
    }

    fn update_memory(&self, m: &Memory) -> R<()> {
        SqliteStore::update_memory(self, m)
    }

    fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
        SqliteStore::get_memories(self, ids)
    }

    fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        SqliteStore::find_exact(self, namespaces, content)
    }

    fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        SqliteStore::list_memories(self, q)
    }

    fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        SqliteStore::touch_memories(self, ids, at)
    }

    fn renew_memories(&self, ids: &[String], at: Millis) -> R<()> {
        SqliteStore::renew_memories(self, ids, at)
    }

    fn insert_episode(&self, e: &Episode) -> R<()> {
        SqliteStore::insert_episode(self, e)
    }

    fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        SqliteStore::get_episodes(self, ids)
    }

    fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        SqliteStore::get_session(self, namespace, id)
    }

    fn put_session(&self, s: &Session) -> R<()> {
        SqliteStore::put_session(self, s)
    }

    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        SqliteStore::pending_sessions(self, namespace, exclude)
    }

    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        SqliteStore::session_episodes(self, namespace, session_id, offset, limit)
    }

    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        SqliteStore::fts_search(self, target, terms, f, limit, context_weight)
    }

    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        SqliteStore::vector_search(self, target, v, f, limit)
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
        SqliteStore::near_search(self, target, v, terms, f, limit, context_weight)
    }

    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        SqliteStore::entity_search(self, target, names, f, limit)
    }

    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        SqliteStore::put_vector(self, target, id, v)
    }

    fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        SqliteStore::get_vectors(self, target, ids)
    }

    fn delete_vector(&self, target: Target, id: &str) -> R<()> {
        SqliteStore::delete_vector(self, target, id)
    }

    fn vectors_enabled(&self) -> R<bool> {
        SqliteStore::vectors_enabled(self)
    }

    fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
        SqliteStore::find_entity(self, namespace, name, t)
    }

    fn put_entity(&self, e: &Entity) -> R<()> {
        SqliteStore::put_entity(self, e)
    }

    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
        SqliteStore::link_entity(self, target, item_id, entity_id)
    }

    fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
        SqliteStore::find_entities(self, namespaces, name)
    }

    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
        SqliteStore::linked_items(self, target, entity_id, limit)
    }

    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> R<Vec<EnrichmentCandidate>> {
        SqliteStore::enrichment_candidates(self, target, max_entities, limit)
    }

    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        SqliteStore::mark_enriched(self, target, id, at)
    }

    fn put_fact(&self, f: &Fact) -> R<()> {
        SqliteStore::put_fact(self, f)
    }

    fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
        SqliteStore::query_facts(self, q)
    }

    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
        SqliteStore::tag_counts(self, namespaces, prefix)
    }

    fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
        SqliteStore::stats(self, namespaces)
    }

    fn active_namespaces(&self) -> R<Vec<String>> {
        SqliteStore::active_namespaces(self)
    }

    fn log_decision(&self, e: &Decision) -> R<()> {
        SqliteStore::log_decision(self, e)
    }

    fn put_version(&self, v: &MemoryVersion) -> R<()> {
        SqliteStore::put_version(self, v)
    }

    fn memory_versions(&self, memory_id: &str) -> R<Vec<MemoryVersion>> {
        SqliteStore::memory_versions(self, memory_id)
    }

    fn get_meta(&self, key: &str) -> R<Option<String>> {
        SqliteStore::get_meta(self, key)
    }

    fn set_meta(&self, key: &str, value: &str) -> R<()> {
        SqliteStore::set_meta(self, key, value)
    }
}
