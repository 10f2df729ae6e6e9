//! The derived full-text index: BM25 over postings kept per namespace, in
//! memory beside the SQLite store, so a search reads only its own
//! namespace's postings of its own terms.
//!
//! FTS5 stays the store's full-text index of record (the JavaScript host
//! searches it; it answers while a partition of this index builds). What it
//! cannot do is rank without walking the store: its `bm25()` counts each
//! query term's rows by reading the term's whole doclist — every tenant's —
//! on every query, and scores every match. This index holds, per (table,
//! namespace), each term's postings and the partition's row and token
//! counts, so a term's document frequency is a length and a search touches
//! one tenant's rows.
//!
//! It is derived, never a source of truth: a partition is built from the
//! table on its first search, and kept exact by replaying `text_changes`
//! (a log the schema's triggers append to in the writing transaction) from
//! the last change it applied. A large partition is also saved beside the
//! database with that mark (`file.rs`), so a restart loads it and replays
//! only what came after. A kill -9 loses nothing — the next process loads
//! the last whole file, or builds from the table — and another process's
//! writes arrive through the log. The tokens are FTS5's own
//! (`tokenizer.rs`), the arithmetic FTS5's (`partition.rs`), and a search
//! reads only the postings that can reach its best rows (`top.rs`, over
//! the lists of `postings.rs`); the statistics are the namespace's, not
//! the whole table's, which is the only place a ranking can move (and it
//! does not in a store of one namespace).

pub(super) mod file;
mod leaders;
mod own;
mod partition;
mod postings;
mod ranking;
mod tokenizer;
mod top;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mnemo_core::CoreResult;
use mnemo_core::model::{ScoredId, Target};
use rmcp::schemars::{self, JsonSchema};
use rusqlite::{Connection, OptionalExtension};

pub use own::OwnText;
pub use partition::{Overlay, Partition, Tokenized};
pub use ranking::Ranking;
pub use tokenizer::{Purpose, Tokenizer};

/// A partition of at most this many rows is built on the search that first
/// needs it, on the caller's connection; a larger one by the background
/// builder, FTS5 answering until it is ready. Measured: 100,000 rows of
/// `mnemo-lab bench serve`'s corpus built in 0.9 s (`MNEMO_LOG=info` logs
/// each build), ~110,000 rows/s, so this bounds the wait to about 45 ms.
pub const TEXT_INLINE_BUILD_ROWS: i64 = 5_000;
/// Whether a namespace a bulk write reached, of `rows` as counted, has
/// its partition built now (`Store::text_warm`): past
/// `TEXT_INLINE_BUILD_ROWS`. A count that failed is logged; the first
/// search builds the partition then.
pub(super) fn warm_due(ns: &str, rows: Result<i64, impl std::fmt::Display>) -> bool {
    match rows {
        Ok(rows) => rows > TEXT_INLINE_BUILD_ROWS,
        Err(e) => {
            tracing::warn!(namespace = ns, error = %e, "not counted; its first search builds the full-text partition");
            false
        }
    }
}

/// `text_changes` keeps at least this many of its newest entries; older
/// ones are dropped by the writer (`SqliteStore::prune_text_changes`). A
/// partition that fell further behind is rebuilt from its table.
pub(super) const TEXT_CHANGES_KEEP: i64 = 100_000;
/// The index's best-scored rows are checked against a search's filter
/// this many times its limit at first, twice as many each round after
/// (the answer is the same for any size: a round only ends the search when
/// no row left can enter the top). Most filters pass most rows, so the
/// first round usually ends it, with a few rows read instead of the 200
/// FTS5's path reads at least (dedup asks for 5). Not measured apart from
/// the same commit's `NOT INDEXED` (`filtered_top`).
pub(super) const TEXT_FIRST_CHECK: usize = 2;
/// A partition of at least this many rows is saved to disk (`file.rs`):
/// the ones built away from the searches; a smaller one rebuilds within
/// the inline bound above. The `text_save_min_rows` setting overrides it.
pub const TEXT_SAVE_MIN_ROWS: usize = TEXT_INLINE_BUILD_ROWS as usize;
/// A saved partition is written again once this many changes were applied
/// to it: a restart replays at most about this many rows of the log
/// (each read and tokenized, ~110,000 rows/s as builds go), and the file
/// is rewritten at most once per this many writes to its namespace.
pub(super) const TEXT_SAVE_EVERY: u64 = 10_000;
/// Rows whose tokens a connection keeps (`DocCache`): more than a
/// transaction's own writes usually are (`bench serve` batches 100).
pub(super) const TEXT_DOC_CACHE: usize = 1_024;

