//! Sealed segments' vectors held in the server's memory while no index
//! holds them yet (`segments.rs`), so that the rows a search reads exactly
//! after a bulk import cost a dot product each rather than a row of SQL
//! (0.25–1 µs a row in pgvector: 7.5–31 ms for the 30,000 left by a
//! 50,000-row import).
//!
//! A sealed segment takes no new row once every transaction that could
//! still write into it has ended: those holding the table's write lock
//! when it was sealed, whose virtual transaction ids the seal keeps in
//! `vec_segments.waits` (a write takes the lock before the snapshot that
//! reads the open segment's number, so a write that read the sealed
//! number holds it by then — the wait of `CREATE INDEX CONCURRENTLY`).
//! Rows still leave it (a delete; a rewrite moves the vector into the
//! open segment) but never enter it. So once final, a segment's vectors
//! are read once, in the background ([`PgStore::tail_catch_up`], every
//! server for itself), and a search ranks them here, then reads the best
//! from the table — those still in the segment, through the filter — with
//! pgvector's own distance. A segment is let go once its index serves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mnemo_core::model::Target;
use pgvector::Vector;

use super::segments::{Cover, TABLES, catalog, segments_of, table_index};
use super::{PgStore, unpoisoned};
use crate::storage::ann::dot;
use crate::storage::vectors::VectorState;

/// The most bytes of vectors a server holds; the segments past it are
/// read by SQL as before. A 1,000,000-row import left 99,323 rows in no
/// index (docs/benchmarks.md): 25 MB at 64 dimensions, 610 MB at 1,536.
pub(super) const TAIL_MAX_BYTES: usize = 256 << 20;

/// The held segments of each vector table (in the order of `TABLES`), by
/// number; shared by a server's connections.
#[derive(Clone, Default)]
pub(super) struct Tails(Arc<Mutex<[BySegment; 2]>>);

/// A table's held segments, by number.
type BySegment = HashMap<i32, Arc<Held>>;

/// One sealed segment's vectors, by namespace.
pub(super) struct Held {
    by_ns: HashMap<String, Block>,
    bytes: usize,
}

/// A namespace's rows in a segment and their vectors, scaled to unit
/// length (one block, `dim` each), so cosine is a dot product.
#[derive(Default)]
struct Block {
    rows: Vec<i64>,
    vectors: Vec<f32>,
}

impl Held {
    /// `rows` (row, namespace, vector) of one segment.
    fn new(rows: impl IntoIterator<Item = (i64, String, Vec<f32>)>) -> Self {
        let mut by_ns: HashMap<String, Block> = HashMap::new();
        let mut bytes = 0;
        for (row, ns, mut v) in rows {
            let norm = dot(&v, &v).sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
            bytes += v.len() * 4 + 8;
            let block = by_ns.entry(ns).or_default();
            block.rows.push(row);
            block.vectors.extend(v);
        }
        Self { by_ns, bytes }
    }

    pub(super) fn rows(&self) -> usize {
        self.by_ns.values().map(|b| b.rows.len()).sum()
    }
}

/// Segments of one table a search reads from memory: their numbers, and
/// what is held of them.
#[derive(Default)]
pub(super) struct HeldSegments {
    pub segs: Vec<i32>,
    held: Vec<Arc<Held>>,
}

impl HeldSegments {
    pub(super) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// The `k` rows of namespace `ns` (of every namespace: `None`) nearest
    /// to `q` by cosine, nearest first.
    pub(super) fn nearest(&self, ns: Option<&str>, q: &[f32], k: usize) -> Vec<i64> {
        let norm = dot(q, q).sqrt();
        let q: Vec<f32> = q
            .iter()
            .map(|x| if norm > 0.0 { x / norm } else { *x })
            .collect();
        let dim = q.len().max(1);
        let mut scored: Vec<(f32, i64)> = Vec::new();
        for held in &self.held {
            let blocks: Vec<&Block> = match ns {
                Some(ns) => held.by_ns.get(ns).into_iter().collect(),
                None => held.by_ns.values().collect(),
            };
            for b in blocks {
                for (row, v) in b.rows.iter().zip(b.vectors.chunks_exact(dim)) {
                    scored.push((1.0 - dot(&q, v), *row));
                }
            }
        }
        let by = |a: &(f32, i64), b: &(f32, i64)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if scored.len() > k && k > 0 {
            scored.select_nth_unstable_by(k - 1, by);
            scored.truncate(k);
        } else if k == 0 {
            scored.clear();
        }
        scored.sort_by(by);
        scored.into_iter().map(|(_, row)| row).collect()
    }
}

