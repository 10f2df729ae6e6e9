//! Keeping a full-text partition (`text/`) in step with its table on a
//! SQLite connection: the committed changes of `text_changes` are applied
//! to the shared partition; inside a write transaction its own changes
//! are overlaid, never applied (a rollback must not leave them in the
//! shared index, and their change numbers are not final until commit),
//! and each search of the transaction reads only those the last one did
//! not (`text::OwnText`).

use std::sync::{Arc, PoisonError};

use mnemo_core::model::*;
use rusqlite::{ffi, params};

use super::filter::table;
use super::sqlite::*;
use super::text::{self, Overlay, Tokenized};
use super::text_store::Part;

/// The process's tokenizer could not be had: FTS5 answers instead.
struct NoTokenizer;

impl SqliteStore {
    /// Brings `part` up to the last change this connection sees. Every
    /// change known committed is applied; inside a write transaction the
    /// changes after its horizon (its own, uncommitted) come back as an
    /// overlay — and so do the committed ones from the first that touches
    /// a row it also wrote, whose committed version it cannot read.
    /// `None`: the log no longer reaches back to the partition (it is
    /// dropped, rebuilt on a later search). `idle`: a partition with no
    /// change to apply is marked current as of this snapshot (the
    /// background catch-up), so the pruned log never leaves it behind.
    pub(super) fn text_catch_up(
        &self,
        target: Target,
        ns: &str,
        part: &Part,
        idle: bool,
    ) -> R<Option<Arc<Overlay>>> {
        let state = self.txn_state();
        // Outside a transaction, one snapshot for the mark, the changes and
        // their rows.
        let tx = if self.conn.is_autocommit() {
            Some(sql(self.conn.unchecked_transaction())?)
        } else {
            None
        };
        let since = part.read().unwrap_or_else(PoisonError::into_inner).seq;
        if since < sql(text::pruned_through(&self.conn))? {
            self.text().parts.remove(&(target, ns.to_string()));
            return Ok(None);
        }
        let mut stmt = sql(self.conn.prepare_cached(
            "SELECT seq, row FROM text_changes WHERE target = ?1 AND namespace = ?2 AND seq > ?3 ORDER BY seq",
        ))?;
        let changes: Vec<(i64, i64)> = sql(sql(stmt
            .query_map(params![table(target), ns, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            }))?
        .collect())?;
        if changes.is_empty() {
            // Outside a write transaction every change this snapshot counts
            // is committed and visible: none of them is this namespace's.
            if idle && state != ffi::SQLITE_TXN_WRITE {
                let last = sql(text::last_change(&self.conn))?;
                let mut p = part.write().unwrap_or_else(PoisonError::into_inner);
                p.seq = p.seq.max(last);
            }
            return Ok(Some(Arc::default()));
        }
        let writing = state == ffi::SQLITE_TXN_WRITE;
        let horizon = if writing {
            self.write_horizon.get().unwrap_or(since)
        } else {
            i64::MAX
        };
        let key = (target, ns.to_string());
        // This transaction's last search overlaid the first of these: they
        // all stay overlaid (the first was past the horizon or touched a
        // row of its own, and still is), and only the rest are read.
        let kept = match self.own_text.borrow_mut().as_mut() {
            Some(own) if writing => own.take(&key, part, since, &changes),
            _ => None,
        };
        if let Some((known, mut overlay)) = kept {
            let mut added = Vec::with_capacity(changes.len() - known);
            for &(_, row) in &changes[known..] {
                let Ok(doc) = self.text_doc(target, ns, row)? else {
                    return Ok(None);
                };
                added.push((row, doc));
            }
            part.read()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_overlay(Arc::make_mut(&mut overlay), added);
            if let Some(own) = self.own_text.borrow_mut().as_mut() {
                own.keep(key, part, since, changes, Arc::clone(&overlay));
            }
            return Ok(Some(overlay));
        }
        let own: std::collections::HashSet<i64> = changes
            .iter()
            .filter(|(seq, _)| *seq > horizon)
            .map(|(_, row)| *row)
            .collect();
        let cut = changes
            .iter()
            .position(|(seq, row)| *seq > horizon || own.contains(row))
            .unwrap_or(changes.len());
        let mut current: Vec<(i64, i64, Option<Tokenized>)> = Vec::with_capacity(changes.len());
        for &(seq, row) in &changes {
            let Ok(doc) = self.text_doc(target, ns, row)? else {
                return Ok(None);
            };
            current.push((seq, row, doc));
        }
        drop(tx);
        let pending = current.split_off(cut);
        if !current.is_empty() {
            let mut p = part.write().unwrap_or_else(PoisonError::into_inner);
            for (seq, row, doc) in current {
                // Another connection may have applied some meanwhile; each
                // change reads the row as it is now, so applying it twice is
                // harmless, but the mark only moves forward.
                if seq <= p.seq {
                    continue;
                }
                match doc {
                    Some(doc) => p.put(row, &doc),
                    None => p.remove(row),
                }
                p.seq = seq;
                p.unsaved += 1;
            }
        }
        let p = part.read().unwrap_or_else(PoisonError::into_inner);
        let kept: Vec<(i64, i64)> = pending.iter().map(|(seq, row, _)| (*seq, *row)).collect();
        let overlay = Arc::new(p.overlay(pending.into_iter().map(|(_, r, d)| (r, d)).collect()));
        if writing && !kept.is_empty() {
            let since = p.seq;
            drop(p);
            if let Some(own) = self.own_text.borrow_mut().as_mut() {
                own.keep(key, part, since, kept, Arc::clone(&overlay));
            }
        }
        Ok(Some(overlay))
    }

