//! The derived full-text index on Postgres: each server holds, per (table,
//! namespace), the partitions the SQLite store holds (`storage/text/`),
//! built from the rows' lexeme counts (`fts_tf`, `fts_context_tf` and
//! `fts_len`, which the schema's triggers keep) and kept current by
//! tailing `text_changes`, the log the triggers append to in the writing
//! transaction. A search of named namespaces then reads one tenant's
//! postings of its own terms and its own statistics, where BM25 in SQL
//! (`search.rs`) read every candidate row's lexeme counts and the whole
//! table's frequencies; SQL still answers a phrase, a search of every
//! namespace, and a partition while it builds.
//!
//! Tailing a log on Postgres: an entry's `seq` is drawn when it is
//! written, not when it commits, so an entry may become visible after a
//! later one was read. Each entry also carries its transaction's id; a
//! transaction still running when a partition last read the log has an
//! id at or above that read's snapshot `xmin`, so a read asks for the
//! entries after the partition's `seq` *or* at or above its `xmin`. An
//! entry is applied by reading its row as it is now (absent, or in
//! another namespace: removed), so reading one twice is harmless; reads
//! of one partition are applied one at a time, in snapshot order.
//!
//! Inside a transaction with text changes of its own, every entry not yet
//! applied is scored beside the partition (`Overlay`) and none is applied:
//! its own rows are uncommitted, and the committed version of a row it
//! also wrote cannot be read from inside it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak, mpsc};

use mnemo_core::model::*;
use postgres::{GenericClient, IsolationLevel};

use super::sql::{Args, table, where_clause};
use super::{PgStore, R, pg, unpoisoned};
use crate::storage::text::{
    self, Overlay, Partition, TEXT_CHANGES_KEEP, TEXT_INLINE_BUILD_ROWS, TextStatus, Tokenized,
    warm_due,
};

/// A partition and where its last applied read of the log stood.
pub(super) struct Tail {
    part: RwLock<Partition>,
    /// That read's snapshot `xmin` (it only grows).
    xmin: AtomicU64,
    /// The log's pruning mark that read saw.
    pruned: AtomicI64,
    /// Held by the read that applies, so reads apply in snapshot order.
    applying: Mutex<()>,
}

enum Entry {
    Ready(Arc<Tail>),
    /// Being built in the background; SQL answers meanwhile.
    Building,
}

/// Every partition this server holds (shared by its connections), and the
/// queue of its builder thread.
pub(super) struct PgText {
    enabled: bool,
    parts: HashMap<(Target, String), Entry>,
    builder: text::Builder,
}

impl Default for PgText {
    fn default() -> Self {
        Self {
            enabled: true,
            parts: HashMap::new(),
            builder: text::Builder::default(),
        }
    }
}

pub(super) type SharedText = Arc<Mutex<PgText>>;

/// `metadata` keys: the last `seq` pruned from the log, and the newest
/// transaction id among the entries pruned.
const PRUNED: &str = "text_changes_pruned";
const PRUNED_XID: &str = "text_changes_pruned_xid";
/// Key of the advisory lock one pruning at a time holds.
const PRUNE_LOCK: i64 = 0x6d6e_656d_6f02;

/// A row's lexeme counts as the index holds them: column 0 the row's own
/// (`fts_tf`), column 1 a turn's context (`fts_context_tf`).
fn doc(tf: &str, context: Option<&str>, len: i32) -> Tokenized {
    let mut counts: HashMap<String, [u16; 2]> = HashMap::new();
    for (c, json) in [Some(tf), context].into_iter().enumerate() {
        let Some(json) = json else { continue };
        let map: HashMap<String, u64> = serde_json::from_str(json).unwrap_or_default();
        for (lexeme, n) in map {
            counts.entry(lexeme).or_default()[c] = u16::try_from(n).unwrap_or(u16::MAX);
        }
    }
    Tokenized {
        len: u32::try_from(len).unwrap_or(0),
        terms: counts.into_iter().collect(),
    }
}

fn context_column(target: Target) -> &'static str {
    match target {
        Target::Episodes => "x.fts_context_tf::text",
        Target::Memories => "NULL::text",
    }
}

