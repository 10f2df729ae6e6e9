//! Entities and their links, facts, tags, statistics, the decision log,
//! memory versions and metadata in Postgres.

use mnemo_core::CoreError;
use mnemo_core::model::*;

use super::sql::{self, Args, ENTITY_COLUMNS, FACT_COLUMNS, junction, table};
use super::{PgStore, R, pg};
use crate::storage::reader::Effect;

impl PgStore {
    pub fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
        let lower = name.trim().to_lowercase();
        let row = pg(self.db().query_opt(
            &format!(
                "SELECT {ENTITY_COLUMNS} FROM entities WHERE namespace = $1 AND entity_type = $3 \
                 AND (name_lower = $2 OR id IN (SELECT entity_id FROM entity_aliases WHERE alias_lower = $2)) \
                 ORDER BY name_lower = $2 DESC, mention_count DESC LIMIT 1"
            ),
            &[&namespace, &lower, &t.as_str()],
        ))?;
        row.as_ref().map(sql::entity).transpose()
    }

    pub fn put_entity(&self, e: &Entity) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let mut db = self.db();
        pg(db.execute(
            "INSERT INTO entities (id, namespace, canonical_name, name_lower, entity_type, aliases, summary, mention_count) \
             VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (id) DO UPDATE SET canonical_name = excluded.canonical_name, \
             name_lower = excluded.name_lower, aliases = excluded.aliases, summary = excluded.summary, \
             mention_count = excluded.mention_count",
            &[
                &e.id,
                &e.namespace,
                &e.canonical_name,
                &e.canonical_name.to_lowercase(),
                &e.entity_type.as_str(),
                &sql::json_list(&e.aliases),
                &e.summary,
                &i64::from(e.mention_count),
            ],
        ))?;
        let aliases: Vec<String> = e.aliases.iter().map(|a| a.to_lowercase()).collect();
        pg(db.execute(
            "INSERT INTO entity_aliases (entity_id, alias_lower) SELECT $1, a FROM unnest($2::text[]) a \
             ON CONFLICT DO NOTHING",
            &[&e.id, &aliases],
        ))?;
        Ok(())
    }

    pub fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let (junction, col) = junction(target);
        pg(self.db().execute(
            &format!(
                "INSERT INTO {junction} ({col}, entity_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
            ),
            &[&item_id, &entity_id],
        ))?;
        Ok(())
    }

    pub fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
        if namespaces.is_empty() {
            return Ok(Vec::new());
        }
        let rows = pg(self.db().query(
            &format!(
                "SELECT {ENTITY_COLUMNS} FROM entities WHERE (name_lower = $1 OR id IN \
                 (SELECT entity_id FROM entity_aliases WHERE alias_lower = $1)) AND namespace = ANY($2) \
                 ORDER BY mention_count DESC, id"
            ),
            &[&name.trim().to_lowercase(), &namespaces],
        ))?;
        sql::rows(rows, sql::entity)
    }

    pub fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
        let t = table(target);
        let (junction, col) = junction(target);
        let rows = pg(self.db().query(
            &format!(
                "SELECT x.id FROM {junction} j JOIN {t} x ON x.id = j.{col} WHERE j.entity_id = $1 \
                 AND x.valid_until IS NULL ORDER BY x.event_time DESC, x.id LIMIT $2"
            ),
            &[&entity_id, &i64::from(limit)],
        ))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> R<Vec<EnrichmentCandidate>> {
        let t = table(target);
        let (junction, col) = junction(target);
        let rows = pg(self.db().query(
            &format!(
                "SELECT x.id, x.namespace, x.content FROM {t} x WHERE x.valid_until IS NULL \
                 AND (x.attributes::jsonb -> 'enriched_at') IS NULL \
                 AND (SELECT COUNT(*) FROM {junction} j WHERE j.{col} = x.id) <= $1 ORDER BY x.seq LIMIT $2"
            ),
            &[&i64::from(max_entities), &i64::from(limit)],
        ))?;
        Ok(rows
            .iter()
            .map(|r| EnrichmentCandidate {
                id: r.get(0),
                namespace: r.get(1),
                content: r.get(2),
            })
            .collect())
    }

    pub fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let t = table(target);
        pg(self.db().execute(
            &format!(
                "UPDATE {t} SET attributes = jsonb_set(attributes::jsonb, '{{enriched_at}}', to_jsonb($2::BIGINT))::text \
                 WHERE id = $1"
            ),
            &[&id, &at],
        ))?;
        Ok(())
    }

    pub fn put_fact(&self, f: &Fact) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        pg(self.db().execute(
            &format!(
                "INSERT INTO facts ({FACT_COLUMNS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT (id) \
                 DO UPDATE SET confidence = excluded.confidence, valid_until = excluded.valid_until, \
                 superseded_by = excluded.superseded_by"
            ),
            &[
                &f.id,
                &f.namespace,
                &f.subject,
                &f.predicate,
                &f.object,
                &f.confidence,
                &f.valid_from,
                &f.valid_until,
                &f.superseded_by,
                &f.memory_id,
            ],
        ))?;
        Ok(())
    }

    pub fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
        let mut args = Args::default();
        let mut parts: Vec<String> = vec!["TRUE".into()];
        if !q.namespaces.is_empty() {
            parts.push(format!(
                "namespace = ANY({})",
                args.add(q.namespaces.clone())
            ));
        }
        if let Some(id) = &q.id {
            parts.push(format!("id = {}", args.add(id.clone())));
        }
        for (column, value) in [
            ("subject", &q.subject),
            ("predicate", &q.predicate),
            ("object", &q.object),
        ] {
            if let Some(v) = value {
                parts.push(format!("lower({column}) = lower({})", args.add(v.clone())));
            }
        }
        if let Some(e) = &q.entity {
            let p = args.add(e.clone());
            parts.push(format!(
                "(lower(subject) = lower({p}) OR lower(object) = lower({p}))"
            ));
        }
        if !q.include_invalid {
            parts.push("valid_until IS NULL AND superseded_by IS NULL".into());
        }
        let limit = args.add(i64::from(q.limit));
        let rows = pg(self.db().query(
            &format!(
                "SELECT {FACT_COLUMNS} FROM facts WHERE {} ORDER BY valid_from DESC, id DESC LIMIT {limit}",
                parts.join(" AND ")
            ),
            &args.refs(),
        ))?;
        sql::rows(rows, sql::fact)
    }

    pub fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
        // A prefix ending in `:` is one of its tags' heads (schema
        // migration 2): the GIN index finds the rows holding it.
        let heads = if prefix.ends_with(':') {
            "AND mnemo_tag_heads(m.tags) @> ARRAY[$1::text]"
        } else {
            ""
        };
        let rows = pg(self.db().query(
            &format!(
                "SELECT t.value, SUM(m.access_count)::BIGINT FROM memories m, jsonb_array_elements_text(m.tags) t(value) \
                 WHERE m.valid_until IS NULL {heads} AND starts_with(t.value, $1) \
                 AND (cardinality($2::text[]) = 0 OR m.namespace = ANY($2)) \
                 GROUP BY t.value ORDER BY SUM(m.access_count) DESC, t.value COLLATE \"C\""
            ),
            &[&prefix, &namespaces],
        ))?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).max(0) as u64))
            .collect())
    }

    pub fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
        let ns = "(cardinality($1::text[]) = 0 OR namespace = ANY($1))";
        let mut s = StoreStats::default();
        let mut db = self.db();
        let rows = pg(db.query(
            &format!(
                "SELECT layer, kind, COUNT(*), MAX(created_at) FROM memories \
                 WHERE valid_until IS NULL AND {ns} GROUP BY layer, kind"
            ),
            &[&namespaces],
        ))?;
        for r in &rows {
            let (layer, kind): (String, String) = (r.get(0), r.get(1));
            let (n, newest): (i64, Option<i64>) = (r.get(2), r.get(3));
            crate::storage::meta::tally(&mut s, &layer, &kind, n.max(0) as u64, newest);
        }
        // The vector tables exist once an embedder is locked.
        let vectors = |t: &str| {
            if self.vectors_on() {
                format!("(SELECT COUNT(*) FROM vec_{t} WHERE {ns})")
            } else {
                "0::BIGINT".to_string()
            }
        };
        let row = pg(db.query_one(
            &format!(
                "SELECT \
                 (SELECT COUNT(*) FROM memories WHERE valid_until IS NOT NULL AND {ns}), \
                 (SELECT COUNT(*) FROM episodes WHERE valid_until IS NULL AND {ns}), \
                 (SELECT COUNT(*) FROM sessions WHERE {ns}), \
                 (SELECT COUNT(*) FROM entities WHERE {ns}), \
                 (SELECT COUNT(*) FROM facts WHERE valid_until IS NULL AND {ns}), {}, {}",
                vectors("memories"),
                vectors("episodes")
            ),
            &[&namespaces],
        ))?;
        let n = |i: usize| row.get::<_, i64>(i).max(0) as u64;
        s.deleted = n(0);
        s.episodes = n(1);
        s.sessions = n(2);
        s.entities = n(3);
        s.facts = n(4);
        s.memory_vectors = n(5);
        s.episode_vectors = n(6);
        Ok(s)
    }

    pub fn log_decision(&self, e: &Decision) -> R<()> {
        if self.defer(|| Effect::Decision(e.clone())) {
            return Ok(());
        }
        pg(self.db().execute(
            "INSERT INTO audit_log (at, namespace, action, target_id, detail) VALUES ($1,$2,$3,$4,$5)",
            &[&e.at, &e.namespace, &e.action.as_str(), &e.target_id, &e.detail],
        ))?;
        Ok(())
    }

    pub fn put_version(&self, v: &MemoryVersion) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let memory = serde_json::to_string(&v.memory)
            .map_err(|e| CoreError::Storage(format!("version {}: {e}", v.memory_id)))?;
        pg(self.db().execute(
            "INSERT INTO memory_versions (memory_id, seq, namespace, replaced_at, action, reason, memory) \
             VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT DO NOTHING",
            &[
                &v.memory_id,
                &i64::from(v.seq),
                &v.namespace,
                &v.replaced_at,
                &v.action.as_str(),
                &v.reason,
                &memory,
            ],
        ))?;
        Ok(())
    }

    pub fn memory_versions(&self, memory_id: &str) -> R<Vec<MemoryVersion>> {
        let rows = pg(self.db().query(
            "SELECT memory_id, seq, namespace, replaced_at, action, reason, memory \
             FROM memory_versions WHERE memory_id = $1 ORDER BY seq",
            &[&memory_id],
        ))?;
        rows.iter()
            .map(|r| {
                let id: String = r.get(0);
                let action: String = r.get(4);
                let memory: String = r.get(6);
                Ok(MemoryVersion {
                    memory: serde_json::from_str(&memory)
                        .map_err(|e| CoreError::Storage(format!("snapshot of {id}: {e}")))?,
                    action: action
                        .parse()
                        .map_err(|_| CoreError::Storage(format!("unknown action `{action}`")))?,
                    seq: u32::try_from(r.get::<_, i64>(1))
                        .map_err(|e| CoreError::Storage(format!("version of {id}: {e}")))?,
                    namespace: r.get(2),
                    replaced_at: r.get(3),
                    reason: r.get(5),
                    memory_id: id,
                })
            })
            .collect()
    }

    /// The topic-relevant change counter (the `memories_changed`
    /// sequence, moved by a trigger).
    pub fn memories_changed(&self) -> u64 {
        self.db()
            .query_one(
                "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM memories_changed",
                &[],
            )
            .map(|r| r.get::<_, i64>(0).max(0) as u64)
            .unwrap_or(0)
    }

    /// Adds the full-text counts' pending changes into their folded
    /// tables (`schema.rs`); how many lexemes changed. Then the four count
    /// tables are vacuumed: every search reads them by index, and between
    /// autovacuum's visits (a minute apart) the dead entries a busy
    /// minute's writes leave (10,193 in the pending table's index, emptied,
    /// in a fill of 4,000 memories) made each read take milliseconds.
    /// Without truncation, which would wait for the writers' locks. The
    /// caller holds no transaction (VACUUM cannot run in one).
    pub fn fold_counts(&self) -> anyhow::Result<u64> {
        let mut db = self.db();
        let n: i64 = db.query_one("SELECT mnemo_fold_counts()", &[])?.get(0);
        if n > 0 {
            db.batch_execute(
                "VACUUM (SKIP_LOCKED, TRUNCATE false) fts_df_delta, fts_totals_delta, fts_df, fts_totals",
            )?;
        }
        Ok(n.max(0) as u64)
    }

    /// Whether memories exist but no topic tree was ever cached.
    pub fn needs_topic_tree(&self) -> R<bool> {
        let row = pg(self.db().query_one(
            "SELECT EXISTS(SELECT 1 FROM memories WHERE valid_until IS NULL) \
             AND NOT EXISTS(SELECT 1 FROM metadata WHERE key LIKE 'topics:%')",
            &[],
        ))?;
        Ok(row.get(0))
    }

    pub fn get_meta(&self, key: &str) -> R<Option<String>> {
        let row = pg(self
            .db()
            .query_opt("SELECT value FROM metadata WHERE key = $1", &[&key]))?;
        Ok(row.map(|r| r.get(0)))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        pg(self.db().execute(
            "INSERT INTO metadata(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        ))?;
        Ok(())
    }
}