    /// Row `row`'s tokens as the connection reads it now (`Ok(None)`: not
    /// in `ns`'s partition any more; `Err`: no tokenizer here).
    fn text_doc(
        &self,
        target: Target,
        ns: &str,
        row: i64,
    ) -> R<Result<Option<Tokenized>, NoTokenizer>> {
        Ok(match sql(text::read_row(&self.conn, target, row))? {
            Some((row_ns, cols)) if row_ns == ns => {
                let docs = &self.text_docs;
                match self.with_tokenizer(|tok| docs.borrow_mut().tokens(tok, cols)) {
                    Some(doc) => Ok(Some(doc)),
                    None => Err(NoTokenizer),
                }
            }
            _ => Ok(None),
        })
    }

    /// Drops what the connection kept of a transaction (`nested`: a
    /// savepoint in one) about to end, committed when `ok`: on a rollback,
    /// what its exact vector partitions applied of it; at the end of the
    /// whole transaction, or a savepoint's rollback, what its searches
    /// overlaid of its own text changes (`text::OwnText`).
    pub fn ending(&self, nested: bool, ok: bool) {
        if !ok {
            self.forget_exact();
        }
        let mut own = self.own_text.borrow_mut();
        match own.as_mut() {
            Some(o) if nested && !ok => o.forget(),
            Some(_) if !nested => *own = None,
            _ => {}
        }
    }

    /// The connection's transaction state (`sqlite3_txn_state`): none,
    /// read or write.
    pub(super) fn txn_state(&self) -> std::ffi::c_int {
        // SAFETY: the live connection's handle; a null schema asks for the
        // most advanced state over all of them.
        unsafe { ffi::sqlite3_txn_state(self.conn.handle(), std::ptr::null()) }
    }

    /// `BEGIN IMMEDIATE`, noting the last text change committed before it:
    /// while the transaction is open, every change up to it is someone
    /// else's, committed, and may be applied to the shared index.
    pub fn begin_immediate(&self) -> anyhow::Result<()> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        self.write_horizon.set(Some(text::last_change(&self.conn)?));
        *self.own_text.borrow_mut() = Some(Default::default());
        Ok(())
    }
}
