//! The vector channel over Postgres: cosine KNN through pgvector, each
//! namespace searched exactly while it is small, and through the HNSW
//! segments' indexes (`segments.rs`) once it is listed (`graph.rs`), with
//! its rows no index holds yet searched exactly beside them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mnemo_core::model::*;
use pgvector::Vector;

use super::search::scored;
use super::segments::Cover;
use super::sql::{self, Args, table};
use super::tail::HeldSegments;
use super::{PgStore, R, pg, unpoisoned};
use crate::storage::sqlite::{ANN_MIN_ROWS, RECOUNT_EVERY, VEC_OVERFETCH};

/// A namespace with fewer vectors than this is searched exactly, over its
/// own rows, and kept out of the HNSW graph; one that reaches it is moved
/// in (`graph.rs`). Measured on a 100,000-memory store of 16 namespaces (64-d,
/// `EXPLAIN ANALYZE`, warm): a namespace of 6,309 vectors takes 13.8 ms
/// exactly and 44–52 ms through the shared HNSW index filtered to it; at
/// ~2 µs a row, exact reaches the index's cost near 20,000 rows, the
/// SQLite store's `ANN_MIN_ROWS`.
pub(super) const EXACT_MAX_ROWS: i64 = ANN_MIN_ROWS as i64;

/// Vectors per (table, namespace) outside every index, each with the
/// cover it was counted under and the searches since; shared by a
/// server's connections.
#[derive(Clone, Default)]
pub(super) struct Sizes(Arc<Mutex<HashMap<(Target, String), Counted>>>);

/// A namespace's vectors outside `Cover`, and the searches since they were
/// counted.
type Counted = (i64, Cover, usize);

impl Sizes {
    /// The count, unless it is due to be counted again: after
    /// `RECOUNT_EVERY` searches (the SQLite store counts its own writes
    /// instead; on a shared Postgres the other servers write too), or once
    /// the cover has changed. A count from before an index was built
    /// names rows that index now holds, and so would widen every search
    /// that finds fewer than asked over the rows outside it.
    fn get(&self, key: &(Target, String), cover: &Cover) -> Option<i64> {
        let mut sizes = unpoisoned(self.0.lock());
        let (n, counted, used) = sizes.get_mut(key)?;
        *used += 1;
        (*used < RECOUNT_EVERY && counted == cover).then_some(*n)
    }

    fn set(&self, key: (Target, String), cover: &Cover, n: i64) {
        unpoisoned(self.0.lock()).insert(key, (n, cover.clone(), 0));
    }
}

