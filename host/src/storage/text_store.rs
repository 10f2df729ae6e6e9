//! The derived full-text index (`text/`) on a SQLite connection: which
//! searches it answers, building a partition, and the filtered top
//! `limit` of its scores; replaying `text_changes` into a partition, and
//! a write transaction's own changes beside it, is `text_catch_up.rs`.
//!
//! It answers a search of named namespaces (a project's and `default`, as
//! recall reads them) whose every term is one FTS5 token; a quoted term
//! FTS5 would read as a phrase of several goes to FTS5, as does a search
//! of every namespace. The statistics are those of the namespaces searched
//! together.

use std::sync::{Arc, MutexGuard, PoisonError, RwLock};

use mnemo_core::model::*;
use rusqlite::ffi;
use rusqlite::types::Value;

use super::filter::{table, where_clause};
use super::sqlite::Shared;
use super::sqlite::*;
use super::text::{self, Entry, Overlay, Partition, Purpose, TextIndex, Tokenizer};

pub(super) type Part = Arc<RwLock<Partition>>;

impl SqliteStore {
    pub(super) fn text(&self) -> MutexGuard<'_, TextIndex> {
        self.shared
            .text
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Turns the derived full-text index on or off (off: FTS5 answers every
    /// search, as before the index existed); turning it off drops it.
    pub fn set_text_index(&self, on: bool) {
        let mut index = self.text();
        index.enabled = on;
        index.parts.clear();
    }

    /// The smallest partition saved to disk (`None`: none is).
    pub fn set_text_save_min_rows(&self, rows: Option<usize>) {
        self.text().save_min_rows = rows.map(|n| n as i64);
    }

    /// Queues every saved partition for loading (the server, at start), so
    /// the first searches find them ready.
    pub fn text_preload(&self) {
        let keys = match &self.text().dir {
            Some(dir) => text::file::saved(dir),
            None => return,
        };
        for key in keys {
            let mut index = self.text();
            if index.enabled && !index.parts.contains_key(&key) {
                index.parts.insert(key.clone(), Entry::Building);
                drop(index);
                self.build_in_background(key);
            }
        }
    }

    /// Queues the build of `ns`'s partition (`Store::text_warm`) when it
    /// is past `TEXT_INLINE_BUILD_ROWS` (a smaller one builds at its first
    /// search as fast as it would be read) and not held or building.
    pub fn text_warm(&self, target: Target, ns: &str) {
        let key = (target, ns.to_string());
        {
            let index = self.text();
            if !index.enabled || index.parts.contains_key(&key) {
                return;
            }
        }
        // An in-memory database has no second connection to build on.
        if self.path.to_str() == Some(":memory:") {
            return;
        }
        let rows = self.conn.query_row(
            &format!(
                "SELECT COUNT(*) FROM {} WHERE namespace = ?1",
                table(target)
            ),
            [ns],
            |r| r.get::<_, i64>(0),
        );
        if !text::warm_due(ns, rows) {
            return;
        }
        let mut index = self.text();
        if index.enabled && !index.parts.contains_key(&key) {
            index.parts.insert(key.clone(), Entry::Building);
            drop(index);
            self.build_in_background(key);
        }
    }

    /// Ends the partition builder's thread (`text::Builder::close`).
    pub fn close_text_builder(&self) {
        let thread = self.text().builder.close();
        text::join(thread);
    }

    /// The derived index at a glance.
    pub fn text_status(&self) -> text::TextStatus {
        self.text().status()
    }

    /// Runs `f` with the process's tokenizer (taken out of the shared
    /// state for the call, so searches do not queue behind a tokenizing).
    pub(super) fn with_tokenizer<T>(&self, f: impl FnOnce(&mut Tokenizer) -> T) -> Option<T> {
        let mut tok = {
            let mut index = self.text();
            index.tokenizer()?;
            index.tokenizer.take()?
        };
        let out = f(&mut tok);
        let mut index = self.text();
        if index.tokenizer.is_none() {
            index.tokenizer = Some(tok);
        }
        Some(out)
    }

    /// BM25's top `limit` of `terms` from the derived index; `None` when
    /// FTS5 must answer (see the module doc). `beside`, if given, runs on
    /// this thread while a second one ranks the first pass (`near_search`:
    /// dedup's vector search beside its full-text one); it is not run when
    /// the index cannot answer, or no term is left to rank.
    pub(super) fn text_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
        mut beside: Option<&mut dyn FnMut()>,
    ) -> R<Option<Vec<ScoredId>>> {
        if f.namespaces.is_empty() || !self.text().enabled {
            return Ok(None);
        }
        // Each term FTS5 would quote (`fts_match`), with its one token
        // (none: the phrase matches nothing and scores nothing).
        let quoted: Vec<String> = terms
            .iter()
            .map(|t| t.replace('\0', " ").trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        let Some(tokens) = self.with_tokenizer(|tok| {
            quoted
                .iter()
                .map(|t| tok.split(t, Purpose::Query))
                .collect::<Vec<_>>()
        }) else {
            return Ok(None);
        };
        if tokens.iter().any(|t| t.len() > 1) {
            return Ok(None);
        }
        let phrases: Vec<Option<String>> =
            tokens.into_iter().map(|t| t.into_iter().next()).collect();
        // Every namespace searched, each caught up — or FTS5 answers.
        let Some(parts) = text::each_namespace(f, |ns| {
            let Some(part) = self.text_partition(target, ns)? else {
                return Ok(None);
            };
            Ok(self
                .text_catch_up(target, ns, &part, false)?
                .map(|o| (part, o)))
        })?
        else {
            return Ok(None);
        };
        if phrases.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let weights = match target {
            // As `fts_ranked` writes them into its SQL, and SQLite reads them.
            Target::Episodes => [
                1.0,
                format!("{:.4}", context_weight.max(0.0))
                    .parse()
                    .unwrap_or(0.0),
            ],
            Target::Memories => [1.0, 1.0],
        };
        let guards: Vec<_> = parts
            .iter()
            .map(|(p, o)| (p.read().unwrap_or_else(PoisonError::into_inner), o))
            .collect();
        let views: Vec<(&Partition, &Overlay)> =
            guards.iter().map(|(p, o)| (&**p, &***o)).collect();
        let counted: Vec<(Option<String>, i64)> = phrases
            .into_iter()
            .map(|t| {
                let df = t
                    .as_deref()
                    .map_or(0, |t| views.iter().map(|(p, o)| p.df(t, o)).sum());
                (t, df)
            })
            .collect();
        let passes = if counted.len() < 2 {
            (counted, None)
        } else {
            query_passes(counted, views.iter().map(|(p, o)| p.rows_with(o)).sum())
        };
        let hits = ranked_in_passes(passes, limit, |pass| {
            let phrases: Vec<String> = pass.iter().filter_map(|(t, _)| t.clone()).collect();
            let make = || text::Ranking::new(&views, &phrases, weights);
            let (mut ranking, mut first) = match beside.take() {
                Some(run) => {
                    let n = text::first_ask(limit);
                    let (ranking, rows) = ranked_beside(&make, n, run);
                    (ranking, Some((n, rows)))
                }
                None => (make(), None),
            };
            self.filtered_top(
                target,
                |n| match first.take() {
                    Some((asked, rows)) if asked == n => rows,
                    _ => ranking.best(n),
                },
                f,
                limit,
            )
        })?;
        Ok(Some(hits))
    }

    /// The partition of `ns`, built now when small; `None` while it builds
    /// in the background (or cannot be built here).
    fn text_partition(&self, target: Target, ns: &str) -> R<Option<Part>> {
        let key = (target, ns.to_string());
        match self.text().parts.get(&key) {
            Some(Entry::Ready(p)) => return Ok(Some(Arc::clone(p))),
            Some(Entry::Building) => return Ok(None),
            None => {}
        }
        // A build starts from a committed change number: inside a write
        // transaction, whose own changes are not, it is built elsewhere.
        let state = self.txn_state();
        let t = table(target);
        let rows: i64 = sql(self.conn.query_row(
            &format!("SELECT COUNT(*) FROM {t} WHERE namespace = ?1"),
            [ns],
            |r| r.get(0),
        ))?;
        // An in-memory database has no second connection to build on.
        let in_memory = self.path.to_str() == Some(":memory:");
        if state == ffi::SQLITE_TXN_WRITE && in_memory {
            return Ok(None);
        }
        // (A large partition's builder reads its saved file, if any; a small
        // one builds about as fast as it would load.)
        if state == ffi::SQLITE_TXN_WRITE || (rows > text::TEXT_INLINE_BUILD_ROWS && !in_memory) {
            let mut index = self.text();
            if !index.parts.contains_key(&key) {
                index.parts.insert(key.clone(), Entry::Building);
                drop(index);
                self.build_in_background(key);
            }
            return Ok(None);
        }
        // One snapshot: the caller's read transaction, or one of its own.
        let tx = if self.conn.is_autocommit() {
            Some(sql(self.conn.unchecked_transaction())?)
        } else {
            None
        };
        let built = self.with_tokenizer(|tok| text::build(&self.conn, tok, target, ns));
        drop(tx);
        let Some(part) = built.transpose().map_err(super::storage_err)? else {
            return Ok(None);
        };
        let mut index = self.text();
        let entry = index
            .parts
            .entry(key)
            .or_insert_with(|| Entry::Ready(Arc::new(RwLock::new(part))));
        Ok(match entry {
            Entry::Ready(p) => Some(Arc::clone(p)),
            Entry::Building => None,
        })
    }

    /// Queues `key` for the store's builder thread (`text::Builder`),
    /// which builds partitions through a connection of its own and installs
    /// them; a weak handle, so closing the store ends it.
    fn build_in_background(&self, key: (Target, String)) {
        let mut index = self.text();
        let (path, shared) = (self.path.clone(), Arc::downgrade(&self.shared));
        if !index
            .builder
            .queue(key.clone(), move |rx| builder(&path, &shared, &rx))
        {
            index.parts.remove(&key);
        }
    }

    /// The best `limit` of `best`'s rows that pass `f` (`text::top_admitted`).
    fn filtered_top(
        &self,
        target: Target,
        best: impl FnMut(usize) -> Vec<(i64, f64)>,
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        let t = table(target);
        let w = where_clause(target, "x", f);
        // NOT INDEXED, as in `ann_search`: left to itself the planner walks
        // the (namespace, valid_until) index, every active row of the
        // namespace, for a few candidates (a quarter of the writer's time
        // in `bench serve`'s remember).
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.rowid, x.id FROM {t} x NOT INDEXED WHERE x.rowid IN (SELECT value FROM json_each(?)) AND {}",
            w.clause
        )))?;
        text::top_admitted(limit, best, |rows| {
            let mut p = vec![Value::Text(serde_json::to_string(rows).unwrap_or_default())];
            p.extend(w.params.iter().cloned());
            sql(sql(stmt.query_map(rusqlite::params_from_iter(p), |r| {
                Ok((r.get(0)?, r.get(1)?))
            }))?
            .collect())
        })
    }

    /// Applies the committed changes to every partition this process holds
    /// (the background worker, twice a second), so a search's own catch-up
    /// is short and an idle partition does not fall behind the pruned log;
    /// then saves those due (`file::due`).
    pub fn text_catch_up_all(&self) -> R<()> {
        let parts: Vec<((Target, String), Part)> = self
            .text()
            .parts
            .iter()
            .filter_map(|(k, e)| match e {
                Entry::Ready(p) => Some((k.clone(), Arc::clone(p))),
                Entry::Building => None,
            })
            .collect();
        for ((target, ns), part) in &parts {
            self.text_catch_up(*target, ns, part, true)?;
        }
        let (dir, min_rows) = {
            let index = self.text();
            (index.dir.clone(), index.save_min_rows)
        };
        let Some(dir) = dir.filter(|_| !self.is_read_only()) else {
            return Ok(());
        };
        for (key, part) in &parts {
            if text::file::due(
                &part.read().unwrap_or_else(PoisonError::into_inner),
                min_rows,
            ) {
                save(&dir, key, part);
            }
        }
        Ok(())
    }

    /// Whether `text_changes` holds entries older than the newest
    /// `TEXT_CHANGES_KEEP` (an error reads as no).
    pub fn text_prune_due(&self) -> bool {
        let due = || -> rusqlite::Result<bool> {
            let cut = text::last_change(&self.conn)? - text::TEXT_CHANGES_KEEP;
            Ok(cut > text::pruned_through(&self.conn)?)
        };
        due().unwrap_or(false)
    }

    /// Drops `text_changes` entries older than the newest
    /// `TEXT_CHANGES_KEEP` (the writer, from time to time), noting through
    /// which number, so a partition that needed them is rebuilt instead.
    pub fn prune_text_changes(&self) -> anyhow::Result<usize> {
        if !self.role.is_writer() || self.is_read_only() || !self.text_prune_due() {
            return Ok(0);
        }
        let cut = text::last_change(&self.conn)? - text::TEXT_CHANGES_KEEP;
        let tx = self.conn.unchecked_transaction()?;
        let n = tx.execute("DELETE FROM text_changes WHERE seq <= ?1", [cut])?;
        tx.execute(
            "INSERT OR REPLACE INTO metadata(key, value) VALUES ('text_changes_pruned', ?1)",
            [cut.to_string()],
        )?;
        tx.commit()?;
        Ok(n)
    }
}

