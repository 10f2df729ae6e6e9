//! The transaction around one engine call: `BEGIN` (a read) or, on SQLite,
//! `BEGIN IMMEDIATE` (a write, so the write lock is taken up front and a
//! busy database waits instead of failing half-way) when none is open, a
//! savepoint inside an open one (a batch). On Postgres a write takes the
//! write locks of the namespaces it writes ([`Locks`], advisory locks) for
//! its transaction: one writer at a time per namespace across every server,
//! while writes of other namespaces go on. Ending it reports a failed
//! `ROLLBACK` instead of hiding it.

use anyhow::Context;

use crate::ports::HostPorts;
use crate::storage::{Locks, Store};

/// Whether a call may write, and what it must hold while it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write(Locks),
}

const SAVEPOINT: &str = "core_call";

/// An open transaction or savepoint; end it with `finish`.
#[must_use]
pub struct Transaction {
    nested: bool,
}

impl Transaction {
    /// On a reader connection every call is a read (`BEGIN`): the writes
    /// it asks for are kept as effects, never taken as a write lock.
    pub fn begin(store: &Store, mode: &Mode) -> anyhow::Result<Self> {
        let mode = if store.is_reader() { &Mode::Read } else { mode };
        let s = match store {
            Store::Sqlite(s) => s,
            Store::Postgres(p) => {
                let locks = match mode {
                    Mode::Read => None,
                    Mode::Write(locks) => Some(locks),
                };
                return Ok(Self {
                    nested: p.begin(locks)?,
                });
            }
        };
        let nested = !s.connection().is_autocommit();
        let sql = match (nested, mode) {
            (true, _) => format!("SAVEPOINT {SAVEPOINT}"),
            (false, Mode::Read) => "BEGIN".to_string(),
            (false, Mode::Write(_)) => {
                s.begin_immediate()
                    .context("opening the call's transaction (`BEGIN IMMEDIATE`)")?;
                return Ok(Self { nested });
            }
        };
        s.connection()
            .execute_batch(&sql)
            .with_context(|| format!("opening the call's transaction (`{sql}`)"))?;
        Ok(Self { nested })
    }

    /// Commits when `ok`, rolls back otherwise; then, once the outermost
    /// transaction has ended, writes the LLM usage ledger — after the
    /// rollback, so the calls a failed call spent stay on record.
    pub fn finish(self, ports: &HostPorts, ok: bool) -> anyhow::Result<()> {
        if !ok {
            // A reader's kept effects belong to the call that failed.
            ports.store.drop_effects();
        }
        let (ended, outermost) = match &ports.store {
            Store::Sqlite(s) => {
                s.ending(self.nested, ok);
                let conn = s.connection();
                let sql = match (self.nested, ok) {
                    (true, true) => format!("RELEASE {SAVEPOINT}"),
                    (true, false) => format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}"),
                    (false, true) => "COMMIT".to_string(),
                    (false, false) => "ROLLBACK".to_string(),
                };
                let ended = conn
                    .execute_batch(&sql)
                    .with_context(|| format!("ending the call (`{sql}`)"));
                (ended, conn.is_autocommit())
            }
            Store::Postgres(p) => (p.end(self.nested, ok), p.is_autocommit()),
        };
        if outermost {
            ports.flush_ledger();
        }
        ended
    }
}
