//! `SqliteStore`: the core's `Storage` port over one SQLite connection.

use std::cell::RefCell;
use std::path::Path;

use mnemo_core::CoreResult;
use mnemo_core::model::*;
use mnemo_core::ports::Storage;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::ann::{AnnIndex, Answer};
use super::filter::{in_list, table, where_clause, where_clause_in};
use super::rows::{self, EPISODE_COLUMNS, MEMORY_COLUMNS};
use super::vectors::{self, VectorState};
use super::{open_connection, storage_err};

/// Most neighbours sqlite-vec returns per KNN query.
const VEC_MAX_K: u32 = 4096;
/// KNN over-fetch, so post-filters (layer, kind, tags, deleted) still leave `limit`.
const VEC_OVERFETCH: u32 = 3;

pub struct SqliteStore {
    conn: Connection,
    vectors: RefCell<VectorState>,
    ann: RefCell<AnnIndex>,
    /// Rows per vector partition as last counted, and writes since.
    partition_rows: RefCell<std::collections::HashMap<(Target, String), (usize, usize)>>,
}

/// Writes to a partition between two counts of its rows (which decide
/// whether it is large enough for a graph).
const RECOUNT_EVERY: usize = 1000;
/// A query term matching more rows than this is left out of the BM25 query
/// when the query has rarer terms (a bounded candidate list per channel).
const FTS_TERM_MAX_DOCS: i64 = 5_000;
/// Default smallest partition served by the HNSW graph.
pub const ANN_MIN_ROWS: usize = 20_000;

type R<T> = CoreResult<T>;

fn sql<T>(r: rusqlite::Result<T>) -> R<T> {
    r.map_err(storage_err)
}