/// The derived full-text index at a glance (`/health`).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, JsonSchema)]
pub struct TextStatus {
    /// Whether searches of named namespaces are answered by the index.
    pub enabled: bool,
    /// (table, namespace) partitions held in memory.
    pub partitions: usize,
    /// Rows in them.
    pub rows: i64,
    /// Postings in them (a row's distinct terms): the index's size.
    pub postings: usize,
    /// Partitions being built (FTS5 answers their searches meanwhile).
    pub building: usize,
    /// Partitions read from their saved files since the server started,
    /// instead of built from their tables (SQLite; `text_save_min_rows`).
    pub loaded: usize,
}

impl TextStatus {
    /// Counts one ready partition in.
    pub(super) fn count(&mut self, p: &Partition) {
        self.partitions += 1;
        self.rows += p.rows();
        self.postings += p.postings();
    }
}

/// One partition's state.
pub(super) enum Entry {
    Ready(Arc<RwLock<Partition>>),
    /// Being built in the background; FTS5 answers meanwhile.
    Building,
}

/// Every partition this process holds, by (table, namespace).
pub(super) struct TextIndex {
    pub(super) enabled: bool,
    pub(super) parts: HashMap<(Target, String), Entry>,
    /// The process's tokenizer for queries and changes (one at a time).
    pub(super) tokenizer: Option<Tokenizer>,
    pub(super) builder: Builder,
    /// Where partitions are saved (`file.rs`; `None`: in memory only), and
    /// from how many rows.
    pub(super) dir: Option<std::path::PathBuf>,
    pub(super) save_min_rows: Option<i64>,
    /// Partitions loaded from their files.
    pub(super) loaded: usize,
}

impl TextIndex {
    pub(super) fn new(dir: Option<std::path::PathBuf>) -> Self {
        Self {
            enabled: true,
            parts: HashMap::new(),
            tokenizer: None,
            builder: Builder::default(),
            dir,
            save_min_rows: Some(TEXT_SAVE_MIN_ROWS as i64),
            loaded: 0,
        }
    }

    /// The shared tokenizer, made on first use; `None` (the index is then
    /// off, FTS5 answers) if this SQLite cannot give one.
    pub(super) fn tokenizer(&mut self) -> Option<&mut Tokenizer> {
        if self.tokenizer.is_none() && self.enabled {
            match Tokenizer::new() {
                Ok(t) => self.tokenizer = Some(t),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "the full-text index is off: FTS5 answers every search");
                    self.enabled = false;
                }
            }
        }
        self.tokenizer.as_mut()
    }

    pub(super) fn status(&self) -> TextStatus {
        let mut out = TextStatus {
            enabled: self.enabled,
            loaded: self.loaded,
            ..TextStatus::default()
        };
        for entry in self.parts.values() {
            match entry {
                Entry::Ready(p) => {
                    out.count(&p.read().unwrap_or_else(std::sync::PoisonError::into_inner))
                }
                Entry::Building => out.building += 1,
            }
        }
        out
    }
}

/// A (table, namespace) to build.
pub(super) type Key = (Target, String);

/// The thread that builds large partitions one at a time, away from the
/// searches (one per store, SQLite's or Postgres's, started on first use),
/// and its queue. Closed by the engines' last writer before it closes the
/// database ([`Builder::close`]), so a close returns with the thread gone;
/// dropped with the store otherwise: the queue closes, and the thread is
/// waited for (unless this is it, dropping the last handle).
#[derive(Default)]
pub(super) struct Builder {
    queue: Option<std::sync::mpsc::Sender<Key>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Closed: no thread starts again (the store's own search answers).
    closed: bool,
}

impl Builder {
    /// Queues `key`, starting the thread on `run` (which reads the queue
    /// until it closes) if none runs; `false` when no thread takes it.
    pub(super) fn queue(
        &mut self,
        key: Key,
        run: impl FnOnce(std::sync::mpsc::Receiver<Key>) + Send + 'static,
    ) -> bool {
        if self.closed {
            return false;
        }
        if self.queue.is_none() {
            let (tx, rx) = std::sync::mpsc::channel();
            match std::thread::Builder::new()
                .name("mnemo-text-build".into())
                .spawn(move || run(rx))
            {
                Ok(thread) => {
                    self.queue = Some(tx);
                    self.thread = Some(thread);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no thread to build full-text partitions; the store's own search answers");
                    return false;
                }
            }
        }
        if self.queue.as_ref().is_some_and(|tx| tx.send(key).is_ok()) {
            return true;
        }
        self.queue = None;
        false
    }

