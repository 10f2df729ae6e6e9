//! What the host reads and writes beside the core's port, over Postgres:
//! the decision log and session listings, integrity counts for `/health`,
//! the LLM usage ledger, and whole-namespace reads for export.

use mnemo_core::model::*;

use super::PgStore;
use super::sql::{
    self, ENTITY_COLUMNS, EPISODE_COLUMNS, FACT_COLUMNS, MEMORY_COLUMNS, SESSION_COLUMNS,
};
use crate::storage::Usage;
use crate::storage::export::LinkedEntity;
use crate::storage::{DecisionFilter, Integrity, UsageSummary};

fn core(e: mnemo_core::CoreError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

impl PgStore {
    pub fn decision_log(&self, f: &DecisionFilter) -> anyhow::Result<Vec<Decision>> {
        let rows = self.db().query(
            "SELECT at, namespace, action, target_id, detail FROM audit_log \
             WHERE ($2::TEXT IS NULL OR target_id = $2) AND ($3::TEXT IS NULL OR action = $3) \
             AND ($4::TEXT IS NULL OR namespace = $4 OR namespace = '*') AND ($5::BIGINT IS NULL OR at >= $5) \
             ORDER BY id DESC LIMIT $1",
            &[&i64::from(f.limit), &f.target, &f.action, &f.namespace, &f.since],
        )?;
        rows.iter()
            .map(|r| {
                Ok(Decision {
                    at: r.get(0),
                    namespace: r.get(1),
                    action: r.get::<_, String>(2).parse().map_err(core)?,
                    target_id: r.get(3),
                    detail: r.get(4),
                })
            })
            .collect()
    }

    pub fn sessions(
        &self,
        namespace: &str,
        pending: bool,
        limit: u32,
    ) -> anyhow::Result<Vec<Session>> {
        let rows = self.db().query(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = $1 AND (NOT $2 OR consolidated_at IS NULL) \
                 ORDER BY last_seen_at DESC, id LIMIT $3"
            ),
            &[&namespace, &pending, &i64::from(limit)],
        )?;
        sql::rows(rows, sql::session).map_err(core)
    }

    /// The counts `/health` compares: rows against their full-text
    /// entries (here a column of the row, so they agree by construction),
    /// active rows without a vector, links to rows that do not exist.
    pub fn integrity(&self) -> anyhow::Result<Integrity> {
        let vectors = self.vectors_on();
        let missing = if vectors {
            "(SELECT COUNT(*) FROM memories x WHERE valid_until IS NULL AND NOT EXISTS (SELECT 1 FROM vec_memories v WHERE v.row = x.seq)) \
             + (SELECT COUNT(*) FROM episodes x WHERE valid_until IS NULL AND NOT EXISTS (SELECT 1 FROM vec_episodes v WHERE v.row = x.seq))"
        } else {
            "0::BIGINT"
        };
        let row = self.db().query_one(
            &format!(
                "SELECT (SELECT COUNT(*) FROM memories), (SELECT COUNT(*) FROM memories WHERE fts IS NOT NULL), \
                 (SELECT COUNT(*) FROM episodes), (SELECT COUNT(*) FROM episodes WHERE fts IS NOT NULL), \
                 ({missing})::BIGINT, \
                 (SELECT COUNT(*) FROM memory_entities j WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = j.memory_id) \
                    OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = j.entity_id)) \
                 + (SELECT COUNT(*) FROM episode_entities j WHERE NOT EXISTS (SELECT 1 FROM episodes x WHERE x.id = j.episode_id) \
                    OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = j.entity_id))"
            ),
            &[],
        )?;
        let n = |i: usize| row.get::<_, i64>(i).max(0) as u64;
        Ok(Integrity {
            memories: n(0),
            memory_fts_rows: n(1),
            episodes: n(2),
            episode_fts_rows: n(3),
            missing_vectors: n(4),
            orphan_links: n(5),
        })
    }

    pub fn record_usage(&self, entries: &[Usage]) -> anyhow::Result<()> {
        let mut db = self.db();
        for u in entries {
            db.execute(
                "INSERT INTO llm_usage (at, component, model, input_tokens, output_tokens, duration_ms, outcome) \
                 VALUES ($1,$2,$3,$4,$5,$6,$7)",
                &[
                    &u.at,
                    &u.component,
                    &u.model,
                    &i64::from(u.input_tokens),
                    &i64::from(u.output_tokens),
                    &(u.duration_ms as i64),
                    &u.outcome,
                ],
            )?;
        }
        Ok(())
    }

    pub fn usage(&self, limit: u32) -> anyhow::Result<Vec<Usage>> {
        let rows = self.db().query(
            "SELECT at, component, model, input_tokens, output_tokens, duration_ms, outcome FROM llm_usage \
             ORDER BY id DESC LIMIT $1",
            &[&i64::from(limit)],
        )?;
        Ok(rows
            .iter()
            .map(|r| Usage {
                at: r.get(0),
                component: r.get(1),
                model: r.get(2),
                input_tokens: r.get::<_, i64>(3).clamp(0, i64::from(u32::MAX)) as u32,
                output_tokens: r.get::<_, i64>(4).clamp(0, i64::from(u32::MAX)) as u32,
                duration_ms: r.get::<_, i64>(5).max(0) as u64,
                outcome: r.get(6),
            })
            .collect())
    }

    pub fn usage_summary(&self) -> anyhow::Result<Vec<UsageSummary>> {
        let rows = self.db().query(
            "SELECT component, model, COUNT(*), COUNT(*) FILTER (WHERE outcome != 'ok'), SUM(input_tokens)::BIGINT, \
             SUM(output_tokens)::BIGINT, SUM(duration_ms)::BIGINT FROM llm_usage GROUP BY component, model \
             ORDER BY component, model",
            &[],
        )?;
        let n = |r: &postgres::Row, i: usize| r.get::<_, i64>(i).max(0) as u64;
        Ok(rows
            .iter()
            .map(|r| UsageSummary {
                component: r.get(0),
                model: r.get(1),
                calls: n(r, 2),
                failures: n(r, 3),
                input_tokens: n(r, 4),
                output_tokens: n(r, 5),
                total_ms: n(r, 6),
            })
            .collect())
    }

    /// Every metadata entry, by key.
    pub fn all_meta(&self) -> anyhow::Result<Vec<(String, String)>> {
        let rows = self
            .db()
            .query("SELECT key, value FROM metadata ORDER BY key", &[])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Every namespace that holds a memory or an episode.
    pub fn namespaces(&self) -> anyhow::Result<Vec<String>> {
        let rows = self.db().query(crate::storage::DISTINCT_NAMESPACES, &[])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Rows of `table` in `ns` (every namespace when `None`), in insertion order.
    fn all<T>(
        &self,
        columns: &str,
        table: &str,
        order: &str,
        ns: Option<&str>,
        f: impl Fn(&postgres::Row) -> super::R<T>,
    ) -> anyhow::Result<Vec<T>> {
        let rows = self.db().query(
            &format!("SELECT {columns} FROM {table} WHERE ($1::TEXT IS NULL OR namespace = $1) ORDER BY {order}"),
            &[&ns],
        )?;
        sql::rows(rows, f).map_err(core)
    }

    pub fn all_memories(&self, ns: Option<&str>) -> anyhow::Result<Vec<Memory>> {
        self.all(MEMORY_COLUMNS, "memories", "seq", ns, sql::memory)
    }

    pub fn all_episodes(&self, ns: Option<&str>) -> anyhow::Result<Vec<Episode>> {
        self.all(EPISODE_COLUMNS, "episodes", "seq", ns, sql::episode)
    }

    pub fn all_sessions(&self, ns: Option<&str>) -> anyhow::Result<Vec<Session>> {
        self.all(
            SESSION_COLUMNS,
            "sessions",
            "first_seen_at, id",
            ns,
            sql::session,
        )
    }

    /// Every fact, superseded ones included (the history is part of the data).
    pub fn all_facts(&self, ns: Option<&str>) -> anyhow::Result<Vec<Fact>> {
        self.all(FACT_COLUMNS, "facts", "seq", ns, sql::fact)
    }

    pub fn all_versions(&self, ns: Option<&str>) -> anyhow::Result<Vec<MemoryVersion>> {
        let ids: Vec<String> = self
            .db()
            .query(
                "SELECT DISTINCT memory_id FROM memory_versions WHERE ($1::TEXT IS NULL OR namespace = $1) \
                 ORDER BY memory_id",
                &[&ns],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.memory_versions(&id).map_err(core)?);
        }
        Ok(out)
    }

    /// Entities with the ids of the memories and episodes linked to them.
    pub fn all_entities(&self, ns: Option<&str>) -> anyhow::Result<Vec<LinkedEntity>> {
        let entities = self.all(ENTITY_COLUMNS, "entities", "seq", ns, sql::entity)?;
        let mut out = Vec::with_capacity(entities.len());
        for e in entities {
            let mut db = self.db();
            let m: Vec<String> = db
                .query(
                    "SELECT memory_id FROM memory_entities WHERE entity_id = $1 ORDER BY memory_id",
                    &[&e.id],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let x: Vec<String> = db
                .query(
                    "SELECT episode_id FROM episode_entities WHERE entity_id = $1 ORDER BY episode_id",
                    &[&e.id],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            out.push((e, m, x));
        }
        Ok(out)
    }
}
