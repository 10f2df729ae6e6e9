//! A write transaction's own changes to a partition, kept from one of its
//! searches to the next.
//!
//! Inside a write transaction the changes after its horizon are scored
//! beside the partition, never applied to it (`Overlay`, `text_catch_up.rs`).
//! Each search used to read all of them back from the table and build
//! the overlay anew, so a batch of 100 remembers read its own rows up to
//! 99 times each: 14% of the writer remembering into a filled
//! 100,000-row store (docs/benchmarks.md). Now a search reads only the
//! changes after those the last one read, and extends that overlay.
//!
//! What was read holds while the transaction goes on: a connection keeps
//! it only inside a transaction opened by `SqliteStore::begin_immediate`
//! (as every server write is), whose horizon therefore stays put, and
//! drops it when that ends or a savepoint in it rolls back
//! (`SqliteStore::ending`, from the call's `Transaction`): rows and change
//! numbers written after a rollback may repeat those it undid.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};

use mnemo_core::model::Target;

use super::partition::{Overlay, Partition};

/// One partition's overlay as the last search left it.
struct Own {
    /// The partition it overlays (a rebuilt one is another).
    part: Weak<RwLock<Partition>>,
    /// The partition's mark then.
    since: i64,
    /// The (change number, row) pairs the overlay holds, in order.
    changes: Vec<(i64, i64)>,
    overlay: Arc<Overlay>,
}

/// A transaction's overlays, by (table, namespace).
#[derive(Default)]
pub struct OwnText {
    parts: HashMap<(Target, String), Own>,
}

impl OwnText {
    /// Drops every overlay (a savepoint rolled back).
    pub fn forget(&mut self) {
        self.parts.clear();
    }

    /// `key`'s overlay and how many of `changes` it holds, when those are
    /// where `changes` (the partition's changes after `since`, now) begin:
    /// the same partition and mark.
    pub fn take(
        &mut self,
        key: &(Target, String),
        part: &Arc<RwLock<Partition>>,
        since: i64,
        changes: &[(i64, i64)],
    ) -> Option<(usize, Arc<Overlay>)> {
        let own = self.parts.remove(key)?;
        let same = own.part.upgrade().is_some_and(|p| Arc::ptr_eq(&p, part))
            && own.since == since
            && changes.starts_with(&own.changes);
        same.then_some((own.changes.len(), own.overlay))
    }

    /// Keeps `key`'s overlay of `changes` for the transaction's next search.
    pub fn keep(
        &mut self,
        key: (Target, String),
        part: &Arc<RwLock<Partition>>,
        since: i64,
        changes: Vec<(i64, i64)>,
        overlay: Arc<Overlay>,
    ) {
        self.parts.insert(
            key,
            Own {
                part: Arc::downgrade(part),
                since,
                changes,
                overlay,
            },
        );
    }
}
