//! Counts, the decision log and the metadata table.

use mnemo_core::model::*;
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params, params_from_iter};

use super::filter::in_list;

use super::sqlite::*;

impl SqliteStore {
    pub fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
        let (ns_clause, params): (String, Vec<Value>) = if namespaces.is_empty() {
            ("1".into(), Vec::new())
        } else {
            (
                format!("namespace IN ({})", in_list(namespaces.len())),
                namespaces.iter().cloned().map(Value::Text).collect(),
            )
        };
        let count = |q: String| -> R<u64> {
            sql(self
                .conn
                .query_row(&q, params_from_iter(params.iter()), |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
        };
        let mut s = StoreStats::default();
        let mut stmt = sql(self.conn.prepare(&format!(
            "SELECT layer, kind, COUNT(*), MAX(created_at) FROM memories WHERE valid_until IS NULL AND {ns_clause} GROUP BY layer, kind"
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params.iter()), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)? as u64,
                r.get::<_, Option<i64>>(3)?,
            ))
        }))?;
        for row in rows {
            let (layer, kind, n, newest) = sql(row)?;
            s.active += n;
            s.newest = s.newest.max(newest);
            match layer.as_str() {
                "buffer" => s.buffer += n,
                "working" => s.working += n,
                _ => s.core += n,
            }
            match kind.as_str() {
                "episodic" => s.episodic += n,
                "procedural" => s.procedural += n,
                _ => s.semantic += n,
            }
        }
        s.deleted = count(format!(
            "SELECT COUNT(*) FROM memories WHERE valid_until IS NOT NULL AND {ns_clause}"
        ))?;
        s.episodes = count(format!(
            "SELECT COUNT(*) FROM episodes WHERE valid_until IS NULL AND {ns_clause}"
        ))?;
        s.sessions = count(format!("SELECT COUNT(*) FROM sessions WHERE {ns_clause}"))?;
        s.entities = count(format!("SELECT COUNT(*) FROM entities WHERE {ns_clause}"))?;
        s.facts = count(format!(
            "SELECT COUNT(*) FROM facts WHERE valid_until IS NULL AND {ns_clause}"
        ))?;
        if self.vectors_on() {
            s.memory_vectors = count(format!(
                "SELECT COUNT(*) FROM vec_memories WHERE {ns_clause}"
            ))?;
            s.episode_vectors = count(format!(
                "SELECT COUNT(*) FROM vec_episodes WHERE {ns_clause}"
            ))?;
        }
        Ok(s)
    }

    pub fn log_decision(&self, e: &Decision) -> R<()> {
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT INTO audit_log (at, namespace, action, target_id, detail) VALUES (?1,?2,?3,?4,?5)",
        ))?;
        sql(stmt.execute(params![
            e.at,
            e.namespace,
            e.action.as_str(),
            e.target_id,
            e.detail
        ]))?;
        Ok(())
    }

    pub fn get_meta(&self, key: &str) -> R<Option<String>> {
        sql(self
            .conn
            .query_row("SELECT value FROM metadata WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional())
    }

    pub fn set_meta(&self, key: &str, value: &str) -> R<()> {
        sql(self.conn.execute(
            "INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        ))?;
        Ok(())
    }
}
