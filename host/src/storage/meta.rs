//! Counts, the decision log and the metadata table.

use mnemo_core::CoreError;
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
            tally(&mut s, &layer, &kind, n, newest);
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

    /// Appends to the decision log (kept for the writer on a reader).
    pub fn log_decision(&self, e: &Decision) -> R<()> {
        if self.defer(|| super::reader::Effect::Decision(e.clone())) {
            return Ok(());
        }
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

    pub fn put_version(&self, v: &MemoryVersion) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let memory = serde_json::to_string(&v.memory)
            .map_err(|e| CoreError::Storage(format!("version {}: {e}", v.memory_id)))?;
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT OR IGNORE INTO memory_versions (memory_id, seq, namespace, replaced_at, action, reason, memory) \
             VALUES (?1,?2,?3,?4,?5,?6,?7)",
        ))?;
        sql(stmt.execute(params![
            v.memory_id,
            v.seq,
            v.namespace,
            v.replaced_at,
            v.action.as_str(),
            v.reason,
            memory
        ]))?;
        Ok(())
    }

    pub fn memory_versions(&self, memory_id: &str) -> R<Vec<MemoryVersion>> {
        let mut stmt = sql(self.conn.prepare_cached(
            "SELECT memory_id, seq, namespace, replaced_at, action, reason, memory \
             FROM memory_versions WHERE memory_id = ?1 ORDER BY seq",
        ))?;
        let rows = sql(stmt.query_map([memory_id], version_row))?;
        rows.map(|r| sql(r).and_then(|r| r)).collect()
    }

    /// A counter that moves whenever a memory is stored or its text, layer
    /// or validity changes (schema triggers); reads and touches leave it.
    /// The server's debounced topic rebuild watches it.
    pub fn memories_changed(&self) -> u64 {
        self.get_meta("memories_changed")
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Whether memories exist but no namespace has a topic tree cached (a
    /// new or upgraded store): the server builds one at start.
    pub fn needs_topic_tree(&self) -> R<bool> {
        let exists = |q: &str| -> R<bool> { sql(self.conn.query_row(q, [], |r| r.get(0))) };
        let cached = exists("SELECT EXISTS(SELECT 1 FROM metadata WHERE key LIKE 'topics:%')")?;
        let memories = exists("SELECT EXISTS(SELECT 1 FROM memories WHERE valid_until IS NULL)")?;
        Ok(memories && !cached)
    }

    pub fn get_meta(&self, key: &str) -> R<Option<String>> {
        sql(self
            .conn
            .prepare_cached("SELECT value FROM metadata WHERE key = ?1")
            .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional()))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        sql(self.conn.execute(
            "INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        ))?;
        Ok(())
    }
}

/// Adds `n` active memories of one layer and kind (newest created at
/// `newest`) to `s`: a row of either backend's `GROUP BY layer, kind`.
pub(super) fn tally(s: &mut StoreStats, layer: &str, kind: &str, n: u64, newest: Option<i64>) {
    s.active += n;
    s.newest = s.newest.max(newest);
    match layer {
        "buffer" => s.buffer += n,
        "working" => s.working += n,
        _ => s.core += n,
    }
    match kind {
        "episodic" => s.episodic += n,
        "procedural" => s.procedural += n,
        _ => s.semantic += n,
    }
}

/// A `memory_versions` row; a snapshot that no longer parses is a storage error.
fn version_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<R<MemoryVersion>> {
    let memory_id: String = r.get(0)?;
    let action: String = r.get(4)?;
    let memory: String = r.get(6)?;
    let parsed = (|| -> Result<MemoryVersion, String> {
        Ok(MemoryVersion {
            memory: serde_json::from_str(&memory)
                .map_err(|e| format!("snapshot of {memory_id}: {e}"))?,
            action: action
                .parse()
                .map_err(|_| format!("unknown action `{action}`"))?,
            memory_id: memory_id.clone(),
            seq: r.get(1).map_err(|e| e.to_string())?,
            namespace: r.get(2).map_err(|e| e.to_string())?,
            replaced_at: r.get(3).map_err(|e| e.to_string())?,
            reason: r.get(5).map_err(|e| e.to_string())?,
        })
    })();
    Ok(parsed.map_err(CoreError::Storage))
}