/// Builds the partition of `ns` in one snapshot (the caller's repeatable-
/// read transaction): every row, the last entry of the log it includes and
/// the snapshot's `xmin`.
fn build(db: &mut impl GenericClient, target: Target, ns: &str) -> Result<Tail, postgres::Error> {
    let mark = db.query_one(
        &format!(
            "SELECT COALESCE((SELECT max(seq) FROM text_changes), 0), \
                    pg_snapshot_xmin(pg_current_snapshot())::text, \
                    COALESCE((SELECT value::bigint FROM metadata WHERE key = '{PRUNED}'), 0)"
        ),
        &[],
    )?;
    let mut part = Partition::new(mark.get(0));
    let sql = format!(
        "SELECT x.seq, x.fts_tf::text, {}, x.fts_len FROM {} x WHERE x.namespace = $1",
        context_column(target),
        table(target)
    );
    for r in db.query(&sql, &[&ns])? {
        let tf: String = r.get(1);
        let context: Option<String> = r.get(2);
        part.put(r.get(0), &doc(&tf, context.as_deref(), r.get(3)));
    }
    part.shrink();
    Ok(Tail {
        part: RwLock::new(part),
        xmin: AtomicU64::new(mark.get::<_, String>(1).parse().unwrap_or(0)),
        pruned: AtomicI64::new(mark.get(2)),
        applying: Mutex::new(()),
    })
}