/// Writes `part`'s file, noting its mark as saved (a failure is logged:
/// the partition is then built from its table after a restart).
fn save(dir: &std::path::Path, key: &text::Key, part: &RwLock<Partition>) {
    let started = std::time::Instant::now();
    // Encoded under the read lock (searches go on; a catch-up applying
    // changes waits that long), written without it.
    let (seq, applied, rows, bytes) = {
        let p = part.read().unwrap_or_else(PoisonError::into_inner);
        (p.seq, p.unsaved, p.rows(), text::file::encode(key, &p))
    };
    match bytes.and_then(|b| text::file::write(dir, key, &b)) {
        Ok(()) => {
            let mut p = part.write().unwrap_or_else(PoisonError::into_inner);
            p.saved = Some(seq);
            p.unsaved -= applied.min(p.unsaved);
            tracing::info!(table = table(key.0), namespace = %key.1, rows, seq,
                ms = started.elapsed().as_millis() as u64, "full-text partition saved");
        }
        Err(e) => tracing::warn!(error = %format!("{e:#}"), namespace = %key.1,
            "saving a full-text partition failed; it is built from its table after a restart"),
    }
}

/// The builder thread: each queued partition read from its file when it
/// has one the log reaches, else built in one snapshot through its own
/// connection (a small page cache: it reads each row once), and saved.
fn builder(
    path: &std::path::Path,
    shared: &std::sync::Weak<Shared>,
    queue: &std::sync::mpsc::Receiver<(Target, String)>,
) {
    let open = || -> anyhow::Result<(rusqlite::Connection, Tokenizer)> {
        let conn = super::connect(path)?;
        conn.pragma_update(None, "query_only", true)?;
        conn.pragma_update(None, "cache_size", -BUILDER_CACHE_KIB)?;
        Ok((conn, Tokenizer::new()?))
    };
    let mut held: Option<(rusqlite::Connection, Tokenizer)> = None;
    while let Ok(key) = queue.recv() {
        let started = std::time::Instant::now();
        let Some((dir, min_rows)) = shared.upgrade().map(|s| {
            let index = s.text.lock().unwrap_or_else(PoisonError::into_inner);
            (index.dir.clone(), index.save_min_rows)
        }) else {
            return;
        };
        let built = (|| -> anyhow::Result<(Partition, bool)> {
            if held.is_none() {
                held = Some(open()?);
            }
            let Some((conn, tok)) = held.as_mut() else {
                anyhow::bail!("no connection");
            };
            let tx = conn.unchecked_transaction()?;
            let (pruned, last) = (text::pruned_through(&tx)?, text::last_change(&tx)?);
            if let Some(part) = dir
                .as_ref()
                .and_then(|d| text::file::load(d, &key, pruned, last))
            {
                return Ok((part, true));
            }
            Ok((text::build(&tx, tok, key.0, &key.1)?, false))
        })();
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let built = built.map(|(part, loaded)| {
            tracing::info!(table = table(key.0), namespace = %key.1, rows = part.rows(),
                    ms = started.elapsed().as_millis() as u64,
                    "full-text partition {}", if loaded { "loaded" } else { "built" });
            let part = Arc::new(RwLock::new(part));
            // A new build saved at once (this thread is away from the
            // searches), before the searches start changing it.
            if let Some(dir) = dir.as_ref().filter(|_| !shared.read_only)
                && !loaded
                && text::file::due(
                    &part.read().unwrap_or_else(PoisonError::into_inner),
                    min_rows,
                )
            {
                save(dir, &key, &part);
            }
            (part, loaded)
        });
        let mut index = shared.text.lock().unwrap_or_else(PoisonError::into_inner);
        match built {
            Ok((part, loaded)) if index.enabled => {
                index.loaded += usize::from(loaded);
                index.parts.insert(key, Entry::Ready(part));
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), namespace = %key.1,
                    "building a full-text partition failed; FTS5 answers its searches, the next one retries");
                index.parts.remove(&key);
                held = None;
            }
        }
    }
}

/// The builder connection's page cache, in KiB: a build reads each row
/// once, so a cache the size of the readers' would only hold memory.
const BUILDER_CACHE_KIB: i64 = 2048;

/// A ranking (`make`) and its best `n` rows, computed beside `run`
/// (`crate::beside`): on the second core while this thread searches the
/// vectors. The writer is one thread: its dedup waited for the full-text
/// ranking and then for the vector search, with the second core idle
/// (docs/benchmarks.md).
fn ranked_beside<'a>(
    make: &(dyn Fn() -> text::Ranking<'a> + Sync),
    n: usize,
    run: &mut dyn FnMut(),
) -> (text::Ranking<'a>, Vec<(i64, f64)>) {
    let ((), ranked) = crate::beside::beside(run, || {
        let mut ranking = make();
        let rows = ranking.best(n);
        (ranking, rows)
    });
    ranked
}
