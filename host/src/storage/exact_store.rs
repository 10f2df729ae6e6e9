//! The exact vector partitions (`exact.rs`) on a SQLite connection:
//! reading a partition from its vec0 table, replaying `vector_changes`
//! into the partitions held, and dropping them after a rollback.

use std::sync::atomic::Ordering;

use mnemo_core::model::Target;
use rusqlite::{OptionalExtension, params};

use super::exact::{EXACT_MAX_FLOATS, Part, Table};
use super::filter::table;
use super::sqlite::SqliteStore;
use super::{R, rows, sql};
use crate::storage::VectorState;

impl SqliteStore {
    /// Drops this connection's exact partitions (its transaction rolled
    /// back: what they applied of it is undone in the table).
    pub fn forget_exact(&self) {
        *self.exact.borrow_mut() = Default::default();
    }

    /// Drops this connection's copy of `ns`'s partition, if it holds one.
    pub(super) fn release_exact(&self, target: Target, ns: &str) {
        if let Some(tab) = self.exact.borrow_mut().tables.get_mut(&target) {
            tab.drop_part(ns);
        }
    }

    /// The `k` nearest rows of `ns`'s partition to `v`, with their
    /// sqlite-vec distance; `None` when the partition is left to
    /// sqlite-vec (larger than `EXACT_MAX_FLOATS`, or no vectors).
    pub(super) fn exact_search(
        &self,
        target: Target,
        ns: &str,
        v: &[f32],
        k: u32,
    ) -> R<Option<Vec<(i64, f32)>>> {
        let VectorState::Enabled { dimension, .. } = self.vector_state() else {
            return Ok(None);
        };
        let dimension = dimension as usize;
        if v.len() != dimension {
            return Ok(None);
        }
        let rows = self.partition_size(target, ns)?;
        if rows.saturating_mul(dimension) > EXACT_MAX_FLOATS {
            // Grown past the bound since it was read: sqlite-vec's now.
            self.release_exact(target, ns);
            return Ok(None);
        }
        // One snapshot for the cursor, the changes and the rows.
        let _tx = if self.conn.is_autocommit() {
            Some(sql(self.conn.unchecked_transaction())?)
        } else {
            None
        };
        let last = sql(self.last_vector_change())?;
        let epoch = self.shared.vector_log_epoch.load(Ordering::Acquire);
        let mut exact = self.exact.borrow_mut();
        exact.tick += 1;
        let tick = exact.tick;
        let tab = exact.tables.entry(target).or_default();
        let held: usize = tab.home.len();
        // A pruned log, another embedder, or more changes to replay than
        // rows to read again: start over.
        if tab.epoch != epoch
            || tab.dimension != dimension
            || last < tab.synced
            || (last - tab.synced) as usize > held
        {
            *tab = Table {
                synced: last,
                epoch,
                dimension,
                ..Table::default()
            };
        }
        if last > tab.synced {
            self.replay(target, tab, last)?;
        }
        if !tab.parts.contains_key(ns) {
            let read = self.read_partition(target, ns)?;
            exact.make_room(read.len() * dimension);
            let tab = exact.tables.entry(target).or_default();
            let mut part = Part::new(dimension);
            for (row, vector) in read {
                if vector.len() == dimension {
                    part.put(row, &vector);
                    tab.home.insert(row, ns.to_string());
                }
            }
            tab.parts.insert(ns.to_string(), part);
        }
        let tab = exact.tables.entry(target).or_default();
        let Some(part) = tab.parts.get_mut(ns) else {
            return Ok(None);
        };
        part.used = tick;
        Ok(Some(part.nearest(v, k as usize)))
    }

    /// Applies the changes after `tab.synced` up to `last` to the
    /// partitions held.
    fn replay(&self, target: Target, tab: &mut Table, last: i64) -> R<()> {
        let t = table(target);
        // NOT INDEXED: a range of the primary key, not the partition index.
        let mut changes = sql(self.conn.prepare_cached(
            "SELECT row FROM vector_changes NOT INDEXED WHERE seq > ?1 AND seq <= ?2 AND target = ?3 ORDER BY seq",
        ))?;
        let changed: Vec<i64> =
            sql(sql(changes.query_map(params![tab.synced, last, t], |r| r.get(0)))?.collect())?;
        let mut now = sql(self.conn.prepare_cached(&format!(
            "SELECT namespace, embedding FROM vec_{t} WHERE rowid = ?1"
        )))?;
        for row in changed {
            let found: Option<(String, Vec<u8>)> = sql(now
                .query_row([row], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional())?;
            tab.apply(row, found.map(|(ns, b)| (ns, rows::blob_vector(&b))));
        }
        tab.synced = last;
        Ok(())
    }

    fn read_partition(&self, target: Target, ns: &str) -> R<Vec<(i64, Vec<f32>)>> {
        let t = table(target);
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT rowid, embedding FROM vec_{t} WHERE namespace = ?1"
        )))?;
        sql(sql(stmt.query_map([ns], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                rows::blob_vector(&r.get::<_, Vec<u8>>(1)?),
            ))
        }))?
        .collect())
    }
}