/// `s` with LIKE's wildcards escaped (escape character `\`).
fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// `"a" OR "b"`: every term a quoted FTS5 string, so no user text is syntax.
fn fts_match(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

impl SqliteStore {
    /// Opens the database; vectors stay disabled until [`Self::lock_embedder`].
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            conn: open_connection(path)?,
            vectors: RefCell::new(VectorState::Disabled {
                reason: "no embedder configured".into(),
            }),
            ann: RefCell::new(AnnIndex::new(Some(ANN_MIN_ROWS))),
            partition_rows: RefCell::new(std::collections::HashMap::new()),
        })
    }

    /// The smallest vector partition the HNSW graph serves; `None` keeps
    /// every search exact (sqlite-vec).
    pub fn set_ann_min_rows(&self, min_rows: Option<usize>) {
        *self.ann.borrow_mut() = AnnIndex::new(min_rows);
        self.partition_rows.borrow_mut().clear();
    }

    /// Waits for graph builds in progress; (points, build ms) per graph.
    pub fn ann_wait(&self) -> Vec<(usize, u128)> {
        self.ann.borrow_mut().wait()
    }

    /// Rows in a vector partition, recounted every `RECOUNT_EVERY` writes.
    fn partition_size(&self, target: Target, ns: &str) -> R<usize> {
        let key = (target, ns.to_string());
        if let Some((rows, writes)) = self.partition_rows.borrow().get(&key)
            && *writes < RECOUNT_EVERY
        {
            return Ok(*rows);
        }
        let t = table(target);
        let rows: i64 = sql(self.conn.query_row(
            &format!("SELECT COUNT(*) FROM {t} WHERE namespace = ?1"),
            [ns],
            |r| r.get(0),
        ))?;
        self.partition_rows
            .borrow_mut()
            .insert(key, (rows as usize, 0));
        Ok(rows as usize)
    }

    /// The query's terms without those matching more than `FTS_TERM_MAX_DOCS`
    /// rows, when rarer terms exist: BM25 scores a very common term near
    /// zero, yet ranking it costs a pass over all its rows. Counting stops
    /// at the cap, so the check itself is bounded.
    fn without_common_terms(&self, t: &str, terms: &[String]) -> R<Vec<String>> {
        if terms.len() < 2 {
            return Ok(terms.to_vec());
        }
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM {t}_fts WHERE {t}_fts MATCH ?1 LIMIT ?2)"
        )))?;
        let mut rare = Vec::with_capacity(terms.len());
        for term in terms {
            let Some(q) = fts_match(std::slice::from_ref(term)) else {
                continue;
            };
            let n: i64 = sql(stmt.query_row(params![q, FTS_TERM_MAX_DOCS + 1], |r| r.get(0)))?;
            if n <= FTS_TERM_MAX_DOCS {
                rare.push(term.clone());
            }
        }
        Ok(if rare.is_empty() {
            terms.to_vec()
        } else {
            rare
        })
    }

    /// Every (rowid, vector) of a partition: the snapshot a graph is built from.
    fn partition_vectors(&self, target: Target, ns: &str) -> anyhow::Result<Vec<(i64, Vec<f32>)>> {
        let t = table(target);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT rowid, embedding FROM vec_{t} WHERE namespace = ?1"
        ))?;
        let rows = stmt.query_map([ns], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                rows::blob_vector(&r.get::<_, Vec<u8>>(1)?),
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Graph candidates for one partition, filtered and mapped to ids; `None`
    /// when the partition must be searched exactly.
    fn ann_search(
        &self,
        target: Target,
        ns: &str,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
        k: u32,
    ) -> R<Option<Vec<ScoredId>>> {
        if !self.ann.borrow().enabled() {
            return Ok(None);
        }
        let answer = self.ann.borrow_mut().search(target, ns, v, k as usize);
        let candidates = match answer {
            Answer::Approximate(c) => c,
            Answer::Exact => {
                let rows = self.partition_size(target, ns)?;
                let built = self
                    .ann
                    .borrow_mut()
                    .maybe_build(target, ns, rows, || self.partition_vectors(target, ns));
                if let Err(e) = built {
                    tracing::warn!(error = %format!("{e:#}"), "HNSW build not started; searching exactly");
                }
                return Ok(None);
            }
        };
        let t = table(target);
        let w = where_clause(target, "x", f);
        let mut params: Vec<Value> = candidates
            .iter()
            .map(|(id, _)| Value::Integer(*id))
            .collect();
        params.extend(w.params);
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.rowid, x.id FROM {t} x WHERE x.rowid IN ({}) AND {}",
            in_list(candidates.len()),
            w.clause
        )))?;
        let admitted: std::collections::HashMap<i64, String> = sql(stmt
            .query_map(params_from_iter(params), |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect()))?;
        let hits: Vec<ScoredId> = candidates
            .iter()
            .filter_map(|(rowid, score)| {
                admitted.get(rowid).map(|id| ScoredId {
                    id: id.clone(),
                    score: *score,
                })
            })
            .collect();
        // A selective filter left too few: the exact search finds the rest.
        if (hits.len() as u32) < limit && candidates.len() as u32 >= k {
            return Ok(None);
        }
        let rows = self.partition_size(target, ns)?;
        let rebuilt = self
            .ann
            .borrow_mut()
            .maybe_build(target, ns, rows, || self.partition_vectors(target, ns));
        if let Err(e) = rebuilt {
            tracing::warn!(error = %format!("{e:#}"), "HNSW rebuild not started");
        }
        Ok(Some(hits))
    }

    /// Checks (or sets, on first use) the embedding lock for this embedder.
    pub fn lock_embedder(&self, model: &str, dimension: u32) -> anyhow::Result<VectorState> {
        let state = vectors::ensure(&self.conn, model, dimension)?;
        *self.vectors.borrow_mut() = state.clone();
        Ok(state)
    }

    /// Forgets every vector and re-locks to a new embedder (`mnemo reindex --embeddings`).
    pub fn reset_vectors(&self, model: &str, dimension: u32) -> anyhow::Result<()> {
        vectors::reset(&self.conn, model, dimension)?;
        self.ann.borrow_mut().clear();
        *self.vectors.borrow_mut() = VectorState::Enabled {
            model: model.into(),
            dimension,
        };
        Ok(())
    }

    pub fn vector_state(&self) -> VectorState {
        self.vectors.borrow().clone()
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Active rows of `target` that have no vector yet, oldest first.
    pub fn missing_vectors(
        &self,
        target: Target,
        limit: u32,
    ) -> anyhow::Result<Vec<(String, String)>> {
        if !self.vector_state().enabled() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT id, content FROM {t} WHERE valid_until IS NULL \
             AND rowid NOT IN (SELECT rowid FROM vec_{t}) ORDER BY rowid LIMIT ?1"
        ))?;
        let rows = stmt.query_map([limit], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn memories_where(&self, clause: &str, params: Vec<Value>) -> R<Vec<Memory>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}"
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params), rows::memory))?;
        sql(rows.collect())
    }

    fn write_memory(&self, m: &Memory, insert: bool) -> R<()> {
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

    fn vectors_on(&self) -> bool {
        self.vectors.borrow().enabled()
    }
}

