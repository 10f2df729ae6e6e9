//! Several servers on one Postgres database (issue 16): who does the
//! background work. The embedding backfill and the topic rebuild run on
//! one server at a time — the one whose connection holds the job's
//! session-level advisory lock (released when that connection ends, so a
//! server that dies hands the job on); a scheduled task runs once per
//! scheduled minute across the servers — the first to claim the minute in
//! `metadata`, under a transaction-level advisory lock.

use super::PgStore;

/// Background jobs one server leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lead {
    Backfill,
    Topics,
}

impl Lead {
    /// The job's advisory lock key (`mnemo` in ASCII, then the job).
    fn key(self) -> i64 {
        0x6d6e_656d_6f00 + 0x10 + self as i64
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The lock every slot claim takes.
const CLAIM_LOCK: i64 = 0x6d6e_656d_6f20;

impl PgStore {
    /// Whether this connection leads `job` (it takes the lead when free).
    pub fn lead(&self, job: Lead) -> bool {
        if self.leading.get() & job.bit() != 0 {
            return true;
        }
        let took = self
            .db()
            .query_one("SELECT pg_try_advisory_lock($1)", &[&job.key()])
            .map(|r| r.get::<_, bool>(0));
        match took {
            Ok(true) => {
                self.leading.set(self.leading.get() | job.bit());
                tracing::info!(job = ?job, "this server leads the job on the shared database");
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::warn!(error = %e, job = ?job, "could not ask for the job's lock");
                false
            }
        }
    }

    /// Claims minute `slot` of scheduled `task`: `true` for the first
    /// server to ask, `false` for every other.
    pub fn claim_slot(&self, task: &str, slot: i64) -> anyhow::Result<bool> {
        let mut db = self.db();
        let mut tx = db.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CLAIM_LOCK])?;
        let key = format!("scheduled:{task}");
        let last: Option<i64> = tx
            .query_opt("SELECT value FROM metadata WHERE key = $1", &[&key])?
            .and_then(|r| r.get::<_, String>(0).parse().ok());
        if last.is_some_and(|l| l >= slot) {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO metadata(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &slot.to_string()],
        )?;
        tx.commit()?;
        Ok(true)
    }
}
