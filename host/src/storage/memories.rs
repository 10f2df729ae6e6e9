//! The `memories` table: writes (row and FTS entry through triggers),
//! reads by id, exact text and listing, access bumps.

use mnemo_core::model::*;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter};

use super::filter::{in_list, where_clause_in};
use super::reader::Effect;
use super::rows::{self, MEMORY_COLUMNS};

use super::sqlite::*;

impl SqliteStore {
    pub fn insert_memory(&self, m: &Memory) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        self.write_memory(m, true)
    }

    pub fn update_memory(&self, m: &Memory) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        self.write_memory(m, false)
    }

    pub fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let params = chunk.iter().cloned().map(Value::Text).collect();
            out.extend(self.memories_where(&format!("id IN ({})", in_list(chunk.len())), params)?);
        }
        Ok(out)
    }

    /// The active memory of `namespaces` with exactly this text (through the
    /// hash index: never a scan of the namespace).
    pub fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        if namespaces.is_empty() {
            return Ok(None);
        }
        let mut params: Vec<Value> = vec![Value::Text(rows::content_hash(content))];
        params.extend(namespaces.iter().cloned().map(Value::Text));
        let found = self.memories_where(&find_exact_clause(namespaces.len()), params)?;
        Ok(found.into_iter().find(|m| m.content == content))
    }

    pub fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        let filter = SearchFilter {
            namespaces: q.namespaces.clone(),
            layers: q.layers.clone(),
            kinds: q.kinds.clone(),
            tags: q.tags.clone(),
            source: q.source.clone(),
            ..Default::default()
        };
        let state = q.state;
        let mut w = where_clause_in(Target::Memories, "memories", &filter, state);
        let mut clause = w.clause;
        if let Some(since) = q.modified_since {
            clause.push_str(" AND memories.modified_at >= ?");
            w.params.push(Value::Integer(since));
        }
        if let Some(least) = q.min_importance {
            clause.push_str(" AND memories.importance >= ?");
            w.params.push(Value::Real(f64::from(least)));
        }
        if !q.any_tags.is_empty() {
            clause.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value IN ({}))",
                in_list(q.any_tags.len())
            ));
            w.params
                .extend(q.any_tags.iter().map(|t| Value::Text(t.clone())));
        }
        let (time, order) = if q.by_modified {
            ("modified_at", "modified_at DESC, id DESC")
        } else {
            ("created_at", "created_at DESC, id DESC")
        };
        if let (Some(t), Some(id)) = (q.after_time, &q.after_id) {
            clause.push_str(&format!(
                " AND (memories.{time} < ? OR (memories.{time} = ? AND memories.id < ?))"
            ));
            w.params.extend([
                Value::Integer(t),
                Value::Integer(t),
                Value::Text(id.clone()),
            ]);
        }
        w.params.push(Value::Integer(q.limit as i64));
        w.params.push(Value::Integer(q.offset as i64));
        self.memories_where(
            &format!("{clause} ORDER BY {order} LIMIT ? OFFSET ?"),
            w.params,
        )
    }

    /// The namespaces with an active memory: one index seek per namespace
    /// (`idx_memories_ns_state` puts a namespace's active rows first),
    /// not a scan of the memories.
    pub fn active_namespaces(&self) -> R<Vec<String>> {
        let mut stmt = sql(self.conn.prepare_cached(
            "WITH RECURSIVE ns(name) AS ( \
               SELECT (SELECT MIN(namespace) FROM memories WHERE valid_until IS NULL) \
               UNION ALL \
               SELECT (SELECT MIN(namespace) FROM memories \
                       WHERE namespace > ns.name AND valid_until IS NULL) \
               FROM ns WHERE ns.name IS NOT NULL) \
             SELECT name FROM ns WHERE name IS NOT NULL",
        ))?;
        let rows = sql(stmt.query_map([], |r| r.get::<_, String>(0)))?;
        sql(rows.collect())
    }

    /// One more access for each of `ids` (kept for the writer on a reader).
    pub fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        if self.defer(|| Effect::Touch(ids.to_vec(), at)) {
            return Ok(());
        }
        let mut stmt = sql(self.conn.prepare_cached(
            "UPDATE memories SET access_count = access_count + 1, last_accessed = ?2 WHERE id = ?1",
        ))?;
        for id in ids {
            sql(stmt.execute(params![id, at]))?;
        }
        Ok(())
    }

    /// Shown to the agent at `at` (kept for the writer on a reader).
    pub fn renew_memories(&self, ids: &[String], at: Millis) -> R<()> {
        if self.defer(|| Effect::Renew(ids.to_vec(), at)) {
            return Ok(());
        }
        let mut stmt = sql(self.conn.prepare_cached(
            "UPDATE memories SET attributes = json_set(attributes, '$.renewed_at', ?2) WHERE id = ?1",
        ))?;
        for id in ids {
            sql(stmt.execute(params![id, at]))?;
        }
        Ok(())
    }

    pub(super) fn memories_where(&self, clause: &str, params: Vec<Value>) -> R<Vec<Memory>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}"
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params), rows::memory))?;
        sql(rows.collect())
    }

    pub(super) fn write_memory(&self, m: &Memory, insert: bool) -> R<()> {
        // An update keeps the rowid, which the FTS and vector tables key on.
        const INSERT: &str = "INSERT INTO memories (id, namespace, content, content_hash, kind, layer, importance, \
             confidence, decay_rate, access_count, repetition_count, created_at, modified_at, last_accessed, \
             event_time, created_epoch, valid_until, invalid_reason, session_id, source, source_role, tags, \
             attributes, source_ids, supersedes, superseded_by) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,\
             ?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26)";
        const UPDATE: &str = "UPDATE memories SET namespace=?2, content=?3, content_hash=?4, kind=?5, layer=?6, \
             importance=?7, confidence=?8, decay_rate=?9, access_count=?10, repetition_count=?11, created_at=?12, \
             modified_at=?13, last_accessed=?14, event_time=?15, created_epoch=?16, valid_until=?17, \
             invalid_reason=?18, session_id=?19, source=?20, source_role=?21, tags=?22, attributes=?23, \
             source_ids=?24, supersedes=?25, superseded_by=?26 WHERE id=?1";
        let sql_text = if insert { INSERT } else { UPDATE };
        let n = sql(self.conn.prepare_cached(sql_text).and_then(|mut s| {
            s.execute(params![
                m.id,
                m.namespace,
                m.content,
                rows::content_hash(&m.content),
                m.kind.as_str(),
                m.layer.as_str(),
                m.importance,
                m.confidence,
                m.decay_rate,
                m.access_count,
                m.repetition_count,
                m.created_at,
                m.modified_at,
                m.last_accessed,
                m.event_time,
                m.created_epoch as i64,
                m.valid_until,
                m.invalid_reason,
                m.session_id,
                m.source,
                m.source_role,
                rows::to_json(&m.tags),
                m.attributes,
                rows::to_json(&m.source_ids),
                m.supersedes,
                m.superseded_by,
            ])
        }))?;
        if n == 0 {
            return Err(mnemo_core::CoreError::NotFound(format!(
                "memory `{}`",
                m.id
            )));
        }
        Ok(())
    }
}

/// `find_exact`'s filter. `+created_at`: ordering by the bare column lets
/// SQLite pick the (namespace, created_at) index and walk the whole
/// namespace to avoid a sort of at most a handful of rows.
fn find_exact_clause(namespaces: usize) -> String {
    format!(
        "content_hash = ?1 AND valid_until IS NULL AND namespace IN ({}) ORDER BY +created_at LIMIT 5",
        in_list(namespaces)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_exact_text_is_found_through_the_hash_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("m.db")).unwrap();
        for n in [1, 3] {
            let plan: Vec<String> = store
                .conn
                .prepare(&format!(
                    "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE {}",
                    find_exact_clause(n)
                ))
                .unwrap()
                .query_map(
                    rusqlite::params_from_iter((0..=n).map(|i| i.to_string())),
                    |r| r.get::<_, String>(3),
                )
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter().any(|p| p.contains("idx_memories_hash")),
                "{plan:?}"
            );
        }
    }
}