impl Tails {
    /// The held segments of `target` that `cover` leaves out: what a search
    /// reads from memory instead of the table.
    pub(super) fn outside(&self, target: Target, cover: &Cover) -> HeldSegments {
        let tails = unpoisoned(self.0.lock());
        let mut out = HeldSegments::default();
        let mut held: Vec<(&i32, &Arc<Held>)> = tails[table_index(target)]
            .iter()
            .filter(|(s, _)| !cover.holds(**s))
            .collect();
        held.sort_by_key(|(s, _)| **s);
        for (s, h) in held {
            out.segs.push(*s);
            out.held.push(Arc::clone(h));
        }
        out
    }

    /// (segments, rows) held.
    pub(super) fn status(&self) -> (usize, usize) {
        let tails = unpoisoned(self.0.lock());
        let segs = tails.iter().map(HashMap::len).sum();
        let rows = tails
            .iter()
            .flat_map(|t| t.values())
            .map(|h| h.rows())
            .sum();
        (segs, rows)
    }

    pub(super) fn clear(&self) {
        *unpoisoned(self.0.lock()) = Default::default();
    }

    fn bytes(&self) -> usize {
        let tails = unpoisoned(self.0.lock());
        tails.iter().flat_map(|t| t.values()).map(|h| h.bytes).sum()
    }
}

impl PgStore {
    /// (segments, rows) held.
    pub fn tail_status(&self) -> (usize, usize) {
        self.tails.status()
    }

    /// Holds each sealed segment no index serves yet once nothing more can
    /// be written into it, within `TAIL_MAX_BYTES`, and lets go of those
    /// whose index serves (the background worker, on every server).
    pub fn tail_catch_up(&self) -> anyhow::Result<()> {
        let VectorState::Enabled { dimension: dim, .. } = self.vector_state() else {
            return Ok(());
        };
        for (i, t) in TABLES.iter().enumerate() {
            let cover = catalog(&mut **self.db(), t)?.cover;
            let (_, sealed) = segments_of(&mut **self.db(), t)?;
            let unbuilt: Vec<(i32, i64)> = sealed
                .into_iter()
                .filter(|(s, _)| !cover.holds(*s))
                .collect();
            let missing: Vec<i32> = {
                let mut tails = unpoisoned(self.tails.0.lock());
                tails[i].retain(|s, _| unbuilt.iter().any(|(u, _)| u == s));
                unbuilt
                    .iter()
                    .map(|(s, _)| *s)
                    .filter(|s| !tails[i].contains_key(s))
                    .collect()
            };
            if missing.is_empty() {
                continue;
            }
            let finals: Vec<i32> = self
                .db()
                .query(
                    "SELECT s.seg FROM vec_segments s WHERE s.target = $1 AND s.seg = ANY($2) \
                     AND s.rows IS NOT NULL AND s.waits IS NOT NULL \
                     AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'virtualxid' \
                       AND l.virtualxid = ANY(s.waits)) ORDER BY s.seg",
                    &[t, &missing],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            for seg in finals {
                let counted = unbuilt.iter().find(|(s, _)| *s == seg).map_or(0, |r| r.1);
                let estimate = counted.max(0) as usize * (dim as usize * 4 + 8);
                if self.tails.bytes() + estimate > TAIL_MAX_BYTES {
                    break;
                }
                let rows = self.db().query(
                    &format!("SELECT row, namespace, embedding FROM vec_{t} WHERE seg = $1"),
                    &[&seg],
                )?;
                let held = Held::new(
                    rows.iter()
                        .map(|r| (r.get(0), r.get(1), r.get::<_, Vector>(2).to_vec())),
                );
                tracing::info!(
                    table = t,
                    seg,
                    rows = held.rows(),
                    "a sealed segment is held in memory until its index serves"
                );
                unpoisoned(self.tails.0.lock())[i].insert(seg, Arc::new(held));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_rows_of_a_namespace_come_first() {
        let held = Held::new(vec![
            (1, "a".to_string(), vec![1.0, 0.0]),
            (2, "a".to_string(), vec![0.0, 3.0]),
            (3, "b".to_string(), vec![2.0, 0.1]),
            (4, "a".to_string(), vec![0.7, 0.7]),
        ]);
        assert_eq!(held.rows(), 4);
        let segs = HeldSegments {
            segs: vec![2],
            held: vec![Arc::new(held)],
        };
        assert_eq!(segs.nearest(Some("a"), &[5.0, 0.0], 2), vec![1, 4]);
        assert_eq!(segs.nearest(Some("a"), &[0.0, 1.0], 10), vec![2, 4, 1]);
        assert_eq!(segs.nearest(None, &[1.0, 0.0], 2), vec![1, 3]);
        assert!(segs.nearest(Some("c"), &[1.0, 0.0], 2).is_empty());
        assert!(segs.nearest(Some("a"), &[1.0, 0.0], 0).is_empty());
    }
}
