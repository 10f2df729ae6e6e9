//! Memories, turns and sessions in Postgres: writes (with their full-text
//! vectors), reads by id, exact text and listing, access bumps.

use mnemo_core::CoreError;
use mnemo_core::model::*;

use super::sql::{self, Args, EPISODE_COLUMNS, MEMORY_COLUMNS, SESSION_COLUMNS};
use super::{PgStore, R, index_text, pg};
use crate::storage::reader::Effect;

impl PgStore {
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

    fn write_memory(&self, m: &Memory, insert: bool) -> R<()> {
        const INSERT: &str = "INSERT INTO memories (id, namespace, content, content_hash, kind, layer, importance, \
             confidence, decay_rate, access_count, repetition_count, created_at, modified_at, last_accessed, \
             event_time, created_epoch, valid_until, invalid_reason, session_id, source, source_role, tags, \
             attributes, source_ids, supersedes, superseded_by, fts) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,\
             $12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22::text::jsonb,$23,$24,$25,$26,\
             setweight(to_tsvector('mnemo', $27), 'A'))";
        // The text search vector is rebuilt only when the text or the tags changed.
        const UPDATE: &str = "UPDATE memories SET namespace=$2, content=$3, content_hash=$4, kind=$5, layer=$6, \
             importance=$7, confidence=$8, decay_rate=$9, access_count=$10, repetition_count=$11, created_at=$12, \
             modified_at=$13, last_accessed=$14, event_time=$15, created_epoch=$16, valid_until=$17, \
             invalid_reason=$18, session_id=$19, source=$20, source_role=$21, tags=$22::text::jsonb, attributes=$23, \
             source_ids=$24, supersedes=$25, superseded_by=$26, \
             fts = CASE WHEN content = $3 AND tags = $22::text::jsonb THEN fts \
                   ELSE setweight(to_tsvector('mnemo', $27), 'A') END WHERE id=$1";
        let tags = sql::json_list(&m.tags);
        // FTS5 indexes the tags column as its JSON text: its words count too.
        let indexed = format!("{} {}", index_text(&m.content), super::fold(&tags));
        let n = pg(self.db().execute(
            if insert { INSERT } else { UPDATE },
            &[
                &m.id,
                &m.namespace,
                &m.content,
                &crate::storage::content_hash(&m.content),
                &m.kind.as_str(),
                &m.layer.as_str(),
                &m.importance,
                &m.confidence,
                &m.decay_rate,
                &i64::from(m.access_count),
                &i64::from(m.repetition_count),
                &m.created_at,
                &m.modified_at,
                &m.last_accessed,
                &m.event_time,
                &(m.created_epoch as i64),
                &m.valid_until,
                &m.invalid_reason,
                &m.session_id,
                &m.source,
                &m.source_role,
                &tags,
                &m.attributes,
                &sql::json_list(&m.source_ids),
                &m.supersedes,
                &m.superseded_by,
                &indexed,
            ],
        ))?;
        if n == 0 {
            return Err(CoreError::NotFound(format!("memory `{}`", m.id)));
        }
        Ok(())
    }

