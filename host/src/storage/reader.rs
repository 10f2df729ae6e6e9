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
//!
//! A *rehearsal* connection is a reader whose writes all succeed without
//! writing anything: a call that writes (a consolidation cycle, a session's
//! distillation) runs there first, for the answers of its LLM calls only,
//! then again on the writer, which gets those answers from memory
//! (`llm/rehearsal.rs`). Nothing the rehearsal "writes" is kept.

use std::cell::RefCell;
use std::sync::Arc;

use anyhow::Context;
use mnemo_core::model::{Decision, Millis};

use super::R;
use super::SqliteStore;

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

/// What a connection may do with the writes a call asks for.
pub(super) enum Role {
    /// Writes them.
    Writer,
    /// Refuses them, but keeps a read's effects for the writer.
    Reader(RefCell<Vec<Effect>>),
    /// Accepts and forgets them all.
    Rehearsal,
}

impl Role {
    /// A reader keeping effects.
    pub(super) fn reader() -> Self {
        Role::Reader(RefCell::new(Vec::new()))
    }

    pub(super) fn is_writer(&self) -> bool {
        matches!(self, Role::Writer)
    }

    /// Whether writes succeed without writing (a rehearsal).
    pub(super) fn absorbs(&self) -> bool {
        matches!(self, Role::Rehearsal)
    }

    /// Keeps `effect` on a reader, forgets it in a rehearsal (`true`: the
    /// caller writes nothing); `false` on the writer, which writes it itself.
    pub(super) fn defer(&self, effect: impl FnOnce() -> Effect) -> bool {
        match self {
            Role::Writer => false,
            Role::Reader(list) => {
                list.borrow_mut().push(effect());
                true
            }
            Role::Rehearsal => true,
        }
    }

    /// Forgets the accesses and renewals kept since the last call, keeping
    /// its decisions: a read by a key that may not write the namespace.
    pub(super) fn forget_touches(&self) {
        if let Role::Reader(list) = self {
            list.borrow_mut()
                .retain(|e| matches!(e, Effect::Decision(_)));
        }
    }

    /// The effects kept since the last call (a reader's; empty otherwise).
    pub(super) fn take_effects(&self) -> Vec<Effect> {
        match self {
            Role::Reader(list) => std::mem::take(&mut *list.borrow_mut()),
            _ => Vec::new(),
        }
    }
}

impl SqliteStore {
    /// A read-only connection to the same database, sharing this store's
    /// vector state and HNSW graphs. The database must be a file (WAL).
    pub fn reader(&self) -> anyhow::Result<SqliteStore> {
        self.beside(Role::reader())
    }

    /// A read-only connection whose writes succeed and are forgotten.
    pub fn rehearsal(&self) -> anyhow::Result<SqliteStore> {
        self.beside(Role::Rehearsal)
    }

    fn beside(&self, role: Role) -> anyhow::Result<SqliteStore> {
        anyhow::ensure!(
            self.path.to_str() != Some(":memory:"),
            "an in-memory database has no readers: serve needs a database file"
        );
        let conn = if self.is_read_only() {
            super::open_read_only(&self.path)
        } else {
            super::connect(&self.path)
        }
        .with_context(|| format!("opening a reader on {}", self.path.display()))?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(SqliteStore {
            conn,
            path: self.path.clone(),
            shared: Arc::clone(&self.shared),
            role,
            write_horizon: std::cell::Cell::new(None),
            text_docs: Default::default(),
            own_text: Default::default(),
            exact: Default::default(),
        })
    }

    /// Whether this connection is read-only (a reader or a rehearsal).
    pub fn is_reader(&self) -> bool {
        !self.role.is_writer()
    }

    /// Whether writes succeed without writing (a rehearsal).
    pub(super) fn absorbs(&self) -> bool {
        self.role.absorbs()
    }

    /// Keeps `effect` on a reader, forgets it in a rehearsal (`true`: the
    /// caller writes nothing); `false` on the writer, which writes it itself.
    pub(super) fn defer(&self, effect: impl FnOnce() -> Effect) -> bool {
        self.role.defer(effect)
    }

    /// The effects kept since the last call (a reader's; empty otherwise).
    pub fn take_effects(&self) -> Vec<Effect> {
        self.role.take_effects()
    }

    /// Forgets the effects of a call that failed (its transaction rolled back).
    pub fn drop_effects(&self) {
        drop(self.take_effects());
    }

    pub fn forget_touches(&self) {
        self.role.forget_touches()
    }

    /// Writes effects a reader kept (call it on the writer, inside a
    /// transaction). A memory deleted meanwhile is simply not matched.
    pub fn apply_effects(&self, effects: &[Effect]) -> R<()> {
        apply(self, effects)
    }
}

/// Writes `effects` through `store`'s port, in order (either backend's writer).
pub(super) fn apply(store: &impl mnemo_core::ports::Storage, effects: &[Effect]) -> R<()> {
    for e in effects {
        match e {
            Effect::Touch(ids, at) => store.touch_memories(ids, *at)?,
            Effect::Renew(ids, at) => store.renew_memories(ids, *at)?,
            Effect::Decision(d) => store.log_decision(d)?,
        }
    }
    Ok(())
}
