//! Storage over Postgres + pgvector (issue 16): the same port as the SQLite
//! store, for many mnemo servers on one database. `MNEMO_DATABASE_URL=
//! postgres://…` (or `--db postgres://…`) selects it.
//!
//! One `PgStore` is one connection (the writer's, or a reader's: a pool of
//! them is the server's reader pool), used from the engine thread that owns
//! it, so blocking calls never run on the async executor. Readers keep a
//! read's effects for the writer as SQLite readers do (`reader.rs`).
//! Namespaces partition every query, as in the SQLite store.

mod conn;
mod coordinate;
mod graph;
mod host;
mod knn;
pub mod lock_waits;
mod memories;
mod meta;
pub mod schema;
mod search;
mod segments;
mod sql;
mod tail;
mod text;
pub mod tls;
mod vectors;

use std::cell::{Cell, RefCell, RefMut};
use std::sync::{Arc, RwLock};

use anyhow::Context;
use mnemo_core::CoreResult;
use mnemo_core::model::*;
use mnemo_core::ports::Storage;
use postgres::Client;

use conn::Conn;
pub use coordinate::Lead;
pub use graph::GraphRound;

use super::reader::{Effect, Role};
use super::vectors::VectorState;
use crate::storage::Locks;

pub(super) type R<T> = CoreResult<T>;

/// Whether `url` names a Postgres database (else it is a SQLite file).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

pub struct PgStore {
    client: RefCell<Conn>,
    url: String,
    /// The embedding lock's verdict, shared by the writer and its readers.
    vectors: Arc<RwLock<VectorState>>,
    /// Vectors per (table, namespace), shared likewise (`search.rs`).
    sizes: knn::Sizes,
    /// The namespaces known to be listed in the HNSW graph, shared likewise (`graph.rs`).
    listed: Listed,
    /// The backfill leader's counts of vectors outside the graph and its
    /// builds (`graph.rs`).
    surveys: graph::Surveys,
    /// The HNSW indexes searches walk, shared likewise (`segments.rs`).
    covers: graph::Covers,
    /// Sealed segments' vectors held until their index serves, shared
    /// likewise (`tail.rs`).
    tails: tail::Tails,
    /// The derived full-text index, shared likewise (`text.rs`).
    text: text::SharedText,
    role: Role,
    /// Transactions open on the connection: 0, 1 (`BEGIN`), more (savepoints).
    depth: Cell<u32>,
    /// The background jobs this connection leads (`coordinate.rs`).
    leading: Cell<u8>,
}

/// Namespaces (per table) listed in the HNSW graph.
type Listed = Arc<std::sync::Mutex<std::collections::HashSet<(Target, String)>>>;

fn unpoisoned<T>(r: Result<T, std::sync::PoisonError<T>>) -> T {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) fn pg_err(e: postgres::Error) -> mnemo_core::CoreError {
    // The server's message (with its detail) says more than the client's summary.
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    };
    mnemo_core::CoreError::Storage(text)
}

pub(super) fn pg<T>(r: Result<T, postgres::Error>) -> R<T> {
    r.map_err(pg_err)
}

