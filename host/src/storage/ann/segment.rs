//! One immutable HNSW graph (instant-distance) over some of a partition's
//! vectors: the unit of the segmented index in `mod.rs`.
//!
//! Each point carries the `vector_changes.seq` of the version it holds, so
//! a later change of its row makes it stale, whatever the order in which
//! changes reach the index (the writer's own writes, or a replay of the
//! log after a restart or another process's writes).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use instant_distance::{Builder, HnswMap, Search};
use serde::{Deserialize, Serialize};

/// Candidates the graph walk keeps (instant-distance's `ef_search`, fixed
/// in a graph when it is built: graphs saved before keep theirs until a
/// merge rebuilds them). At least recall's vector candidates (a fan-out of
/// 40 × `VEC_OVERFETCH` 3 = 120). Measured against 256 on one day
/// (docs/benchmarks.md): the top-10 hits shared with exact search 0.994
/// both (`mnemo-lab bench --memories 100000 --queries 200`), while
/// `bench serve` at 100,000 rose from 268–282 to 332–408 recalls/s (p50
/// 13.9–14.5 to 9.4–11.6 ms) and remembering into the full store from
/// 176–197 to 244–279/s.
pub const ANN_EF_SEARCH: usize = 128;
/// Candidates kept while linking a new point (instant-distance's
/// `ef_construction`).
pub const ANN_EF_CONSTRUCTION: usize = 64;

/// A unit vector; distance is `1 − cosine`. Shared (`Arc`) between the
/// graph and the by-row lookup, so serving a candidate's vector from memory
/// costs no second copy.
#[derive(Clone)]
pub struct Unit(pub Arc<[f32]>);

impl Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Unit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<f32>::deserialize(d).map(|v| Unit(v.into()))
    }
}

impl instant_distance::Point for Unit {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

/// Dot product with eight independent accumulators, so the compiler can
/// vectorise it (a single running sum cannot be reordered).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// A point's row and the change number of the version it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub row: i64,
    pub seq: i64,
}

pub type Graph = HnswMap<Unit, Entry>;

/// A segment's name: see `Segment::id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentId {
    pub first: i64,
    pub last: i64,
    pub row: i64,
}

/// A built graph and each point's vector and version by row.
pub struct Segment {
    pub graph: Graph,
    by_row: HashMap<i64, (Arc<[f32]>, i64)>,
    pub build_ms: u128,
}

impl Segment {
    /// Builds a graph over `points` (one per row).
    pub fn build(points: Vec<(Entry, Arc<[f32]>)>) -> Self {
        let started = Instant::now();
        let (entries, vectors): (Vec<Entry>, Vec<Unit>) =
            points.into_iter().map(|(e, v)| (e, Unit(v))).unzip();
        let graph = Builder::default()
            .ef_search(ANN_EF_SEARCH)
            .ef_construction(ANN_EF_CONSTRUCTION)
            .seed(42)
            .build(vectors, entries);
        Self::from_graph(graph, started.elapsed().as_millis())
    }

    /// A graph read back from disk.
    pub fn from_graph(graph: Graph, build_ms: u128) -> Self {
        let by_row = graph
            .iter()
            .filter_map(|(pid, p)| {
                let e = graph.values.get(pid.into_inner() as usize)?;
                Some((e.row, (p.0.clone(), e.seq)))
            })
            .collect();
        Self {
            graph,
            by_row,
            build_ms,
        }
    }

    pub fn points_len(&self) -> usize {
        self.by_row.len()
    }

    /// The version (change number) of `row`'s point, if it has one.
    pub fn seq_of(&self, row: i64) -> Option<i64> {
        self.by_row.get(&row).map(|(_, s)| *s)
    }

    pub fn vector(&self, row: i64) -> Option<&Arc<[f32]>> {
        self.by_row.get(&row).map(|(v, _)| v)
    }

    /// Every point: (entry, vector).
    pub fn points(&self) -> impl Iterator<Item = (Entry, &Arc<[f32]>)> {
        self.by_row.iter().map(|(row, (v, seq))| {
            (
                Entry {
                    row: *row,
                    seq: *seq,
                },
                v,
            )
        })
    }

    /// The smallest and largest change number of its points.
    pub fn seq_range(&self) -> (i64, i64) {
        let seqs = self.by_row.values().map(|(_, s)| *s);
        (seqs.clone().min().unwrap_or(0), seqs.max().unwrap_or(0))
    }

    /// What names the segment (its file): its change numbers' range and its
    /// smallest row. The row tells apart the chunks of a first build, whose
    /// points all carry the snapshot's change number.
    pub fn id(&self) -> SegmentId {
        let (first, last) = self.seq_range();
        SegmentId {
            first,
            last,
            row: self.by_row.keys().copied().min().unwrap_or(0),
        }
    }

    /// The nearest points to `v` the graph walk finds (up to
    /// `ANN_EF_SEARCH`), best first: (entry, cosine).
    pub fn search(&self, v: &[f32]) -> Vec<(Entry, f32)> {
        let mut search = Search::default();
        let query = Unit(v.into());
        self.graph
            .search(&query, &mut search)
            .map(|item| (*item.value, 1.0 - item.distance))
            .collect()
    }
}
