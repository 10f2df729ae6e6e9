//! Reader connections: readers run in parallel with the one writer (WAL lets
//! a reader see the last commit while a write is in progress).
//!
//! A reader's connection is `query_only`, so a call routed to it by mistake
//! fails instead of writing behind the writer's back. A read still has
//! effects: recall counts an access (`touch`), context and resume renew what
//! they show (`renew`), context logs each injection. Those three are
//! commutative (increments, a timestamp set to "now", an append), so the
//! reader keeps them as [`Effect`]s and the server hands them to the writer,
//! which applies them in one short transaction after the reply
//! ([`SqliteStore::apply_effects`]). Until then another reader sees the old
//! access count; every other field is as committed.

use std::cell::RefCell;
use std::sync::Arc;

use anyhow::Context;
use mnemo_core::model::{Decision, Millis};
use rusqlite::Connection;

use super::SqliteStore;
use super::sqlite::R;

/// A write a read call asked for, kept for the writer.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// `touch_memories`: one more access, at this time.
    Touch(Vec<String>, Millis),
    /// `renew_memories`: shown to the agent at this time.
    Renew(Vec<String>, Millis),
    /// A decision for the log.
    Decision(Decision),
}

impl SqliteStore {
    /// A read-only connection to the same database, sharing this store's
    /// vector state and HNSW graphs. The database must be a file (WAL).
    pub fn reader(&self) -> anyhow::Result<SqliteStore> {
        super::register_sqlite_vec();
        let conn = Connection::open(&self.path)
            .with_context(|| format!("opening a reader on {}", self.path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "query_only", true)?;
        super::register_functions(&conn)?;
        Ok(SqliteStore {
            conn,
            path: self.path.clone(),
            shared: Arc::clone(&self.shared),
            deferred: Some(RefCell::new(Vec::new())),
        })
    }

    /// Whether this is a reader connection (its writes are deferred or refused).
    pub fn is_reader(&self) -> bool {
        self.deferred.is_some()
    }

    /// Keeps `effect` when this is a reader; `false` on the writer, which
    /// writes it itself.
    pub(super) fn defer(&self, effect: impl FnOnce() -> Effect) -> bool {
        match &self.deferred {
            Some(list) => {
                list.borrow_mut().push(effect());
                true
            }
            None => false,
        }
    }

    /// The effects kept since the last call (a reader's; empty on the writer).
    pub fn take_effects(&self) -> Vec<Effect> {
        self.deferred
            .as_ref()
            .map(|l| std::mem::take(&mut *l.borrow_mut()))
            .unwrap_or_default()
    }

    /// Forgets the effects of a call that failed (its transaction rolled back).
    pub fn drop_effects(&self) {
        drop(self.take_effects());
    }

    /// Writes effects a reader kept (call it on the writer, inside a
    /// transaction). A memory deleted meanwhile is simply not matched.
    pub fn apply_effects(&self, effects: &[Effect]) -> R<()> {
        for e in effects {
            match e {
                Effect::Touch(ids, at) => self.touch_memories(ids, *at)?,
                Effect::Renew(ids, at) => self.renew_memories(ids, *at)?,
                Effect::Decision(d) => self.log_decision(d)?,
            }
        }
        Ok(())
    }
}