impl SqliteStore {
    /// Every namespace that holds a memory or an episode.
    pub fn namespaces(&self) -> anyhow::Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT namespace FROM memories UNION SELECT namespace FROM episodes ORDER BY 1",
        )?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl Storage for SqliteStore {
    fn insert_memory(&self, m: &Memory) -> R<()> {
        self.write_memory(m, true)
    }

    fn update_memory(&self, m: &Memory) -> R<()> {
        self.write_memory(m, false)
    }

    fn get_memories(&self, ids: &[String]) -> R<Vec<Memory>> {
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

    fn find_exact(&self, namespaces: &[String], content: &str) -> R<Option<Memory>> {
        if namespaces.is_empty() {
            return Ok(None);
        }
        let mut params: Vec<Value> = vec![Value::Text(rows::content_hash(content))];
        params.extend(namespaces.iter().cloned().map(Value::Text));
        let found = self.memories_where(
            &format!(
                "content_hash = ?1 AND valid_until IS NULL AND namespace IN ({}) ORDER BY created_at LIMIT 5",
                in_list(namespaces.len())
            ),
            params,
        )?;
        Ok(found.into_iter().find(|m| m.content == content))
    }

    fn list_memories(&self, q: &ListQuery) -> R<Vec<Memory>> {
        let filter = SearchFilter {
            namespaces: q.namespaces.clone(),
            layers: q.layers.clone(),
            kinds: q.kinds.clone(),
            tags: q.tags.clone(),
            ..Default::default()
        };
        let state = q.state;
        let mut w = where_clause_in(Target::Memories, "memories", &filter, state);
        let mut clause = w.clause;
        if let Some(since) = q.modified_since {
            clause.push_str(" AND memories.modified_at >= ?");
            w.params.push(Value::Integer(since));
        }
        let order = if q.by_modified {
            "modified_at DESC, id DESC"
        } else {
            "created_at DESC, id DESC"
        };
        w.params.push(Value::Integer(q.limit as i64));
        w.params.push(Value::Integer(q.offset as i64));
        self.memories_where(
            &format!("{clause} ORDER BY {order} LIMIT ? OFFSET ?"),
            w.params,
        )
    }

    fn touch_memories(&self, ids: &[String], at: Millis) -> R<()> {
        let mut stmt = sql(self.conn.prepare_cached(
            "UPDATE memories SET access_count = access_count + 1, last_accessed = ?2 WHERE id = ?1",
        ))?;
        for id in ids {
            sql(stmt.execute(params![id, at]))?;
        }
        Ok(())
    }

    fn insert_episode(&self, e: &Episode) -> R<()> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "INSERT INTO episodes ({EPISODE_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
        )))?;
        sql(stmt.execute(params![
            e.id,
            e.namespace,
            e.session_id,
            e.source_role,
            e.content,
            e.event_time,
            e.created_at,
            e.valid_until,
            e.invalid_reason,
            e.attributes
        ]))?;
        Ok(())
    }

    fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut stmt = sql(self.conn.prepare_cached(&format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE id IN ({})",
                in_list(chunk.len())
            )))?;
            let rows = sql(stmt.query_map(params_from_iter(chunk), rows::episode))?;
            out.extend(sql(rows.collect::<rusqlite::Result<Vec<_>>>())?);
        }
        Ok(out)
    }

    fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        let mut stmt = sql(self.conn.prepare_cached(
            "SELECT namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at \
             FROM sessions WHERE namespace = ?1 AND id = ?2",
        ))?;
        sql(stmt
            .query_row(params![namespace, id], rows::session)
            .optional())
    }

    fn put_session(&self, s: &Session) -> R<()> {
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT INTO sessions (namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at) \
             VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT(namespace, id) DO UPDATE SET \
             last_seen_at = excluded.last_seen_at, turn_count = excluded.turn_count, \
             consolidated_at = excluded.consolidated_at",
        ))?;
        sql(stmt.execute(params![
            s.namespace,
            s.id,
            s.first_seen_at,
            s.last_seen_at,
            s.turn_count,
            s.consolidated_at
        ]))?;
        Ok(())
    }

    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        let mut stmt = sql(self.conn.prepare_cached(
            "SELECT namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at FROM sessions \
             WHERE (?1 = '' OR namespace = ?1) AND consolidated_at IS NULL AND (?2 IS NULL OR id != ?2) \
             ORDER BY first_seen_at",
        ))?;
        let rows = sql(stmt.query_map(params![namespace, exclude], rows::session))?;
        sql(rows.collect())
    }

    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes WHERE namespace = ?1 AND session_id = ?2 \
             AND valid_until IS NULL ORDER BY event_time, created_at, rowid LIMIT ?3 OFFSET ?4"
        )))?;
        let rows =
            sql(stmt.query_map(params![namespace, session_id, limit, offset], rows::episode))?;
        sql(rows.collect())
    }

    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        let t = table(target);
        let terms = self.without_common_terms(t, terms)?;
        // Column weights: an episode's own words, then the turn before it.
        let weights = match target {
            Target::Episodes => format!("1.0, {:.4}", context_weight.max(0.0)),
            Target::Memories => "1.0, 1.0".to_string(),
        };
        let Some(query) = fts_match(&terms) else {
            return Ok(Vec::new());
        };
        let w = where_clause(target, "x", f);
        let mut params = vec![Value::Text(query)];
        params.extend(w.params);
        params.push(Value::Integer(limit as i64));
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.id, -bm25({t}_fts, {weights}) AS s FROM {t}_fts JOIN {t} x ON x.rowid = {t}_fts.rowid \
             WHERE {t}_fts MATCH ? AND {} ORDER BY s DESC, x.id LIMIT ?",
            w.clause
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params), |r| {
            Ok(ScoredId {
                id: r.get(0)?,
                score: r.get::<_, f64>(1)? as f32,
            })
        }))?;
        sql(rows.collect())
    }

    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        if !self.vectors_on() || limit == 0 {
            return Ok(Vec::new());
        }
        let t = table(target);
        let k = (limit.saturating_mul(VEC_OVERFETCH)).min(VEC_MAX_K);
        let blob = rows::vector_blob(v);
        let w = where_clause(target, "x", f);
        // One KNN per namespace partition; an empty filter searches them all.
        let partitions: Vec<Option<&String>> = if f.namespaces.is_empty() {
            vec![None]
        } else {
            f.namespaces.iter().map(Some).collect()
        };
        let mut hits = Vec::new();
        for ns in partitions {
            if let Some(ns) = ns
                && let Some(found) = self.ann_search(target, ns, v, f, limit, k)?
            {
                hits.extend(found);
                continue;
            }
            let ns_clause = if ns.is_some() {
                "AND namespace = ?"
            } else {
                ""
            };
            let mut params = vec![Value::Blob(blob.clone()), Value::Integer(k as i64)];
            if let Some(ns) = ns {
                params.push(Value::Text(ns.clone()));
            }
            params.extend(w.params.iter().cloned());
            let mut stmt = sql(self.conn.prepare_cached(&format!(
                "SELECT x.id, 1.0 - knn.distance FROM \
                 (SELECT rowid, distance FROM vec_{t} WHERE embedding MATCH ? AND k = ? {ns_clause}) knn \
                 JOIN {t} x ON x.rowid = knn.rowid WHERE {} ORDER BY knn.distance",
                w.clause
            )))?;
            // A zero query vector (a query with no words) has no cosine: NULL.
            let rows = sql(stmt.query_map(params_from_iter(params), |r| {
                Ok(r.get::<_, Option<f64>>(1)?
                    .map(|s| (r.get::<_, String>(0), s)))
            }))?;
            for row in rows {
                if let Some((id, s)) = sql(row)? {
                    hits.push(ScoredId {
                        id: sql(id)?,
                        score: s as f32,
                    });
                }
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        hits.truncate(limit as usize);
        Ok(hits)
    }

    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let (junction, item_col) = match target {
            Target::Memories => ("memory_entities", "memory_id"),
            Target::Episodes => ("episode_entities", "episode_id"),
        };
        let names: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        let w = where_clause(target, "x", f);
        let ns_filter = if f.namespaces.is_empty() {
            String::new()
        } else {
            format!("AND en.namespace IN ({})", in_list(f.namespaces.len()))
        };
        let mut params: Vec<Value> = Vec::new();
        params.extend(names.iter().cloned().map(Value::Text));
        params.extend(names.iter().cloned().map(Value::Text));
        params.extend(f.namespaces.iter().cloned().map(Value::Text));
        params.extend(w.params);
        params.push(Value::Integer(limit as i64));
        let n = in_list(names.len());
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "WITH ents AS (\
                 SELECT en.id FROM entities en \
                 WHERE (en.name_lower IN ({n}) OR en.id IN (SELECT entity_id FROM entity_aliases WHERE alias_lower IN ({n}))) {ns_filter}) \
             SELECT x.id, COUNT(*) AS c FROM {junction} j JOIN ents ON j.entity_id = ents.id \
             JOIN {t} x ON x.id = j.{item_col} WHERE {} \
             GROUP BY x.id ORDER BY c DESC, x.event_time DESC, x.id LIMIT ?",
            w.clause
        )))?;
        let rows = sql(stmt.query_map(params_from_iter(params), |r| {
            Ok(ScoredId {
                id: r.get(0)?,
                score: r.get::<_, i64>(1)? as f32,
            })
        }))?;
        sql(rows.collect())
    }

    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        let state = self.vector_state();
        let VectorState::Enabled { dimension, .. } = state else {
            return Ok(());
        };
        if v.len() != dimension as usize {
            return Err(mnemo_core::CoreError::Embedding(format!(
                "vector has {} dimensions; the database expects {dimension}",
                v.len()
            )));
        }
        let t = table(target);
        let row: Option<(i64, String)> = sql(self
            .conn
            .prepare_cached(&format!("SELECT rowid, namespace FROM {t} WHERE id = ?1"))
            .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional()))?;
        let Some((rowid, ns)) = row else {
            return Err(mnemo_core::CoreError::NotFound(format!(
                "no row `{id}` in {t}"
            )));
        };
        sql(self
            .conn
            .execute(&format!("DELETE FROM vec_{t} WHERE rowid = ?1"), [rowid]))?;
        sql(self.conn.execute(
            &format!("INSERT INTO vec_{t}(rowid, namespace, embedding) VALUES (?1, ?2, ?3)"),
            params![rowid, ns, rows::vector_blob(v)],
        ))?;
        self.ann.borrow_mut().put(target, &ns, rowid, v);
        if let Some((_, writes)) = self.partition_rows.borrow_mut().get_mut(&(target, ns)) {
            *writes += 1;
        }
        Ok(())
    }

    fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        if !self.vectors_on() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT v.embedding FROM vec_{t} v JOIN {t} x ON x.rowid = v.rowid WHERE x.id = ?1"
        )))?;
        let mut out = Vec::new();
        for id in ids {
            let blob: Option<Vec<u8>> = sql(stmt.query_row([id], |r| r.get(0)).optional())?;
            if let Some(b) = blob {
                out.push((id.clone(), rows::blob_vector(&b)));
            }
        }
        Ok(out)
    }

    fn vectors_enabled(&self) -> R<bool> {
        Ok(self.vectors_on())
    }

    fn find_entity(&self, namespace: &str, name: &str, t: EntityType) -> R<Option<Entity>> {
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

    fn put_entity(&self, e: &Entity) -> R<()> {
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

    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> R<()> {
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

    fn find_entities(&self, namespaces: &[String], name: &str) -> R<Vec<Entity>> {
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

    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> R<Vec<String>> {
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

    fn enrichment_candidates(
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

    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> R<()> {
        let t = table(target);
        sql(self.conn.execute(
            &format!("UPDATE {t} SET attributes = json_set(attributes, '$.enriched_at', ?2) WHERE id = ?1"),
            params![id, at],
        ))?;
        Ok(())
    }

    fn put_fact(&self, f: &Fact) -> R<()> {
        sql(self.conn.execute(
            "INSERT INTO facts (id, namespace, subject, predicate, object, confidence, valid_from, valid_until, \
             superseded_by, memory_id) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) ON CONFLICT(id) DO UPDATE SET \
             confidence = excluded.confidence, valid_until = excluded.valid_until, superseded_by = excluded.superseded_by",
            params![f.id, f.namespace, f.subject, f.predicate, f.object, f.confidence, f.valid_from, f.valid_until, f.superseded_by, f.memory_id],
        ))?;
        Ok(())
    }

    fn query_facts(&self, q: &FactQuery) -> R<Vec<Fact>> {
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

    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> R<Vec<(String, u64)>> {
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

    fn stats(&self, namespaces: &[String]) -> R<StoreStats> {
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

    fn log_decision(&self, e: &Decision) -> R<()> {
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

    fn get_meta(&self, key: &str) -> R<Option<String>> {
        sql(self
            .conn
            .query_row("SELECT value FROM metadata WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional())
    }

    fn set_meta(&self, key: &str, value: &str) -> R<()> {
        sql(self.conn.execute(
            "INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        ))?;
        Ok(())
    }
}
