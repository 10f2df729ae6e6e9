//! Entities, their aliases and links, enrichment candidates, facts and tag
//! counts.

use mnemo_core::model::*;
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params, params_from_iter};

use super::filter::{in_list, table};
use super::rows;

use super::sqlite::*;

impl SqliteStore {
    pub fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
        let lower = name.trim().to_lowercase();
        let mut stmt = sql(self.conn.prepare_cached(
            "SELECT id, namespace, canonical_name, entity_type, aliases, mention_count, summary FROM entities \
             WHERE namespace = ?1 AND entity_type = ?3 AND (name_lower = ?2 OR id IN \
             (SELECT entity_id FROM entity_aliases WHERE alias_lower = ?2)) \
             ORDER BY name_lower = ?2 DESC, mention_count DESC LIMIT 1",
        ))?;
        sql(stmt
            .query_row(params![namespace, lower, t.as_str()], rows::entity)
            .optional())
    }

    pub fn put_entity(&self, e: &Entity) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        sql(self.conn.execute(
            "INSERT INTO entities (id, namespace, canonical_name, name_lower, entity_type, aliases, summary, mention_count) \
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(id) DO UPDATE SET canonical_name = excluded.canonical_name, \
             name_lower = excluded.name_lower, aliases = excluded.aliases, summary = excluded.summary, \
             mention_count = excluded.mention_count",
            params![
                e.id,
                e.namespace,
                e.canonical_name,
                e.canonical_name.to_lowercase(),
                e.entity_type.as_str(),
                rows::to_json(&e.aliases),
                e.summary,
                e.mention_count
            ],
        ))?;
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT OR IGNORE INTO entity_aliases (entity_id, alias_lower) VALUES (?1, ?2)",
        ))?;
        for a in &e.aliases {
            sql(stmt.execute(params![e.id, a.to_lowercase()]))?;
        }
        Ok(())
    }

    pub fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let (junction, col) = match target {
            Target::Memories => ("memory_entities", "memory_id"),
            Target::Episodes => ("episode_entities", "episode_id"),
        };
        sql(self.conn.execute(
            &format!("INSERT OR IGNORE INTO {junction} ({col}, entity_id) VALUES (?1, ?2)"),
            params![item_id, entity_id],
        ))?;
        Ok(())
    }

    pub fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
        if namespaces.is_empty() {
            return Ok(Vec::new());
        }
        let mut params: Vec<Value> = vec![Value::Text(name.trim().to_lowercase())];
        params.extend(namespaces.iter().cloned().map(Value::Text));
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT id, namespace, canonical_name, entity_type, aliases, mention_count, summary FROM entities \
             WHERE (name_lower = ?1 OR id IN (SELECT entity_id FROM entity_aliases WHERE alias_lower = ?1)) \
             AND namespace IN ({}) ORDER BY mention_count DESC, id",
            in_list(namespaces.len())
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params), rows::entity))?;
        sql(rows.collect())
    }

    pub fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
        let t = table(target);
        let (junction, col) = match target {
            Target::Memories => ("memory_entities", "memory_id"),
            Target::Episodes => ("episode_entities", "episode_id"),
        };
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.id FROM {junction} j JOIN {t} x ON x.id = j.{col} \
             WHERE j.entity_id = ?1 AND x.valid_until IS NULL ORDER BY x.event_time DESC, x.id LIMIT ?2"
        )))?;
        let rows = sql(stmt.query_map(params![entity_id, limit], |r| r.get(0)))?;
        sql(rows.collect())
    }

    pub fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> R<Vec<EnrichmentCandidate>> {
        let t = table(target);
        let (junction, col) = match target {
            Target::Memories => ("memory_entities", "memory_id"),
            Target::Episodes => ("episode_entities", "episode_id"),
        };
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.id, x.namespace, x.content FROM {t} x WHERE x.valid_until IS NULL \
             AND json_extract(x.attributes, '$.enriched_at') IS NULL \
             AND (SELECT COUNT(*) FROM {junction} j WHERE j.{col} = x.id) <= ?1 ORDER BY x.rowid LIMIT ?2"
        )))?;
        let rows = sql(stmt.query_map(params![max_entities, limit], |r| {
            Ok(EnrichmentCandidate {
                id: r.get(0)?,
                namespace: r.get(1)?,
                content: r.get(2)?,
            })
        }))?;
        sql(rows.collect())
    }

    pub fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let t = table(target);
        sql(self.conn.execute(
            &format!("UPDATE {t} SET attributes = json_set(attributes, '$.enriched_at', ?2) WHERE id = ?1"),
            params![id, at],
        ))?;
        Ok(())
    }

    pub fn put_fact(&self, f: &Fact) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        sql(self.conn.execute(
            "INSERT INTO facts (id, namespace, subject, predicate, object, confidence, valid_from, valid_until, \
             superseded_by, memory_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) ON CONFLICT(id) DO UPDATE SET \
             confidence = excluded.confidence, valid_until = excluded.valid_until, superseded_by = excluded.superseded_by",
            params![f.id, f.namespace, f.subject, f.predicate, f.object, f.confidence, f.valid_from, f.valid_until, f.superseded_by, f.memory_id],
        ))?;
        Ok(())
    }

    pub fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
        let mut parts: Vec<String> = vec!["1".into()];
        let mut params: Vec<Value> = Vec::new();
        if !q.namespaces.is_empty() {
            parts.push(format!("namespace IN ({})", in_list(q.namespaces.len())));
            params.extend(q.namespaces.iter().cloned().map(Value::Text));
        }
        if let Some(id) = &q.id {
            parts.push("id = ?".into());
            params.push(Value::Text(id.clone()));
        }
        for (column, value) in [
            ("subject", &q.subject),
            ("predicate", &q.predicate),
            ("object", &q.object),
        ] {
            if let Some(v) = value {
                parts.push(format!("lower({column}) = lower(?)"));
                params.push(Value::Text(v.clone()));
            }
        }
        if let Some(e) = &q.entity {
            parts.push("(lower(subject) = lower(?) OR lower(object) = lower(?))".into());
            params.push(Value::Text(e.clone()));
            params.push(Value::Text(e.clone()));
        }
        if !q.include_invalid {
            parts.push("valid_until IS NULL AND superseded_by IS NULL".into());
        }
        params.push(Value::Integer(i64::from(q.limit)));
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT id, namespace, subject, predicate, object, confidence, valid_from, valid_until, \
             superseded_by, memory_id FROM facts WHERE {} ORDER BY valid_from DESC, id DESC LIMIT ?",
            parts.join(" AND ")
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params.iter()), rows::fact))?;
        sql(rows.collect())
    }

    pub fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
        let mut params: Vec<Value> = vec![Value::Text(format!("{}%", like_escape(prefix)))];
        let ns = if namespaces.is_empty() {
            String::new()
        } else {
            params.extend(namespaces.iter().cloned().map(Value::Text));
            format!(" AND m.namespace IN ({})", in_list(namespaces.len()))
        };
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT t.value, SUM(m.access_count) FROM memories m, json_each(m.tags) t \
             WHERE m.valid_until IS NULL AND t.value LIKE ? ESCAPE '\\'{ns} \
             GROUP BY t.value ORDER BY SUM(m.access_count) DESC, t.value"
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params.iter()), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        }))?;
        sql(rows.collect())
    }
}
