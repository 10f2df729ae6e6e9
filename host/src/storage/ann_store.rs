//! The HNSW index kept in step with the vector tables across threads and
//! restarts.
//!
//! Every vector write or delete appends to `vector_changes` (in the same
//! transaction), numbered by `seq`, and every point of a segment carries
//! the number of its version. When a segment is installed — built in the
//! background, or loaded from disk at start (`ann/file.rs`) — the store
//! replays the log into the partition from where it last did: a vector
//! written since becomes fresh (searched exactly), a point of an older
//! version becomes stale. So a write by the writer while a snapshot was
//! taken, by another process, or before a kill -9, is never missing from
//! the index.

use mnemo_core::model::Target;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::ann::file as ann_file;
use super::ann::{Key, Persist};
use super::filter::table;
use super::rows;
use super::{R, sql};

impl SqliteStore {
    /// Logs a vector write (or delete) of `rowid`; returns its number.
    pub(super) fn record_vector_change(&self, target: Target, ns: &str, rowid: i64) -> R<i64> {
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT INTO vector_changes(target, namespace, row) VALUES (?1, ?2, ?3)",
        ))?;
        sql(stmt.execute(params![table(target), ns, rowid]))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The last change number this connection sees.
    pub(super) fn last_vector_change(&self) -> rusqlite::Result<i64> {
        self.conn
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM vector_changes")?
            .query_row([], |r| r.get(0))
    }

    /// Replays, for every graph installed since the last look, the changes
    /// after its snapshot. Call before using the index.
    pub(super) fn ann_sync(&self) {
        let installed = self.ann().take_installed();
        for (key, seq) in installed {
            if let Err(e) = self.catch_up(&key, seq) {
                tracing::warn!(error = %format!("{e:#}"), "replaying vector changes into the HNSW graph failed; its partition is searched exactly");
                self.ann().forget(&key);
            }
        }
    }

    /// Replays the changes of `key` after `since`: each marks the points
    /// of older versions stale; one whose row no segment holds at that
    /// version or later is read from the table into `fresh` (or removed).
    fn catch_up(&self, key: &Key, since: i64) -> anyhow::Result<()> {
        let (target, ns) = (key.0, key.1.as_str());
        let t = table(target);
        let mut changes = self.conn.prepare_cached(
            "SELECT seq, row FROM vector_changes WHERE target = ?1 AND namespace = ?2 AND seq > ?3 ORDER BY seq",
        )?;
        let changes: Vec<(i64, i64)> = changes
            .query_map(params![table(target), ns, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut vector = self
            .conn
            .prepare_cached(&format!("SELECT embedding FROM vec_{t} WHERE rowid = ?1"))?;
        let mut last = since;
        for (seq, row) in changes {
            last = seq;
            if self.ann().settled(target, ns, row, seq) {
                continue;
            }
            let blob: Option<Vec<u8>> = vector.query_row([row], |r| r.get(0)).optional()?;
            match blob {
                Some(b) => self.ann().put(target, ns, row, &rows::blob_vector(&b), seq),
                None => self.ann().remove(target, ns, row, seq),
            }
        }
        self.ann().synced(key, last);
        Ok(())
    }

    /// At start (the writer, once the embedder is locked): loads the saved
    /// segments of this embedder, replays what came after them, and drops
    /// the changes no segment needs any more.
    pub(super) fn load_graphs(&self, model: &str, dimension: u32) -> anyhow::Result<()> {
        let Some(dir) = ann_file::dir_of(&self.path) else {
            return Ok(());
        };
        if !self.ann().enabled() {
            return Ok(());
        }
        let persist = Persist {
            dir,
            model: model.into(),
            dimension,
        };
        let loaded = ann_file::load_all(&persist);
        // A read-only database's graphs are read, and new ones kept in memory.
        let read_only = self.is_read_only();
        self.ann().persist_to((!read_only).then_some(persist));
        // Per partition, the oldest point's version: the log is needed after it.
        let mut keep: std::collections::HashMap<Key, i64> = std::collections::HashMap::new();
        for (key, seg) in loaded {
            let (first, _) = seg.seq_range();
            let oldest = keep.entry(key.clone()).or_insert(first);
            *oldest = (*oldest).min(first);
            self.ann().install_loaded(key, seg);
        }
        self.ann_sync();
        if read_only {
            return Ok(());
        }
        // Changes at or before every loaded segment's oldest point, and those
        // of partitions without segments (a future build snapshots them),
        // are no longer needed.
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "CREATE TEMP TABLE IF NOT EXISTS kept_graphs(target TEXT, namespace TEXT, seq INTEGER)",
            [],
        )?;
        tx.execute("DELETE FROM kept_graphs", [])?;
        for (key, seq) in &keep {
            tx.execute(
                "INSERT INTO kept_graphs VALUES (?1, ?2, ?3)",
                params![table(key.0), key.1, seq],
            )?;
        }
        tx.execute(
            "DELETE FROM vector_changes WHERE NOT EXISTS (SELECT 1 FROM kept_graphs k \
             WHERE k.target = vector_changes.target AND k.namespace = vector_changes.namespace \
             AND vector_changes.seq > k.seq)",
            [],
        )?;
        tx.commit()?;
        self.shared
            .vector_log_epoch
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(())
    }

    /// Forgets the saved graphs and the change log (the vectors were reset).
    pub(super) fn drop_graphs(&self) -> anyhow::Result<()> {
        if let Some(dir) = ann_file::dir_of(&self.path) {
            ann_file::remove_all(&dir);
        }
        self.conn.execute("DELETE FROM vector_changes", [])?;
        self.shared
            .vector_log_epoch
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(())
    }
}