impl PgStore {
    /// Connects to `url` and migrates its schema; vectors stay disabled
    /// until [`Self::lock_embedder`].
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let mut client = connect(url)?;
        schema::migrate(&mut client).context("migrating the Postgres schema")?;
        Ok(Self {
            client: RefCell::new(Conn::new(client)),
            url: url.to_string(),
            vectors: Arc::new(RwLock::new(VectorState::Disabled {
                reason: "no embedder configured".into(),
            })),
            sizes: knn::Sizes::default(),
            listed: Listed::default(),
            surveys: graph::Surveys::default(),
            covers: graph::Covers::default(),
            tails: tail::Tails::default(),
            text: text::SharedText::default(),
            role: Role::Writer,
            depth: Cell::new(0),
            leading: Cell::new(0),
        })
    }

    /// Another connection to the same database, sharing the vector state.
    fn beside(&self, role: Role) -> anyhow::Result<Self> {
        Ok(Self {
            client: RefCell::new(Conn::new(connect(&self.url)?)),
            url: self.url.clone(),
            vectors: Arc::clone(&self.vectors),
            sizes: self.sizes.clone(),
            listed: Arc::clone(&self.listed),
            surveys: graph::Surveys::default(),
            covers: Arc::clone(&self.covers),
            tails: self.tails.clone(),
            text: Arc::clone(&self.text),
            role,
            depth: Cell::new(0),
            leading: Cell::new(0),
        })
    }

    /// A reader: refuses writes but keeps a read's effects for the writer.
    pub fn reader(&self) -> anyhow::Result<Self> {
        self.beside(Role::reader())
    }

    /// Another writer: its transactions lock what they write, as every
    /// server's do (`begin`).
    pub fn writer(&self) -> anyhow::Result<Self> {
        self.beside(Role::Writer)
    }

    /// A connection whose writes succeed and are forgotten (`reader.rs`).
    pub fn rehearsal(&self) -> anyhow::Result<Self> {
        self.beside(Role::Rehearsal)
    }

    pub fn is_reader(&self) -> bool {
        !self.role.is_writer()
    }

    pub fn take_effects(&self) -> Vec<Effect> {
        self.role.take_effects()
    }

    pub fn drop_effects(&self) {
        drop(self.take_effects());
    }

    pub fn forget_touches(&self) {
        self.role.forget_touches()
    }

    /// Writes effects a reader kept (on the writer, inside a transaction).
    pub fn apply_effects(&self, effects: &[Effect]) -> R<()> {
        super::reader::apply(self, effects)
    }

    fn db(&self) -> RefMut<'_, Conn> {
        self.client.borrow_mut()
    }

    pub(super) fn absorbs(&self) -> bool {
        self.role.absorbs()
    }

    pub(super) fn defer(&self, effect: impl FnOnce() -> Effect) -> bool {
        self.role.defer(effect)
    }

    pub fn vector_state(&self) -> VectorState {
        unpoisoned(self.vectors.read()).clone()
    }

    pub fn vectors_enabled(&self) -> R<bool> {
        Ok(self.vectors_on())
    }

    pub(super) fn vectors_on(&self) -> bool {
        unpoisoned(self.vectors.read()).enabled()
    }

    fn set_vector_state(&self, state: VectorState) {
        *unpoisoned(self.vectors.write()) = state;
    }

    /// Opens the transaction of one engine call, or a savepoint inside an
    /// open one (a batch); `true` when nested.
    ///
    /// A write takes its namespaces' write locks for its transaction
    /// (`locks`), as SQLite's `BEGIN IMMEDIATE` takes the file's: the core
    /// reads, then writes what it read (dedup finds no twin, then inserts; a
    /// cycle plans, then applies), which is only sound with one writer of a
    /// namespace at a time — across every server on the database, not only
    /// within one. Without it two servers storing the same text both insert
    /// it, and two cycles updating the same rows in different orders
    /// deadlock. Every namespace write also holds the store lock shared, and
    /// a whole-store write holds it alone, so one never runs beside the
    /// other; all of it is taken in one order (store, then namespaces by
    /// key). Reads take none; a writer waits for its locks at most
    /// `LOCK_TIMEOUT_MS`. A savepoint takes what it needs beyond its
    /// transaction's (a lock held is taken again at no cost).
    pub fn begin(&self, locks: Option<&Locks>) -> anyhow::Result<bool> {
        let nested = self.depth.get() > 0;
        let mut sql = if nested {
            "SAVEPOINT core_call".to_string()
        } else {
            "BEGIN".to_string()
        };
        if let Some(locks) = locks {
            sql.push_str(&lock_statements(locks));
        }
        let waited = std::time::Instant::now();
        let opened = self.db().batch_execute(&sql);
        if let Some(locks) = locks {
            lock_waits::record(locks, waited.elapsed());
        }
        if let Err(e) = opened {
            // A `BEGIN` whose lock wait failed leaves a transaction open.
            if !nested {
                let _ = self.db().batch_execute("ROLLBACK");
            } else {
                let _ = self
                    .db()
                    .batch_execute("ROLLBACK TO core_call; RELEASE core_call");
            }
            return Err(e).with_context(|| format!("opening the call's transaction (`{sql}`)"));
        }
        self.depth.set(self.depth.get() + 1);
        Ok(nested)
    }

    /// Commits (or rolls back) what [`Self::begin`] opened.
    pub fn end(&self, nested: bool, commit: bool) -> anyhow::Result<()> {
        let sql = match (nested, commit) {
            (true, true) => "RELEASE core_call",
            (true, false) => "ROLLBACK TO core_call; RELEASE core_call",
            (false, true) => "COMMIT",
            (false, false) => "ROLLBACK",
        };
        self.depth.set(self.depth.get().saturating_sub(1));
        self.db()
            .batch_execute(sql)
            .with_context(|| format!("ending the call (`{sql}`)"))
    }

    /// Whether no transaction is open.
    pub fn is_autocommit(&self) -> bool {
        self.depth.get() == 0
    }

    /// The database's URL (with its password, if it has one).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// `url` with the password (if any) replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// One connection, set up as every one of mnemo's: UTC, filtered HNSW