    /// Takes no more keys and hands back the thread, for the caller to
    /// [`join`] once it holds no lock the thread takes; it ends after the
    /// build in hand.
    pub(super) fn close(&mut self) -> Option<std::thread::JoinHandle<()>> {
        self.closed = true;
        self.queue = None;
        self.thread.take()
    }
}

/// Waits for a builder's thread to end, unless this is it.
pub(super) fn join(thread: Option<std::thread::JoinHandle<()>>) {
    if let Some(thread) = thread
        && thread.thread().id() != std::thread::current().id()
    {
        let _ = thread.join();
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        join(self.close());
    }
}

/// `each` of the filter's namespaces, each once, in order; `None` as soon
/// as one gives none (a partition building, or behind the pruned log: the
/// store's own search then answers for all of them).
pub(super) fn each_namespace<P>(
    f: &mnemo_core::model::SearchFilter,
    mut each: impl FnMut(&str) -> CoreResult<Option<P>>,
) -> CoreResult<Option<Vec<P>>> {
    let mut seen: Vec<&String> = Vec::with_capacity(f.namespaces.len());
    let mut out = Vec::with_capacity(f.namespaces.len());
    for ns in &f.namespaces {
        if seen.contains(&ns) {
            continue;
        }
        seen.push(ns);
        match each(ns)? {
            Some(p) => out.push(p),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The rows `top_admitted` asks `best` for first: its first shortlist and
/// the best row after it.
pub(super) fn first_ask(limit: u32) -> usize {
    (limit as usize)
        .saturating_mul(TEXT_FIRST_CHECK)
        .saturating_add(1)
}

/// The best `limit` rows that `admit` lets through, by score then id, as
/// FTS5's statement orders them. `best(n)` answers the best `n` rows by
/// score (ties by row), best first (`Ranking::best`). `admit` is asked for a
/// shortlist of rows at a time — `TEXT_FIRST_CHECK` times the limit, twice
/// as many each round after — and answers the ids of those that pass the
/// search's filter, until no row left can enter the top. The same for
/// SQLite's and Postgres's filters.
pub(super) fn top_admitted(
    limit: u32,
    mut best: impl FnMut(usize) -> Vec<(i64, f64)>,
    mut admit: impl FnMut(&[i64]) -> CoreResult<HashMap<i64, String>>,
) -> CoreResult<Vec<ScoredId>> {
    let limit = limit as usize;
    if limit == 0 {
        return Ok(Vec::new());
    }
    // The first round asks `first_ask`: its chunk and the row after it.
    let mut chunk = first_ask(limit as u32) - 1;
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut taken: usize = 0;
    loop {
        // One more than the round's rows: the best of those left after it.
        let ranked = best(taken.saturating_add(chunk).saturating_add(1));
        let head = &ranked[taken.min(ranked.len())..taken.saturating_add(chunk).min(ranked.len())];
        if head.is_empty() {
            break;
        }
        let rows: Vec<i64> = head.iter().map(|(r, _)| *r).collect();
        let passed = admit(&rows)?;
        out.extend(
            head.iter()
                .filter_map(|(r, s)| passed.get(r).map(|id| (id.clone(), *s))),
        );
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        taken += head.len();
        match ranked.get(taken) {
            Some((_, next)) if out.len() < limit || *next >= out[limit - 1].1 => {}
            _ => break,
        }
        chunk = chunk.saturating_mul(2);
    }
    out.truncate(limit);
    Ok(out
        .into_iter()
        .map(|(id, s)| ScoredId {
            id,
            score: s as f32,
        })
        .collect())
}

/// A row's two indexed columns as FTS5 receives them from the schema's
/// triggers: memories `mnemo_index_text(content)` and `tags`; episodes
/// `mnemo_index_text(content)` and the same of the turn before.
fn columns(target: Target, first: &str, second: &str) -> [String; 2] {
    let index = mnemo_core::search_text::index_text;
    match target {
        Target::Memories => [index(first), second.to_string()],
        Target::Episodes => [index(first), index(second)],
    }
}

/// A connection's most recent rows' tokens, by their columns' text. Inside
/// a write transaction every search scores the transaction's own rows
/// again (`Overlay`): a batch of 100 remembers tokenized each row up to 99
/// times, 8% of the writer's time in `bench serve`'s remember (`perf`).
/// Keyed by the text itself, an entry is never stale.
#[derive(Default)]
pub struct DocCache(HashMap<[String; 2], Tokenized>);

impl DocCache {
    /// The tokens of `cols`, from the cache or tokenized now.
    pub(super) fn tokens(&mut self, tok: &mut Tokenizer, cols: [String; 2]) -> Tokenized {
        if let Some(doc) = self.0.get(&cols) {
            return doc.clone();
        }
        let doc = tokenize(tok, &cols);
        if self.0.len() >= TEXT_DOC_CACHE {
            self.0.clear();
        }
        self.0.insert(cols, doc.clone());
        doc
    }
}

/// The tokens of a row's columns.
pub(super) fn tokenize(tok: &mut Tokenizer, cols: &[String; 2]) -> Tokenized {
    let mut counts: HashMap<String, [u16; 2]> = HashMap::new();
    let mut len: u32 = 0;
    for (c, text) in cols.iter().enumerate() {
        tok.tokens(text, Purpose::Document, |t| {
            len = len.saturating_add(1);
            let n = &mut counts.entry(t.to_string()).or_default()[c];
            *n = n.saturating_add(1);
        });
    }
    Tokenized {
        len,
        terms: counts.into_iter().collect(),
    }
}

/// The previous turn's words for an episode (`e`), as the FTS5 trigger
/// finds them: the session's turn before it by (event time, rowid).
const EPISODE_CONTEXT: &str = "COALESCE((SELECT p.content FROM episodes p \
    WHERE p.namespace = e.namespace AND p.session_id = e.session_id \
      AND (p.event_time, p.rowid) < (e.event_time, e.rowid) \
    ORDER BY p.event_time DESC, p.rowid DESC LIMIT 1), '')";

fn row_sql(target: Target, filter: &str) -> String {
    match target {
        Target::Memories => {
            format!(
                "SELECT e.rowid, e.namespace, e.content, COALESCE(e.tags, '') FROM memories e WHERE {filter}"
            )
        }
        Target::Episodes => format!(
            "SELECT e.rowid, e.namespace, e.content, {EPISODE_CONTEXT} FROM episodes e WHERE {filter}"
        ),
    }
}

/// One row's namespace and columns now, if it exists.
pub(super) fn read_row(
    conn: &Connection,
    target: Target,
    row: i64,
) -> rusqlite::Result<Option<(String, [String; 2])>> {
    let mut stmt = conn.prepare_cached(&row_sql(target, "e.rowid = ?1"))?;
    stmt.query_row([row], |r| {
        let cols = columns(target, &r.get::<_, String>(2)?, &r.get::<_, String>(3)?);
        Ok((r.get(1)?, cols))
    })
    .optional()
}

/// The last change number `conn` sees: AUTOINCREMENT's counter, which
/// pruning the log never takes back.
pub(super) fn last_change(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'text_changes'), 0)",
    )?
    .query_row([], |r| r.get(0))
}

/// The newest change number dropped from the log (0: none).
pub(super) fn pruned_through(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'text_changes_pruned'), 0)",
    )?
    .query_row([], |r| r.get(0))
}

/// Builds the partition of `ns` from its table in one read transaction,
/// which must be open on `conn`: every row, and the last change they
/// include.
pub(super) fn build(
    conn: &Connection,
    tok: &mut Tokenizer,
    target: Target,
    ns: &str,
) -> rusqlite::Result<Partition> {
    let mut part = Partition::new(last_change(conn)?);
    let mut stmt = conn.prepare(&row_sql(target, "e.namespace = ?1"))?;
    let mut rows = stmt.query([ns])?;
    while let Some(r) = rows.next()? {
        let cols = columns(target, &r.get::<_, String>(2)?, &r.get::<_, String>(3)?);
        part.put(r.get(0)?, &tokenize(tok, &cols));
    }
    part.shrink();
    Ok(part)
}