impl PgStore {
    fn text(&self) -> std::sync::MutexGuard<'_, PgText> {
        unpoisoned(self.text.lock())
    }

    /// Turns the derived full-text index on or off (off: SQL answers every
    /// search); turning it off drops it.
    pub fn set_text_index(&self, on: bool) {
        let mut index = self.text();
        index.enabled = on;
        index.parts.clear();
    }

    /// Ends the partition builder's thread (`text::Builder::close`).
    pub fn close_text_builder(&self) {
        let thread = self.text().builder.close();
        crate::storage::text::join(thread);
    }

    /// The derived index at a glance.
    pub fn text_status(&self) -> TextStatus {
        let index = self.text();
        let mut out = TextStatus {
            enabled: index.enabled,
            ..TextStatus::default()
        };
        for entry in index.parts.values() {
            match entry {
                Entry::Ready(t) => {
                    let p = unpoisoned(t.part.read());
                    out.count(&p)
                }
                Entry::Building => out.building += 1,
            }
        }
        out
    }

    /// BM25's top `limit` of `lexemes` (one each: no phrase) from the
    /// derived index; `None` when SQL must answer (see the module doc).
    pub(super) fn text_search(
        &self,
        target: Target,
        lexemes: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Option<Vec<ScoredId>>> {
        if f.namespaces.is_empty() || !self.text().enabled {
            return Ok(None);
        }
        let Some(tails) = text::each_namespace(f, |ns| {
            let Some(tail) = self.text_partition(target, ns)? else {
                return Ok(None);
            };
            Ok(self.text_catch_up(target, ns, &tail)?.map(|o| (tail, o)))
        })?
        else {
            return Ok(None);
        };
        // As `search.rs` weighs a turn's context in SQL.
        let weights = match target {
            Target::Episodes => [1.0, f64::from(context_weight.max(0.0))],
            Target::Memories => [1.0, 0.0],
        };
        let guards: Vec<_> = tails
            .iter()
            .map(|(t, o)| (unpoisoned(t.part.read()), o))
            .collect();
        let views: Vec<(&Partition, &Overlay)> = guards.iter().map(|(p, o)| (&**p, *o)).collect();
        let counted: Vec<(String, i64)> = lexemes
            .iter()
            .map(|l| (l.clone(), views.iter().map(|(p, o)| p.df(l, o)).sum()))
            .collect();
        let rows = views.iter().map(|(p, o)| p.rows_with(o)).sum();
        let passes = crate::storage::sqlite::query_passes(counted, rows);
        let hits = crate::storage::sqlite::ranked_in_passes(passes, limit, |pass| {
            let terms: Vec<String> = pass.iter().map(|(t, _)| t.clone()).collect();
            let mut ranking = text::Ranking::new(&views, &terms, weights);
            self.text_filtered_top(target, |n| ranking.best(n), f, limit)
        })?;
        Ok(Some(hits))
    }

    /// The best `limit` of `best`'s rows (by `seq`) that pass `f`.
    fn text_filtered_top(
        &self,
        target: Target,
        best: impl FnMut(usize) -> Vec<(i64, f64)>,
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        text::top_admitted(limit, best, |seqs| {
            let mut args = Args::default();
            let rows = args.add(seqs.to_vec());
            let filter = where_clause(target, "x", f, ListState::Active, &mut args);
            let sql = format!(
                "SELECT x.seq, x.id FROM {} x WHERE x.seq = ANY({rows}::bigint[]) AND {filter}",
                table(target)
            );
            let found = pg(self.db().query(&sql, &args.refs()))?;
            Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// The partition of `ns`, built now when small and this connection is
    /// outside a transaction; `None` while it builds in the background.
    fn text_partition(&self, target: Target, ns: &str) -> R<Option<Arc<Tail>>> {
        let key = (target, ns.to_string());
        match self.text().parts.get(&key) {
            Some(Entry::Ready(t)) => return Ok(Some(Arc::clone(t))),
            Some(Entry::Building) => return Ok(None),
            None => {}
        }
        let rows: i64 = pg(self.db().query_one(
            &format!(
                "SELECT COUNT(*) FROM {} WHERE namespace = $1",
                table(target)
            ),
            &[&ns],
        ))?
        .get(0);
        if !self.is_autocommit() || rows > TEXT_INLINE_BUILD_ROWS {
            let mut index = self.text();
            if !index.parts.contains_key(&key) {
                index.parts.insert(key.clone(), Entry::Building);
                self.queue_build(&mut index, key);
            }
            return Ok(None);
        }
        let built = {
            let mut db = self.db();
            let mut tx = pg(db
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start())?;
            let tail = pg(build(&mut tx, target, ns))?;
            pg(tx.commit())?;
            tail
        };
        let mut index = self.text();
        if !index.enabled {
            return Ok(None);
        }
        let entry = index
            .parts
            .entry(key)
            .or_insert_with(|| Entry::Ready(Arc::new(built)));
        Ok(match entry {
            Entry::Ready(t) => Some(Arc::clone(t)),
            Entry::Building => None,
        })
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
        let rows = self.db().query_one(
            &format!(
                "SELECT COUNT(*) FROM {} WHERE namespace = $1",
                table(target)
            ),
            &[&ns],
        );
        if !warm_due(ns, rows.map(|r| r.get::<_, i64>(0))) {
            return;
        }
        let mut index = self.text();
        if index.enabled && !index.parts.contains_key(&key) {
            index.parts.insert(key.clone(), Entry::Building);
            self.queue_build(&mut index, key);
        }
    }

    /// Queues `key` for the server's builder thread (`text::Builder`); a
    /// weak handle, so closing the store ends it.
    fn queue_build(&self, index: &mut PgText, key: (Target, String)) {
        let (url, shared) = (self.url.clone(), Arc::downgrade(&self.text));
        if !index
            .builder
            .queue(key.clone(), move |rx| builder(&url, &shared, &rx))
        {
            index.parts.remove(&key);
        }
    }

    /// Brings `tail` up to the log as this connection sees it (see the
    /// module doc); the changes not applied come back as an overlay.
    /// `None`: the pruned log no longer reaches back to the partition (it is
    /// dropped, and rebuilt by a later search).
    fn text_catch_up(&self, target: Target, ns: &str, tail: &Tail) -> R<Option<Overlay>> {
        // While another connection applies, this one reads for itself and
        // applies nothing (an overlay is always exact). Without the lock,
        // `xmin` may be older than the partition's `seq`: the read then
        // asks for more than it needs, never for less.
        let applying = tail.applying.try_lock().ok();
        let xmin = tail.xmin.load(Ordering::Acquire);
        let since = unpoisoned(tail.part.read()).seq;
        let sql = format!(
            "WITH ch AS (SELECT seq, row_seq, xid FROM text_changes \
               WHERE target = $1 AND namespace = $2 AND (seq > $3 OR xid >= $4::text::xid8)) \
             SELECT NULL::bigint, NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::integer, FALSE, \
                    pg_snapshot_xmin(pg_current_snapshot())::text, \
                    COALESCE((SELECT value::bigint FROM metadata WHERE key = '{PRUNED}'), 0), \
                    (SELECT value FROM metadata WHERE key = '{PRUNED_XID}') \
             UNION ALL \
             SELECT ch.seq, ch.row_seq, x.namespace, x.fts_tf::text, {}, x.fts_len, \
                    COALESCE(ch.xid = pg_current_xact_id_if_assigned(), FALSE), NULL, NULL, NULL \
             FROM ch LEFT JOIN {} x ON x.seq = ch.row_seq \
             ORDER BY 1 NULLS FIRST",
            context_column(target),
            table(target)
        );
        let rows = pg(self
            .db()
            .query(&sql, &[&table(target), &ns, &since, &xmin.to_string()]))?;
        let Some((head, changes)) = rows.split_first() else {
            return Ok(Some(Overlay::default()));
        };
        let now_xmin: u64 = head.get::<_, String>(7).parse().unwrap_or(0);
        let pruned: i64 = head.get(8);
        // A pruning since the last applied read dropped entries this
        // partition may not have applied: its cut passed the partition's
        // `seq`, or it held a transaction's entries that were not visible
        // then.
        if pruned != tail.pruned.load(Ordering::Acquire) {
            let pruned_xid: u64 = head
                .get::<_, Option<String>>(9)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if since < pruned || pruned_xid >= xmin {
                self.text().parts.remove(&(target, ns.to_string()));
                return Ok(None);
            }
        }
        let mut own = false;
        let current: Vec<(i64, i64, Option<Tokenized>)> = changes
            .iter()
            .map(|r| {
                own |= r.get::<_, bool>(6);
                let row_ns: Option<String> = r.get(2);
                let doc = (row_ns.as_deref() == Some(ns)).then(|| {
                    let tf: String = r.get(3);
                    let context: Option<String> = r.get(4);
                    doc(&tf, context.as_deref(), r.get(5))
                });
                (r.get(0), r.get(1), doc)
            })
            .collect();
        if applying.is_none() || own {
            let p = unpoisoned(tail.part.read());
            return Ok(Some(
                p.overlay(current.into_iter().map(|(_, r, d)| (r, d)).collect()),
            ));
        }
        if !current.is_empty() {
            let mut p = unpoisoned(tail.part.write());
            for (seq, row, doc) in current {
                match doc {
                    Some(doc) => p.put(row, &doc),
                    None => p.remove(row),
                }
                p.seq = p.seq.max(seq);
            }
        }
        tail.xmin.fetch_max(now_xmin, Ordering::AcqRel);
        tail.pruned.store(pruned, Ordering::Release);
        Ok(Some(Overlay::default()))
    }

    /// Applies the committed changes to every partition this server holds
    /// (the background worker), so a search's own catch-up is short and an
    /// idle partition does not fall behind the pruned log. One statement
    /// finds the partitions with entries to read (one each would be a
    /// statement per tenant per tick); the others are marked current as of
    /// that statement's snapshot.
    pub fn text_catch_up_all(&self) -> R<()> {
        let tails: Vec<((Target, String), Arc<Tail>)> = self
            .text()
            .parts
            .iter()
            .filter_map(|(k, e)| match e {
                Entry::Ready(t) => Some((k.clone(), Arc::clone(t))),
                Entry::Building => None,
            })
            .collect();
        let since = tails
            .iter()
            .map(|(_, t)| unpoisoned(t.part.read()).seq)
            .min();
        let xmin = tails
            .iter()
            .map(|(_, t)| t.xmin.load(Ordering::Acquire))
            .min();
        let (Some(since), Some(xmin)) = (since, xmin) else {
            return Ok(());
        };
        let rows = pg(self.db().query(
            &format!(
                "SELECT NULL::text, NULL::text, \
                        (SELECT COALESCE(max(seq), 0) FROM text_changes), \
                        pg_snapshot_xmin(pg_current_snapshot())::text, \
                        COALESCE((SELECT value::bigint FROM metadata WHERE key = '{PRUNED}'), 0) \
                 UNION ALL \
                 SELECT DISTINCT target, namespace, NULL::bigint, NULL::text, NULL::bigint \
                 FROM text_changes WHERE seq > $1 OR xid >= $2::text::xid8 \
                 ORDER BY 1 NULLS FIRST"
            ),
            &[&since, &xmin.to_string()],
        ))?;
        let Some((head, changed)) = rows.split_first() else {
            return Ok(());
        };
        let (last, now_xmin, pruned): (i64, u64, i64) = (
            head.get(2),
            head.get::<_, String>(3).parse().unwrap_or(0),
            head.get(4),
        );
        let changed: std::collections::HashSet<(String, String)> =
            changed.iter().map(|r| (r.get(0), r.get(1))).collect();
        for ((target, ns), tail) in tails {
            // A pruning since its last read may have taken entries it had
            // not applied: its own catch-up decides.
            if changed.contains(&(table(target).to_string(), ns.clone()))
                || pruned != tail.pruned.load(Ordering::Acquire)
            {
                self.text_catch_up(target, &ns, &tail)?;
            } else if let Ok(_applying) = tail.applying.try_lock() {
                // Nothing of its namespace past its marks: every entry the
                // snapshot saw is in, and one it did not is at or above its
                // xmin.
                let mut p = unpoisoned(tail.part.write());
                p.seq = p.seq.max(last);
                tail.xmin.fetch_max(now_xmin, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// Whether `text_changes` holds entries older than the newest
    /// `TEXT_CHANGES_KEEP` (an error reads as no).
    pub fn text_prune_due(&self) -> bool {
        self.db()
            .query_one(
                &format!(
                    "SELECT (SELECT last_value FROM text_changes_seq_seq) - $1 > \
                     COALESCE((SELECT value::bigint FROM metadata WHERE key = '{PRUNED}'), 0)"
                ),
                &[&TEXT_CHANGES_KEEP],
            )
            .map(|r| r.get::<_, bool>(0))
            .unwrap_or(false)
    }

    /// Drops `text_changes` entries older than the newest
    /// `TEXT_CHANGES_KEEP`, noting through which `seq` and up to which
    /// transaction id, so a partition that needed them is rebuilt instead.
    pub fn prune_text_changes(&self) -> anyhow::Result<usize> {
        if !self.role.is_writer() || !self.is_autocommit() {
            return Ok(0);
        }
        let mut db = self.db();
        let mut tx = db.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PRUNE_LOCK])?;
        let gone = tx.query_one(
            &format!(
                "WITH cut AS (SELECT (SELECT last_value FROM text_changes_seq_seq) - $1 AS seq), \
                 gone AS (DELETE FROM text_changes WHERE seq <= (SELECT seq FROM cut) \
                          AND seq > COALESCE((SELECT value::bigint FROM metadata WHERE key = '{PRUNED}'), 0) \
                          RETURNING xid) \
                 SELECT (SELECT seq FROM cut), COUNT(*), max(xid)::text FROM gone"
            ),
            &[&TEXT_CHANGES_KEEP],
        )?;
        let (cut, n, newest): (i64, i64, Option<String>) = (gone.get(0), gone.get(1), gone.get(2));
        if n > 0 {
            let upsert = "INSERT INTO metadata(key, value) VALUES ($1, $2) \
                          ON CONFLICT (key) DO UPDATE SET value = excluded.value";
            tx.execute(upsert, &[&PRUNED, &cut.to_string()])?;
            // The newest id pruned only grows: an older one stays covered.
            let before: Option<String> = tx
                .query_opt("SELECT value FROM metadata WHERE key = $1", &[&PRUNED_XID])?
                .map(|r| r.get(0));
            let before: u64 = before.and_then(|v| v.parse().ok()).unwrap_or(0);
            let newest: u64 = newest.and_then(|v| v.parse().ok()).unwrap_or(0);
            tx.execute(upsert, &[&PRUNED_XID, &before.max(newest).to_string()])?;
        }
        tx.commit()?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// The builder thread: each queued partition read in one repeatable-read
/// snapshot through a connection of its own, and installed.
fn builder(url: &str, shared: &Weak<Mutex<PgText>>, queue: &mpsc::Receiver<(Target, String)>) {
    let mut held: Option<postgres::Client> = None;
    while let Ok(key) = queue.recv() {
        let started = std::time::Instant::now();
        let built = (|| -> anyhow::Result<Tail> {
            if held.is_none() {
                held = Some(super::connect(url)?);
            }
            let Some(db) = held.as_mut() else {
                anyhow::bail!("no connection");
            };
            let mut tx = db
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let tail = build(&mut tx, key.0, &key.1)?;
            tx.commit()?;
            Ok(tail)
        })();
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut index = unpoisoned(shared.lock());
        match built {
            Ok(tail) if index.enabled => {
                tracing::info!(table = table(key.0), namespace = %key.1,
                    rows = unpoisoned(tail.part.read()).rows(),
                    ms = started.elapsed().as_millis() as u64, "full-text partition built");
                index.parts.insert(key, Entry::Ready(Arc::new(tail)));
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), namespace = %key.1,
                    "building a full-text partition failed; SQL answers its searches, the next one retries");
                index.parts.remove(&key);
                held = None;
            }
        }
    }
}
