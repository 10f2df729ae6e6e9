//! One immutable HNSW graph (built by instant-distance, walked by `walk.rs`)
//! over some of a partition's vectors: the unit of the segmented index in `mod.rs`.
//!
//! Each point carries the `vector_changes.seq` of the version it holds, so
//! a later change of its row makes it stale, whatever the order in which
//! changes reach the index (the writer's own writes, or a replay of the
//! log after a restart or another process's writes).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use instant_distance::Builder;

pub use super::walk::{Entry, Graph, Unit, dot};

/// The width instant-distance records in a graph it builds (its
/// `ef_search`, kept in the file); our walk (`walk.rs`) sets its own per
/// search. 128 was measured against 256 on one day (docs/benchmarks.md):
/// the top-10 hits shared with exact search 0.994 both (`mnemo-lab bench
/// --memories 100000 --queries 200`).
pub const ANN_EF_SEARCH: usize = 128;
/// The fewest candidates a walk keeps: a search for `k` keeps `max(k,
/// ANN_EF_MIN)`. Recall asks 120 (a fan-out of 40 × `VEC_OVERFETCH` 3),
/// as wide as every graph walked before; dedup asks 15 and walks 32, a
/// quarter of that. `walk.rs`'s test finds every near-duplicate (cosine
/// ~0.88) of 200 at this width, and 180 at 1. At 100,000 memories the
/// writer remembering into the full store went from 245 to 464/s
/// (`bench serve --memories 100000`, docs/benchmarks.md).
pub const ANN_EF_MIN: usize = 32;
/// Candidates kept while linking a new point (instant-distance's
/// `ef_construction`).
pub const ANN_EF_CONSTRUCTION: usize = 64;

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
    /// Each row's point and the change number of its version.
    by_row: HashMap<i64, (u32, i64)>,
    pub build_ms: u128,
}

impl Segment {
    /// Builds a graph over `points` (one per row).
    pub fn build(points: &[(Entry, Arc<[f32]>)]) -> anyhow::Result<Self> {
        let started = Instant::now();
        let (entries, vectors): (Vec<Entry>, Vec<Unit>) =
            points.iter().map(|(e, v)| (*e, Unit(v.clone()))).unzip();
        let built = Builder::default()
            .ef_search(ANN_EF_SEARCH)
            .ef_construction(ANN_EF_CONSTRUCTION)
            .seed(42)
            .build(vectors, entries);
        // Encoding a graph in memory and reading it back in the same shape
        // fails only if instant-distance's fields change (`walk.rs`'s
        // tests build and search through it).
        let graph = Graph::from_built(&built)?;
        drop(built);
        Ok(Self::from_graph(graph, started.elapsed().as_millis()))
    }

    /// A graph read back from disk.
    pub fn from_graph(graph: Graph, build_ms: u128) -> Self {
        let by_row = graph
            .values
            .iter()
            .enumerate()
            .map(|(pid, e)| (e.row, (pid as u32, e.seq)))
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

    pub fn vector(&self, row: i64) -> Option<&[f32]> {
        self.by_row
            .get(&row)
            .map(|(pid, _)| self.graph.vector(*pid))
    }

    /// Every point: (entry, vector).
    pub fn points(&self) -> impl Iterator<Item = (Entry, &[f32])> {
        self.by_row.iter().map(|(row, (pid, seq))| {
            (
                Entry {
                    row: *row,
                    seq: *seq,
                },
                self.graph.vector(*pid),
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

    /// The nearest points to `v` a walk keeping `max(k, ANN_EF_MIN)`
    /// finds, best first: (entry, cosine).
    pub fn search(&self, v: &[f32], k: usize) -> Vec<(Entry, f32)> {
        self.graph
            .search(v, k.max(ANN_EF_MIN))
            .into_iter()
            .map(|(pid, distance)| (self.graph.values[pid as usize], 1.0 - distance))
            .collect()
    }
}
