//! Reads the host serves to operators as they are, with no logic of the
//! core's: the decision log (table `audit_log`), the integrity counts
//! `/health` reports, and the sessions seen so far.

use mnemo_core::model::{Decision, Session};
use rmcp::schemars::{self, JsonSchema};
use rusqlite::params;
use serde::Serialize;

use super::rows::SESSION_COLUMNS;
use super::{SqliteStore, rows};

/// Which audit-log entries to read (every field narrows; newest first).
#[derive(Debug, Clone)]
pub struct DecisionFilter {
    pub limit: u32,
    /// Only decisions about this memory, episode or session.
    pub target: Option<String>,
    /// Only this action (`promote`, `merge`, `evict`, `inject`, ...).
    pub action: Option<String>,
    /// Only this namespace, plus the store-wide entries (namespace `*`,
    /// e.g. scheduled runs).
    pub namespace: Option<String>,
    /// Only entries at or after this time (Unix ms).
    pub since: Option<i64>,
}

impl Default for DecisionFilter {
    fn default() -> Self {
        Self {
            limit: 100,
            target: None,
            action: None,
            namespace: None,
            since: None,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Integrity {
    /// Memories stored (active and in the trash).
    pub memories: u64,
    /// Rows of the memories' full-text index (equal to `memories` when
    /// healthy).
    pub memory_fts_rows: u64,
    /// Turns stored.
    pub episodes: u64,
    /// Rows of the turns' full-text index (equal to `episodes` when healthy).
    pub episode_fts_rows: u64,
    /// Active rows without a vector (the background backfill's queue).
    pub missing_vectors: u64,
    /// Junction rows pointing at no memory, episode or entity.
    pub orphan_links: u64,
}

impl SqliteStore {
    /// The latest lifecycle decisions, newest first; optionally for one id.
    pub fn decision_log(&self, f: &DecisionFilter) -> anyhow::Result<Vec<Decision>> {
        let mut stmt = self.connection().prepare_cached(
            "SELECT at, namespace, action, target_id, detail FROM audit_log \
             WHERE (?2 IS NULL OR target_id = ?2) AND (?3 IS NULL OR action = ?3) \
             AND (?4 IS NULL OR namespace = ?4 OR namespace = '*') AND (?5 IS NULL OR at >= ?5) \
             ORDER BY id DESC LIMIT ?1",
        )?;
        let args = params![f.limit, f.target, f.action, f.namespace, f.since];
        let rows = stmt.query_map(args, |r| {
            Ok(Decision {
                at: r.get(0)?,
                namespace: r.get(1)?,
                action: r
                    .get::<_, String>(2)?
                    .parse()
                    .map_err(|e: mnemo_core::CoreError| {
                        rusqlite::Error::FromSqlConversionFailure(
                            2,
                            rusqlite::types::Type::Text,
                            Box::new(e),
                        )
                    })?,
                target_id: r.get(3)?,
                detail: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The sessions of a namespace, most recently active first; only those
    /// not yet consolidated when `pending`.
    pub fn sessions(
        &self,
        namespace: &str,
        pending: bool,
        limit: u32,
    ) -> anyhow::Result<Vec<Session>> {
        let mut stmt = self.connection().prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE namespace = ?1 AND (?2 = 0 OR consolidated_at IS NULL) \
             ORDER BY last_seen_at DESC, id LIMIT ?3"
        ))?;
        let rows = stmt.query_map(params![namespace, pending, limit], rows::session)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn integrity(&self) -> anyhow::Result<Integrity> {
        let c = self.connection();
        let n = |sql: &str| -> anyhow::Result<u64> {
            Ok(c.query_row(sql, [], |r| r.get::<_, i64>(0))? as u64)
        };
        let vectors = self.vector_state().enabled();
        Ok(Integrity {
            memories: n("SELECT COUNT(*) FROM memories")?,
            memory_fts_rows: n("SELECT COUNT(*) FROM memories_fts")?,
            episodes: n("SELECT COUNT(*) FROM episodes")?,
            episode_fts_rows: n("SELECT COUNT(*) FROM episodes_fts")?,
            missing_vectors: if vectors {
                n(
                    "SELECT (SELECT COUNT(*) FROM memories WHERE valid_until IS NULL AND rowid NOT IN (SELECT rowid FROM vec_memories)) \
                   + (SELECT COUNT(*) FROM episodes WHERE valid_until IS NULL AND rowid NOT IN (SELECT rowid FROM vec_episodes))",
                )?
            } else {
                0
            },
            orphan_links: n(
                "SELECT (SELECT COUNT(*) FROM memory_entities j WHERE j.memory_id NOT IN (SELECT id FROM memories) \
                               OR j.entity_id NOT IN (SELECT id FROM entities)) \
                             + (SELECT COUNT(*) FROM episode_entities j WHERE j.episode_id NOT IN (SELECT id FROM episodes) \
                               OR j.entity_id NOT IN (SELECT id FROM entities))",
            )?,
        })
    }
}
