//! The search channels: FTS5 BM25 (episodes weigh their previous-turn
//! column), vector KNN (sqlite-vec, or the HNSW graph for large
//! partitions), the entity channel; and the vectors themselves.

use mnemo_core::model::*;
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params, params_from_iter};

use super::ann::Answer;
use super::filter::{in_list, table, where_clause};
use super::rows;
use super::sqlite::*;
use super::vectors::VectorState;

impl SqliteStore {
    pub fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        if let Some(hits) = self.text_search(target, terms, f, limit, context_weight, None)? {
            return Ok(hits);
        }
        self.fts5_search(target, terms, f, limit, context_weight)
    }

    /// `vector_search` and `fts_search` (`Storage::near_search`): when the
    /// derived index answers, its first ranking runs on a second thread
    /// while this one searches the vectors.
    pub fn near_search(
        &self,
        target: Target,
        v: Option<&[f32]>,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<(Vec<ScoredId>, Vec<ScoredId>)> {
        let Some(v) = v else {
            let best = self.fts_search(target, terms, f, limit, context_weight)?;
            return Ok((Vec::new(), best));
        };
        let mut near = None;
        let mut run = || near = Some(self.vector_search(target, v, f, limit));
        let indexed = self.text_search(target, terms, f, limit, context_weight, Some(&mut run))?;
        let near = match near {
            Some(found) => found?,
            None => self.vector_search(target, v, f, limit)?,
        };
        let best = match indexed {
            Some(hits) => hits,
            None => self.fts5_search(target, terms, f, limit, context_weight)?,
        };
        Ok((near, best))
    }

    /// BM25 from FTS5, in the passes `query_passes` chooses.
    fn fts5_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        let t = table(target);
        ranked_in_passes(self.query_passes(t, terms)?, limit, |terms| {
            self.fts_ranked(target, terms, f, limit, context_weight)
        })
    }

    /// BM25 over the rows matching any of `terms`.
    fn fts_ranked(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> R<Vec<ScoredId>> {
        let t = table(target);
        // Column weights: an episode's own words, then the turn before it.
        let weights = match target {
            Target::Episodes => format!("1.0, {:.4}", context_weight.max(0.0)),
            Target::Memories => "1.0, 1.0".to_string(),
        };
        let Some(query) = fts_match(terms) else {
            return Ok(Vec::new());
        };
        // First the best matches by BM25 alone (the FTS index, no join),
        // among at most `FTS_SCAN_CAP` of them, newest first; then the
        // filter on those. A common term matches tens of thousands of rows:
        // ranking them all, and joining each to its table, is what made a
        // recall slow at 100k. When the filter leaves too few (another
        // namespace's rows lead), every match is filtered and ranked instead.
        let w = where_clause(target, "x", f);
        let shortlist = limit.saturating_mul(FTS_SHORTLIST).max(FTS_SHORTLIST_MIN);
        let mut params = vec![
            Value::Text(query.clone()),
            Value::Integer(FTS_SCAN_CAP),
            Value::Integer(shortlist as i64),
        ];
        params.extend(w.params.iter().cloned());
        params.push(Value::Integer(limit as i64));
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.id, f.s FROM (SELECT rowid, s FROM (SELECT rowid, -bm25({t}_fts, {weights}) AS s \
             FROM {t}_fts WHERE {t}_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2) ORDER BY s DESC LIMIT ?3) f \
             JOIN {t} x ON x.rowid = f.rowid WHERE {} ORDER BY f.s DESC, x.id LIMIT ?",
            w.clause
        )))?;
        let hits = scored_ids(&mut stmt, params)?;
        if hits.len() as u32 >= limit || !self.fts_has_more(t, &query, shortlist)? {
            return Ok(hits);
        }
        let mut params = vec![Value::Text(query)];
        params.extend(w.params);
        params.push(Value::Integer(limit as i64));
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.id, -bm25({t}_fts, {weights}) AS s FROM {t}_fts JOIN {t} x ON x.rowid = {t}_fts.rowid \
             WHERE {t}_fts MATCH ? AND {} ORDER BY s DESC, x.id LIMIT ?",
            w.clause
        )))?;
        scored_ids(&mut stmt, params)
    }

    /// Whether `query` matches more than `n` rows of `t`'s index.
    fn fts_has_more(&self, t: &str, query: &str, n: u32) -> R<bool> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM {t}_fts WHERE {t}_fts MATCH ?1 LIMIT ?2)"
        )))?;
        // In i64: a limit near u32::MAX (any caller of the port) must not wrap.
        let n = i64::from(n);
        let found: i64 = sql(stmt.query_row(params![query, n + 1], |r| r.get(0)))?;
        Ok(found > n)
    }

    pub fn vector_search(
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
                // The graph serves it: an exact copy would only hold memory.
                self.release_exact(target, ns);
                hits.extend(found);
                continue;
            }
            if let Some(ns) = ns
                && let Some(near) = self.exact_search(target, ns, v, k)?
            {
                // sqlite-vec's score: `1.0 - distance` in SQL's double.
                let near: Vec<(i64, f32)> = near
                    .into_iter()
                    .map(|(row, d)| (row, (1.0 - f64::from(d)) as f32))
                    .collect();
                hits.extend(self.admitted(target, f, &near)?);
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

    pub fn entity_search(
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
        scored_ids(&mut stmt, params)
    }

    pub fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
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
        let Some((rowid, ns)) = self.vector_row(target, id)? else {
            return Err(mnemo_core::CoreError::NotFound(format!(
                "no row `{id}` in {t}"
            )));
        };
        // Cached statements: `Connection::execute` parses its SQL anew on
        // every call (0.6% of the writer remembering into a filled store,
        // `perf`; the rest of put_vector's parsing was sqlite-vec's own
        // statement recompiled, which `storage::tune` ends).
        sql(self
            .conn
            .prepare_cached(&format!("DELETE FROM vec_{t} WHERE rowid = ?1"))
            .and_then(|mut s| s.execute([rowid])))?;
        sql(self
            .conn
            .prepare_cached(&format!(
                "INSERT INTO vec_{t}(rowid, namespace, embedding) VALUES (?1, ?2, ?3)"
            ))
            .and_then(|mut s| s.execute(params![rowid, ns, rows::vector_blob(v)])))?;
        let seq = self.record_vector_change(target, &ns, rowid)?;
        sql(self
            .conn
            .prepare_cached("DELETE FROM vector_pending WHERE target = ?1 AND row = ?2")
            .and_then(|mut s| s.execute(params![super::filter::table(target), rowid])))?;
        self.ann().put(target, &ns, rowid, v, seq);
        if let Some((_, writes)) = self.partition_rows().get_mut(&(target, ns)) {
            *writes += 1;
        }
        Ok(())
    }

    /// The rowid (the key of its vector) and namespace (its vector
    /// partition) of item `id`.
    fn vector_row(&self, target: Target, id: &str) -> R<Option<(i64, String)>> {
        let t = table(target);
        sql(self
            .conn
            .prepare_cached(&format!("SELECT rowid, namespace FROM {t} WHERE id = ?1"))
            .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional()))
    }

    pub fn delete_vector(&self, target: Target, id: &str) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        if !self.vectors_on() {
            return Ok(());
        }
        let t = table(target);
        let Some((rowid, ns)) = self.vector_row(target, id)? else {
            return Ok(());
        };
        sql(self
            .conn
            .execute(&format!("DELETE FROM vec_{t} WHERE rowid = ?1"), [rowid]))?;
        let seq = self.record_vector_change(target, &ns, rowid)?;
        // An active row without its vector waits for a new one.
        sql(self.conn.execute(
            &format!(
                "INSERT OR IGNORE INTO vector_pending SELECT ?1, rowid FROM {t} \
                 WHERE rowid = ?2 AND valid_until IS NULL"
            ),
            params![super::filter::table(target), rowid],
        ))?;
        self.ann().remove(target, &ns, rowid, seq);
        Ok(())
    }

    pub fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        if !self.vectors_on() {
            return Ok(Vec::new());
        }
        // A partition served by the HNSW index has its vectors in memory:
        // reading one from sqlite-vec walks its chunk's overflow pages,
        // which made scoring a recall's text-only candidates the largest
        // cost at 100k.
        self.ann_sync();
        let t = table(target);
        let mut stmt = sql(self
            .conn
            .prepare_cached(&format!("SELECT embedding FROM vec_{t} WHERE rowid = ?1")))?;
        let mut out = Vec::new();
        for id in ids {
            let Some((rowid, ns)) = self.vector_row(target, id)? else {
                continue;
            };
            let held = self.ann().vector(target, &ns, rowid);
            match held {
                Some(v) => out.push((id.clone(), v)),
                None => {
                    let blob: Option<Vec<u8>> =
                        sql(stmt.query_row([rowid], |r| r.get(0)).optional())?;
                    if let Some(b) = blob {
                        out.push((id.clone(), rows::blob_vector(&b)));
                    }
                }
            }
        }
        Ok(out)
    }

    pub fn vectors_enabled(&self) -> R<bool> {
        Ok(self.vectors_on())
    }

    /// Rows in a vector partition: as last counted plus the vector writes
    /// since (mostly inserts), recounted every `RECOUNT_EVERY` writes.
    pub(super) fn partition_size(&self, target: Target, ns: &str) -> R<usize> {
        let key = (target, ns.to_string());
        if let Some((rows, writes)) = self.partition_rows().get(&key)
            && *writes < RECOUNT_EVERY
        {
            return Ok(rows + writes);
        }
        let t = table(target);
        let rows: i64 = sql(self.conn.query_row(
            &format!("SELECT COUNT(*) FROM {t} WHERE namespace = ?1"),
            [ns],
            |r| r.get(0),
        ))?;
        self.partition_rows().insert(key, (rows as usize, 0));
        Ok(rows as usize)
    }

    /// The terms of the query's passes (`query_passes`): each term's rows
    /// counted up to `FTS_TERM_MAX_DOCS + 1`, the index's rows from FTS5's
    /// own record of them.
    fn query_passes(&self, t: &str, terms: &[String]) -> R<(Vec<String>, Option<Vec<String>>)> {
        if terms.len() < 2 {
            return Ok((terms.to_vec(), None));
        }
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM {t}_fts WHERE {t}_fts MATCH ?1 LIMIT ?2)"
        )))?;
        let mut counted = Vec::with_capacity(terms.len());
        for term in terms {
            let Some(q) = fts_match(std::slice::from_ref(term)) else {
                continue;
            };
            let n: i64 = sql(stmt.query_row(params![q, FTS_TERM_MAX_DOCS + 1], |r| r.get(0)))?;
            counted.push((term.clone(), n));
        }
        if counted.is_empty() {
            return Ok((terms.to_vec(), None));
        }
        let (first, second) = query_passes(counted, self.fts_index_rows(t)?);
        let names = |p: Vec<(String, i64)>| p.into_iter().map(|(t, _)| t).collect::<Vec<_>>();
        Ok((names(first), second.map(names)))
    }

    /// The rows of `t`'s FTS5 index, as its `bm25()` counts them: the first
    /// varint of the index's averages record (`%_data` row 1, fts5_index.c's
    /// `FTS5_AVERAGES_ROWID`), so no scan.
    fn fts_index_rows(&self, t: &str) -> R<i64> {
        let mut stmt = sql(self
            .conn
            .prepare_cached(&format!("SELECT block FROM {t}_fts_data WHERE id = 1")))?;
        let block: Option<Vec<u8>> = sql(stmt.query_row([], |r| r.get(0)).optional())?;
        Ok(block.map_or(0, |b| sqlite_varint(&b) as i64))
    }

    /// Every (rowid, vector) of a partition and the last vector change
    /// included (one snapshot: the caller's transaction): what a graph is
    /// built from.
    pub(super) fn partition_vectors(
        &self,
        target: Target,
        ns: &str,
    ) -> anyhow::Result<super::ann::Snapshot> {
        let seq = self.last_vector_change()?;
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
        Ok((rows.collect::<rusqlite::Result<Vec<_>>>()?, seq))
    }

    /// The candidates (rowid, score) that pass `f`, as ids, in order.
    pub(super) fn admitted(
        &self,
        target: Target,
        f: &SearchFilter,
        candidates: &[(i64, f32)],
    ) -> R<Vec<ScoredId>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let w = where_clause(target, "x", f);
        let mut params: Vec<Value> = candidates
            .iter()
            .map(|(id, _)| Value::Integer(*id))
            .collect();
        params.extend(w.params);
        // NOT INDEXED: the candidates are rowid lookups. Left to itself the
        // planner walks the (namespace, valid_until) index instead, every
        // active row of the namespace (100,000 at 100k) for ~100 candidates.
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT x.rowid, x.id FROM {t} x NOT INDEXED WHERE x.rowid IN ({}) AND {}",
            in_list(candidates.len()),
            w.clause
        )))?;
        let admitted: std::collections::HashMap<i64, String> = sql(stmt
            .query_map(params_from_iter(params), |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect()))?;
        Ok(candidates
            .iter()
            .filter_map(|(rowid, score)| {
                admitted.get(rowid).map(|id| ScoredId {
                    id: id.clone(),
                    score: *score,
                })
            })
            .collect())
    }

    /// Graph candidates for one partition, filtered and mapped to ids; `None`
    /// when the partition must be searched exactly.
    pub(super) fn ann_search(
        &self,
        target: Target,
        ns: &str,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
        k: u32,
    ) -> R<Option<Vec<ScoredId>>> {
        if !self.ann().enabled() {
            return Ok(None);
        }
        self.ann_sync();
        // The graph walks run between two short holds of the shared lock,
        // so readers walk in parallel.
        let probe = self.ann().probe(target, ns, v, k as usize);
        let answer = match probe {
            Some(probe) => {
                let walked = probe.walk(v, k as usize);
                self.ann().admit(target, ns, probe, walked, k as usize)
            }
            None => Answer::Exact,
        };
        let candidates = match answer {
            Answer::Approximate(c) => c,
            Answer::Exact => {
                let rows = self.partition_size(target, ns)?;
                let built = self
                    .ann()
                    .maybe_build(target, ns, rows, || self.partition_vectors(target, ns));
                if let Err(e) = built {
                    tracing::warn!(error = %format!("{e:#}"), "HNSW build not started; searching exactly");
                }
                return Ok(None);
            }
        };
        let hits = self.admitted(target, f, &candidates)?;
        // A selective filter left too few: the exact search finds the rest.
        if (hits.len() as u32) < limit && candidates.len() as u32 >= k {
            return Ok(None);
        }
        let rows = self.partition_size(target, ns)?;
        let rebuilt = self
            .ann()
            .maybe_build(target, ns, rows, || self.partition_vectors(target, ns));
        if let Err(e) = rebuilt {
            tracing::warn!(error = %format!("{e:#}"), "HNSW rebuild not started");
        }
        Ok(Some(hits))
    }
}

/// (id, score) rows of a search statement.
fn scored_ids(stmt: &mut rusqlite::CachedStatement<'_>, params: Vec<Value>) -> R<Vec<ScoredId>> {
    let rows = sql(stmt.query_map(params_from_iter(params), |r| {
        Ok(ScoredId {
            id: r.get(0)?,
            score: r.get::<_, f64>(1)? as f32,
        })
    }))?;
    sql(rows.collect())
}

/// SQLite's variable-length integer (big-endian groups of 7 bits, the high
/// bit set on all but the last; a ninth byte carries 8 bits), as FTS5
/// writes its records.
fn sqlite_varint(b: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(9) {
        if i == 8 {
            return (v << 8) | u64::from(byte);
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return v;
        }
    }
    v
}
