//! Reads for observability: the audit log of lifecycle decisions and the
//! integrity counts `/health` reports.

use mnemo_core::model::AuditEntry;
use rusqlite::params;
use serde::Serialize;

use super::SqliteStore;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Integrity {
    pub memories: u64,
    pub memory_fts_rows: u64,
    pub episodes: u64,
    pub episode_fts_rows: u64,
    /// Active rows without a vector (the background backfill's queue).
    pub missing_vectors: u64,
    /// Junction rows pointing at no memory, episode or entity.
    pub orphan_links: u64,
}

impl SqliteStore {
    /// The latest lifecycle decisions, newest first; optionally for one id.
    pub fn audit_log(&self, limit: u32, target: Option<&str>) -> anyhow::Result<Vec<AuditEntry>> {
        let mut stmt = self.connection().prepare_cached(
            "SELECT at, namespace, action, target_id, detail FROM audit_log \
             WHERE (?2 IS NULL OR target_id = ?2) ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![limit, target], |r| {
            Ok(AuditEntry {
                at: r.get(0)?,
                namespace: r.get(1)?,
                action: r.get(2)?,
                target_id: r.get(3)?,
                detail: r.get(4)?,
            })
        })?;
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