impl PgStore {
    /// Cosine KNN. Per namespace of the filter (one search each, the hits
    /// merged, as the SQLite store searches its partitions): exactly, the
    /// rows no HNSW index holds — every row of a namespace under
    /// `EXACT_MAX_ROWS` vectors, from their covering index, and a listed
    /// namespace's rows of segments not indexed yet — and, for a namespace
    /// listed in the graph (`graph.rs`), its rows in the indexed segments
    /// through their indexes. An empty filter searches every namespace
    /// alike.
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
        // One cover for both sides: what the exact search leaves out, the
        // walks read; and of the rows left out, the sealed segments this
        // server holds in memory (`tail.rs`), ranked here.
        let cover = self.cover(target)?;
        let held = self.tails.outside(target, &cover);
        let mut hits = Vec::new();
        let mut searches = 0;
        if f.namespaces.is_empty() {
            let (found, _) =
                self.vector_search_exact(target, v, f, (&cover, &held), (None, i64::MAX), limit)?;
            hits.extend(found);
            hits.extend(self.vector_search_indexed(target, v, f, &cover, None, limit)?);
            searches = 2;
        }
        for ns in &f.namespaces {
            // Even at a count of 0: the count may be older than the rows.
            let rows = self.vectors_in(target, ns, &cover)?;
            let (found, listed) =
                self.vector_search_exact(target, v, f, (&cover, &held), (Some(ns), rows), limit)?;
            hits.extend(found);
            searches += 1;
            if listed {
                hits.extend(self.vector_search_indexed(target, v, f, &cover, Some(ns), limit)?);
                searches += 1;
            }
        }
        if searches > 1 {
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
            // The exact search and the walks read disjoint segments of one
            // cover, so the dedup below is only a guard; a vector rewritten
            // between their statements (an edit at that instant) may be
            // found by neither.
            let mut seen = std::collections::HashSet::new();
            hits.retain(|h| seen.insert(h.id.clone()));
            hits.truncate(limit as usize);
        }
        Ok(hits)
    }

    /// Through each HNSW index of the cover (`segments.rs`), which orders
    /// by distance, in one statement; iterative scans (set per connection)
    /// keep reading an index until the filter leaves `limit` rows. The
    /// segment range is written out so the planner matches each index's
    /// predicate.
    fn vector_search_indexed(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        cover: &Cover,
        ns: Option<&String>,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        if cover.0.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let mut args = Args::default();
        let q = args.add(Vector::from(v.to_vec()));
        let ns = match ns {
            Some(ns) => format!("v.namespace = {} AND ", args.add(ns.clone())),
            None => String::new(),
        };
        let filter = sql::where_clause(target, "x", f, ListState::Active, &mut args);
        let limit = args.add(i64::from(limit));
        let walks = cover
            .0
            .iter()
            .map(|(lo, hi)| {
                format!(
                    "(SELECT x.id, 1 - (v.embedding <=> {q}) AS s FROM vec_{t} v JOIN {t} x ON x.seq = v.row \
                     WHERE v.seg BETWEEN {lo} AND {hi} AND {ns}{filter} ORDER BY v.embedding <=> {q}, x.id LIMIT {limit})"
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        // Up to `limit` hits a walk: the caller merges them with the exact
        // search's (`vector_search`).
        let rows = pg(self.db().query(&walks, &args.refs()))?;
        Ok(scored(&rows))
    }

    /// Exactly, over the `rows` vectors of namespace `ns` (of every
    /// namespace: `None`) no index of `cover` holds (those outside every
    /// segment from their covering index, the others by segment number,
    /// but for the `held` segments, ranked in memory: `tail.rs`): the
    /// nearest `limit × VEC_OVERFETCH` first, then the filter on those; if
    /// that leaves too few and there are more, every such row through the
    /// filter, all read from the table. The CTE is materialised so the
    /// planner cannot walk the HNSW graph instead. Also says whether `ns`
    /// is listed in the graph (`graph.rs`), asked in the same statement
    /// until it is known to be.
    fn vector_search_exact(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        (cover, held): (&Cover, &HeldSegments),
        (ns, rows): (Option<&String>, i64),
        limit: u32,
    ) -> R<(Vec<ScoredId>, bool)> {
        let t = table(target);
        let nearest = limit.saturating_mul(VEC_OVERFETCH);
        let known = match ns {
            Some(ns) => self.known_in_graph(target, ns),
            None => false,
        };
        let mut cut = Some(nearest);
        loop {
            // The held segments only with the cut: the widened search reads
            // every row from the table.
            let in_memory = cut.is_some() && !held.is_empty();
            let mut args = Args::default();
            let q = args.add(Vector::from(v.to_vec()));
            let outside = if in_memory {
                cover.outside_except("v", &held.segs)
            } else {
                cover.outside("v")
            };
            let (only, listed) = match ns {
                Some(ns) => {
                    let n = args.add(ns.clone());
                    let listed = if known {
                        "true".to_string()
                    } else {
                        let t = args.add(t.to_string());
                        format!(
                            "EXISTS (SELECT 1 FROM vec_graph WHERE target = {t} AND namespace = {n})"
                        )
                    };
                    (format!(" AND v.namespace = {n}"), listed)
                }
                None => (String::new(), "false".to_string()),
            };
            let filter = sql::where_clause(target, "x", f, ListState::Active, &mut args);
            let order = match cut {
                Some(k) => format!("ORDER BY d LIMIT {}", args.add(i64::from(k))),
                None => String::new(),
            };
            let k = args.add(i64::from(limit));
            // One row at least (the listing), with no hit when none is found.
            let found = pg(self.db().query(
                &format!(
                    "WITH c AS MATERIALIZED (SELECT v.row, v.embedding <=> {q} AS d FROM vec_{t} v WHERE v.seg IS NULL{only} \
                       UNION ALL SELECT v.row, v.embedding <=> {q} FROM vec_{t} v WHERE {outside}{only}), \
                     near AS (SELECT row, d FROM c {order}), \
                     hits AS (SELECT x.id, 1 - near.d AS s, near.d FROM near JOIN {t} x ON x.seq = near.row \
                       WHERE {filter} ORDER BY near.d, x.id LIMIT {k}) \
                     SELECT h.id, h.s, {listed} FROM (SELECT 1) one LEFT JOIN hits h ON true ORDER BY h.d, h.id"
                ),
                &args.refs(),
            ))?;
            let listed = known || found.first().is_some_and(|r| r.get::<_, bool>(2));
            if listed && let Some(ns) = ns {
                self.note_in_graph(target, ns);
            }
            let mut hits: Vec<ScoredId> = found
                .iter()
                .filter_map(|r| {
                    Some(ScoredId {
                        id: r.get::<_, Option<String>>(0)?,
                        score: r.get::<_, f64>(1) as f32,
                    })
                })
                .collect();
            if in_memory {
                hits.extend(self.held_search(target, v, f, held, ns, nearest, limit)?);
                hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
                hits.truncate(limit as usize);
            }
            if cut.is_none() || hits.len() as u32 >= limit || rows <= i64::from(nearest) {
                return Ok((hits, listed));
            }
            cut = None;
        }
    }

    /// The `nearest` rows of `ns` in the `held` segments ranked in memory,
    /// then read from the table: those still in their segment (a row that
    /// left it is in the open one, read by SQL), through the filter, the
    /// best `limit` by pgvector's distance.
    #[allow(clippy::too_many_arguments)]
    fn held_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        held: &HeldSegments,
        ns: Option<&String>,
        nearest: u32,
        limit: u32,
    ) -> R<Vec<ScoredId>> {
        let candidates = held.nearest(ns.map(String::as_str), v, nearest as usize);
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let mut args = Args::default();
        let q = args.add(Vector::from(v.to_vec()));
        let rows = args.add(candidates);
        let segs = args.add(held.segs.clone());
        let filter = sql::where_clause(target, "x", f, ListState::Active, &mut args);
        let k = args.add(i64::from(limit));
        let found = pg(self.db().query(
            &format!(
                "SELECT x.id, 1 - (v.embedding <=> {q}) AS s FROM vec_{t} v JOIN {t} x ON x.seq = v.row \
                 WHERE v.row = ANY({rows}) AND v.seg = ANY({segs}) AND {filter} \
                 ORDER BY v.embedding <=> {q}, x.id LIMIT {k}"
            ),
            &args.refs(),
        ))?;
        Ok(scored(&found))
    }

    /// The vectors of namespace `ns` in `target` outside the graph, counted again after
    /// `RECOUNT_EVERY` searches (the SQLite store's partition counts).
    fn vectors_in(&self, target: Target, ns: &str, cover: &Cover) -> R<i64> {
        let key = (target, ns.to_string());
        if let Some(n) = self.sizes.get(&key, cover) {
            return Ok(n);
        }
        let t = table(target);
        let outside = cover.outside("v");
        let n: i64 = pg(self.db().query_one(
            &format!(
                "SELECT COUNT(*) FROM vec_{t} v WHERE v.namespace = $1 AND (v.seg IS NULL OR {outside})"
            ),
            &[&ns],
        ))?
        .get(0);
        self.sizes.set(key, cover, n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_serves_only_the_cover_it_was_counted_under() {
        let sizes = Sizes::default();
        let key = (Target::Memories, "default".to_string());
        let before = Cover(vec![(1, 1)]);
        let after = Cover(vec![(1, 3)]);
        assert_eq!(sizes.get(&key, &before), None);
        sizes.set(key.clone(), &before, 30_000);
        assert_eq!(sizes.get(&key, &before), Some(30_000));
        // An index built since holds rows the count names.
        assert_eq!(sizes.get(&key, &after), None);
        sizes.set(key.clone(), &after, 12);
        assert_eq!(sizes.get(&key, &after), Some(12));
        for _ in 0..RECOUNT_EVERY {
            sizes.get(&key, &after);
        }
        assert_eq!(sizes.get(&key, &after), None);
    }
}
