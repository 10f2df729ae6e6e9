//! The transaction around one engine call: `BEGIN` (a read) or `BEGIN
//! IMMEDIATE` (a write, so the write lock is taken up front and a busy
//! database waits instead of failing half-way) when none is open, a
//! savepoint inside an open one (a batch). Ending it reports a failed
//! `ROLLBACK` instead of hiding it.

use anyhow::Context;
use rusqlite::Connection;

use crate::ports::HostPorts;
use crate::storage::SqliteStore;

/// Whether a call may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

const SAVEPOINT: &str = "core_call";

/// An open transaction or savepoint; end it with `commit` or `rollback`.
#[must_use]
pub struct Transaction {
    nested: bool,
}

impl Transaction {
    /// On a reader connection every call is a read (`BEGIN`): the writes
    /// it asks for are kept as effects, never taken as a write lock.
    pub fn begin(store: &SqliteStore, mode: Mode) -> anyhow::Result<Self> {
        let conn = store.connection();
        let mode = if store.is_reader() { Mode::Read } else { mode };
        let nested = !conn.is_autocommit();
        let sql = match (nested, mode) {
            (true, _) => format!("SAVEPOINT {SAVEPOINT}"),
            (false, Mode::Read) => "BEGIN".to_string(),
            (false, Mode::Write) => "BEGIN IMMEDIATE".to_string(),
        };
        conn.execute_batch(&sql)
            .with_context(|| format!("opening the call's transaction (`{sql}`)"))?;
        Ok(Self { nested })
    }

    pub fn commit(self, conn: &Connection) -> anyhow::Result<()> {
        let sql = match self.nested {
            true => format!("RELEASE {SAVEPOINT}"),
            false => "COMMIT".to_string(),
        };
        conn.execute_batch(&sql)
            .with_context(|| format!("committing the call (`{sql}`)"))
    }

    /// Commits when `ok`, rolls back otherwise; then, once the outermost
    /// transaction has ended, writes the LLM usage ledger — after the
    /// rollback, so the calls a failed call spent stay on record.
    pub fn finish(self, ports: &HostPorts, ok: bool) -> anyhow::Result<()> {
        let conn = ports.store.connection();
        let ended = if ok {
            self.commit(conn)
        } else {
            // A reader's kept effects belong to the call that failed.
            ports.store.drop_effects();
            self.rollback(conn)
        };
        if conn.is_autocommit() {
            ports.flush_ledger();
        }
        ended
    }

    pub fn rollback(self, conn: &Connection) -> anyhow::Result<()> {
        let sql = match self.nested {
            true => format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}"),
            false => "ROLLBACK".to_string(),
        };
        conn.execute_batch(&sql)
            .with_context(|| format!("rolling the call back (`{sql}`)"))
    }
}