/// searches that keep scanning until the filter is satisfied (pgvector
/// 0.8's iterative scans, in strict distance order), a statement and a
/// lock timeout so nothing waits forever, and every statement planned for
/// its own parameters (the layers are skewed by design, a small Buffer
/// and Core beside millions in Working, which a generic plan cannot see).
/// The 1M figures of docs/benchmarks.md are with it; one run without it, just after a
/// restart, gave 22 requests/s with recall p50 494 ms against 21 and 293.
/// TLS as the URL's `sslmode` says (`tls.rs`).
fn connect(url: &str) -> anyhow::Result<Client> {
    let mut client = tls::connect(url).with_context(|| format!("connecting to {}", redact(url)))?;
    client.batch_execute(&format!(
        "SET TIME ZONE 'UTC'; SET statement_timeout = {STATEMENT_TIMEOUT_MS}; \
         SET lock_timeout = {LOCK_TIMEOUT_MS}; SET hnsw.ef_search = {HNSW_EF_SEARCH}; \
         SET hnsw.iterative_scan = strict_order; SET plan_cache_mode = force_custom_plan;"
    ))?;
    Ok(client)
}

/// Key of the store's write lock (`begin`): shared by every namespace
/// write, held alone by a whole-store one.
const STORE_LOCK: i64 = 0x6d6e_656d_6f30;

/// The statements that take `locks`, in the one order every writer uses.
fn lock_statements(locks: &Locks) -> String {
    match locks {
        Locks::All => format!("; SELECT pg_advisory_xact_lock({STORE_LOCK})"),
        Locks::Namespaces(names) => {
            let mut keys: Vec<i64> = names.iter().map(|n| namespace_lock(n)).collect();
            keys.sort_unstable();
            keys.dedup();
            let mut sql = format!("; SELECT pg_advisory_xact_lock_shared({STORE_LOCK})");
            for key in keys {
                sql.push_str(&format!("; SELECT pg_advisory_xact_lock({key})"));
            }
            sql
        }
    }
}

/// A namespace's write-lock key: the first 8 bytes of a SHA-256 of its
/// name (the same on every server; a collision between two of a store's
/// namespaces, about one in 2^64 per pair, only makes them wait for each
/// other).
pub(super) fn namespace_lock(namespace: &str) -> i64 {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("mnemo write lock\0{namespace}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
    i64::from_be_bytes(bytes)
}
/// Longest a statement may run (ms): a runaway query fails, it does not hang a server.
const STATEMENT_TIMEOUT_MS: u32 = 30_000;
/// Longest a statement waits for a row lock (ms), as SQLite's busy timeout (5 s).
const LOCK_TIMEOUT_MS: u32 = 5_000;
/// HNSW candidates per search: pgvector's default is 40; 100 keeps recall
/// at the exact search's on mnemo's partitions (`ranking agreement` test).
const HNSW_EF_SEARCH: u32 = 100;

/// Text as the full-text index sees it: the core's segmentation (CJK runs
/// split into words) with diacritics folded away, as FTS5's
/// `remove_diacritics 2` does (`résumé` is found by `resume`).
pub(super) fn index_text(text: &str) -> String {
    fold(&mnemo_core::search_text::index_text(text))
}

/// Decomposes and drops combining marks; NUL (which Postgres text cannot
/// hold) becomes a space.
pub(super) fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    text.nfd()
        .filter(|c| !is_combining_mark(*c))
        .map(|c| if c == '\0' { ' ' } else { c })
        .nfc()
        .collect()
}