    pub fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = pg(self.db().query(
            &format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ANY($1)"),
            &[&ids],
        ))?;
        sql::rows(rows, sql::memory)
    }

    /// The active memory of `namespaces` with exactly this text (through the hash index).
    pub fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        if namespaces.is_empty() {
            return Ok(None);
        }
        let rows = pg(self.db().query(
            &format!(
                "SELECT {MEMORY_COLUMNS} FROM memories WHERE content_hash = $1 AND valid_until IS NULL \
                 AND namespace = ANY($2) ORDER BY created_at LIMIT 5"
            ),
            &[&crate::storage::content_hash(content), &namespaces],
        ))?;
        Ok(sql::rows(rows, sql::memory)?
            .into_iter()
            .find(|m| m.content == content))
    }

    pub fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        // Newest-changed over several layers reads each layer's newest
        // through its own index range and merges them: the layers are
        // skewed (a few hundred in the Buffer and Core, millions in
        // Working), and one walk of the namespace by `modified_at` went
        // through every Working row to find 224 of the small layers
        // (573 ms at 1M memories; planner estimates cannot see it coming).
        let per_layer = q.by_modified && q.layers.len() > 1;
        let filter = SearchFilter {
            namespaces: q.namespaces.clone(),
            layers: if per_layer {
                Vec::new()
            } else {
                q.layers.clone()
            },
            kinds: q.kinds.clone(),
            tags: q.tags.clone(),
            source: q.source.clone(),
            ..Default::default()
        };
        let mut args = Args::default();
        let mut clause = sql::where_clause(Target::Memories, "m", &filter, q.state, &mut args);
        if let Some(since) = q.modified_since {
            clause.push_str(&format!(" AND m.modified_at >= {}", args.add(since)));
        }
        if let Some(least) = q.min_importance {
            clause.push_str(&format!(" AND m.importance >= {}", args.add(least)));
        }
        if !q.any_tags.is_empty() {
            let p = args.add(q.any_tags.clone());
            clause.push_str(&format!(" AND m.tags ?| {p}"));
        }
        let (time, order) = if q.by_modified {
            ("modified_at", "m.modified_at DESC, m.id DESC")
        } else {
            ("created_at", "m.created_at DESC, m.id DESC")
        };
        if let (Some(t), Some(id)) = (q.after_time, &q.after_id) {
            let (pt, pid) = (args.add(t), args.add(id.clone()));
            clause.push_str(&format!(
                " AND (m.{time} < {pt} OR (m.{time} = {pt} AND m.id < {pid}))"
            ));
        }
        let (limit, offset) = (args.add(i64::from(q.limit)), args.add(i64::from(q.offset)));
        let text = if per_layer {
            let layers: Vec<String> = q.layers.iter().map(|l| l.as_str().to_string()).collect();
            let layers = args.add(layers);
            format!(
                "SELECT m.* FROM unnest({layers}::text[]) AS l(layer), LATERAL ( \
                   SELECT {MEMORY_COLUMNS} FROM memories m WHERE {clause} AND m.layer = l.layer \
                   ORDER BY {order} LIMIT {limit}::BIGINT + {offset}::BIGINT) m \
                 ORDER BY {order} LIMIT {limit} OFFSET {offset}"
            )
        } else {
            format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {clause} ORDER BY {order} \
                 LIMIT {limit} OFFSET {offset}"
            )
        };
        let rows = pg(self.db().query(&text, &args.refs()))?;
        sql::rows(rows, sql::memory)
    }

    /// The namespaces with an active memory (a skip scan over the
    /// namespace index: one seek per namespace).
    pub fn active_namespaces(&self) -> R<Vec<String>> {
        let rows = pg(self.db().query(
            "WITH RECURSIVE ns(name) AS ( \
               SELECT (SELECT MIN(namespace) FROM memories WHERE valid_until IS NULL) \
               UNION ALL \
               SELECT (SELECT MIN(namespace) FROM memories WHERE namespace > ns.name AND valid_until IS NULL) \
               FROM ns WHERE ns.name IS NOT NULL) \
             SELECT name FROM ns WHERE name IS NOT NULL",
            &[],
        ))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// One more access for each of `ids` (kept for the writer on a reader).
    pub fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        if self.defer(|| Effect::Touch(ids.to_vec(), at)) {
            return Ok(());
        }
        pg(self.db().execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed = $2 WHERE id = ANY($1)",
            &[&ids, &at],
        ))?;
        Ok(())
    }

    /// The namespaces of memories `ids` (what a flush of reads' effects
    /// locks, `server/engine.rs`).
    pub fn namespaces_of(&self, ids: &[String]) -> R<Vec<String>> {
        let rows = pg(self.db().query(
            "SELECT DISTINCT namespace FROM memories WHERE id = ANY($1)",
            &[&ids],
        ))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Shown to the agent at `at` (kept for the writer on a reader).
    pub fn renew_memories(&self, ids: &[String], at: Millis) -> R<()> {
        if self.defer(|| Effect::Renew(ids.to_vec(), at)) {
            return Ok(());
        }
        pg(self.db().execute(
            "UPDATE memories SET attributes = jsonb_set(attributes::jsonb, '{renewed_at}', to_jsonb($2::BIGINT))::text \
             WHERE id = ANY($1)",
            &[&ids, &at],
        ))?;
        Ok(())
    }

    /// A turn, indexed with the turn before it in its session (its
    /// `context` vector), as the SQLite store's trigger does.
    pub fn insert_episode(&self, e: &Episode) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let previous: Option<String> = pg(self.db().query_opt(
            "SELECT content FROM episodes WHERE namespace = $1 AND session_id = $2 AND event_time <= $3 \
             ORDER BY event_time DESC, seq DESC LIMIT 1",
            &[&e.namespace, &e.session_id, &e.event_time],
        ))?
        .map(|r| r.get(0));
        let context = previous.as_deref().map(index_text).unwrap_or_default();
        pg(self.db().execute(
            &format!(
                "INSERT INTO episodes ({EPISODE_COLUMNS}, fts, fts_context) VALUES \
                 ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10, to_tsvector('mnemo', $11), to_tsvector('mnemo', $12))"
            ),
            &[
                &e.id,
                &e.namespace,
                &e.session_id,
                &e.source_role,
                &e.content,
                &e.event_time,
                &e.created_at,
                &e.valid_until,
                &e.invalid_reason,
                &e.attributes,
                &index_text(&e.content),
                &context,
            ],
        ))?;
        Ok(())
    }

    pub fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = pg(self.db().query(
            &format!("SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ANY($1)"),
            &[&ids],
        ))?;
        sql::rows(rows, sql::episode)
    }

    pub fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        let row = pg(self.db().query_opt(
            &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = $1 AND id = $2"),
            &[&namespace, &id],
        ))?;
        row.as_ref().map(sql::session).transpose()
    }

    pub fn put_session(&self, s: &Session) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        pg(self.db().execute(
            "INSERT INTO sessions (namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns) \
             VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (namespace, id) DO UPDATE SET \
             last_seen_at = excluded.last_seen_at, turn_count = excluded.turn_count, \
             consolidated_at = excluded.consolidated_at, consolidated_turns = excluded.consolidated_turns",
            &[
                &s.namespace,
                &s.id,
                &s.first_seen_at,
                &s.last_seen_at,
                &i64::from(s.turn_count),
                &s.consolidated_at,
                &i64::from(s.consolidated_turns),
            ],
        ))?;
        Ok(())
    }

    /// Open sessions (every namespace when `namespace` is empty), oldest first.
    pub fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        let rows = pg(self.db().query(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE ($1 = '' OR namespace = $1) \
                 AND consolidated_at IS NULL AND ($2::TEXT IS NULL OR id != $2) ORDER BY first_seen_at, id"
            ),
            &[&namespace, &exclude],
        ))?;
        sql::rows(rows, sql::session)
    }

    pub fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        let rows = pg(self.db().query(
            &format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE namespace = $1 AND session_id = $2 \
                 AND valid_until IS NULL ORDER BY event_time, created_at, seq LIMIT $3 OFFSET $4"
            ),
            &[
                &namespace,
                &session_id,
                &i64::from(limit),
                &i64::from(offset),
            ],
        ))?;
        sql::rows(rows, sql::episode)
    }
}