/// The port, method by method, over this folder's files.
impl Storage for PgStore {
    fn insert_memory(&self, m: &Memory) -> R<()> {
        PgStore::insert_memory(self, m)
    }
    fn update_memory(&self, m: &Memory) -> R<()> {
        PgStore::update_memory(self, m)
    }
    fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
        PgStore::get_memories(self, ids)
    }
    fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        PgStore::find_exact(self, namespaces, content)
    }
    fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        PgStore::list_memories(self, q)
    }
    fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        PgStore::touch_memories(self, ids, at)
    }
    fn renew_memories(&self, ids: &[String], at: Millis) -> R<()> {
        PgStore::renew_memories(self, ids, at)
    }
    fn insert_episode(&self, e: &Episode) -> R<()> {
        PgStore::insert_episode(self, e)
    }
    fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        PgStore::get_episodes(self, ids)
    }
    fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        PgStore::get_session(self, namespace, id)
    }
    fn put_session(&self, s: &Session) -> R<()> {
        PgStore::put_session(self, s)
    }
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        PgStore::pending_sessions(self, namespace, exclude)
    }
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        PgStore::session_episodes(self, namespace, session_id, offset, limit)
    }
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        PgStore::fts_search(self, target, terms, f, limit, context_weight)
    }
    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        PgStore::vector_search(self, target, v, f, limit)
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        PgStore::entity_search(self, target, names, f, limit)
    }
    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        PgStore::put_vector(self, target, id, v)
    }
    fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        PgStore::get_vectors(self, target, ids)
    }
    fn delete_vector(&self, target: Target, id: &str) -> R<()> {
        PgStore::delete_vector(self, target, id)
    }
    fn vectors_enabled(&self) -> R<bool> {
        PgStore::vectors_enabled(self)
    }
    fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
        PgStore::find_entity(self, namespace, name, t)
    }
    fn put_entity(&self, e: &Entity) -> R<()> {
        PgStore::put_entity(self, e)
    }
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
        PgStore::link_entity(self, target, item_id, entity_id)
    }
    fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
        PgStore::find_entities(self, namespaces, name)
    }
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
        PgStore::linked_items(self, target, entity_id, limit)
    }
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> R<Vec<EnrichmentCandidate>> {
        PgStore::enrichment_candidates(self, target, max_entities, limit)
    }
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        PgStore::mark_enriched(self, target, id, at)
    }
    fn put_fact(&self, f: &Fact) -> R<()> {
        PgStore::put_fact(self, f)
    }
    fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
        PgStore::query_facts(self, q)
    }
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
        PgStore::tag_counts(self, namespaces, prefix)
    }
    fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
        PgStore::stats(self, namespaces)
    }
    fn active_namespaces(&self) -> R<Vec<String>> {
        PgStore::active_namespaces(self)
    }
    fn log_decision(&self, e: &Decision) -> R<()> {
        PgStore::log_decision(self, e)
    }
    fn put_version(&self, v: &MemoryVersion) -> R<()> {
        PgStore::put_version(self, v)
    }
    fn memory_versions(&self, memory_id: &str) -> R<Vec<MemoryVersion>> {
        PgStore::memory_versions(self, memory_id)
    }
    fn get_meta(&self, key: &str) -> R<Option<String>> {
        PgStore::get_meta(self, key)
    }
    fn set_meta(&self, key: &str, value: &str) -> R<()> {
        PgStore::set_meta(self, key, value)
    }
}
