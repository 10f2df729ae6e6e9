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
/// ANN_EF_MIN)`. Recall asks 120 of a partition (a fan-out of 40 ×
/// `VEC_OVERFETCH` 3), of each of its segments its share
/// (`walk_shares`); dedup asks 15 and walks 32. `walk.rs`'s test finds
/// every near-duplicate (cosine ~0.88) of 200 at this width, and 180 at a
/// width of 1. At 100,000 memories the writer remembering into the full
/// store went from 245 to 464/s (`bench serve --memories 100000`,
/// docs/benchmarks.md).
pub const ANN_EF_MIN: usize = 32;
/// Candidates kept while linking a new point (instant-distance's
/// `ef_construction`).
pub const ANN_EF_CONSTRUCTION: usize = 64;
/// A search over several segments walks each for this many times its
/// share of the `k` asked (its points over the partition's), and walks a
/// segment again for all `k` when every candidate it gave is among the
/// `k` best of all (`walk_shares`). Four segments of 250,000 walk 60 each
/// instead of 120; one segment walks `k` as before.
pub const ANN_SHARE_SLACK: usize = 2;

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

/// The nearest points to `v` in `segments`, for a search of `k` over
/// `total` points (these segments' and any searched beside them, whose
/// cosines are `beside`): each segment walked for `ANN_SHARE_SLACK` ×
/// its share of `k`, then again for `k` if all it gave are among the `k`
/// best found. A segment whose walk ends below the `k`-th best holds no
/// further point that could join them (as far as the walk is exact).
pub fn walk_shares(
    segments: &[Arc<Segment>],
    v: &[f32],
    k: usize,
    total: usize,
    beside: &[f32],
) -> Vec<(Entry, f32)> {
    let mut walks: Vec<(usize, Vec<(Entry, f32)>)> = segments
        .iter()
        .map(|s| {
            let share = (k * ANN_SHARE_SLACK * s.points_len()).div_ceil(total.max(1));
            let asked = share.clamp(ANN_EF_MIN, k.max(ANN_EF_MIN));
            (asked, s.search(v, asked))
        })
        .collect();
    let mut cosines: Vec<f32> = walks
        .iter()
        .flat_map(|(_, found)| found.iter().map(|(_, c)| *c))
        .chain(beside.iter().copied())
        .collect();
    let bar = if cosines.len() < k || k == 0 {
        f32::NEG_INFINITY
    } else {
        *cosines
            .select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a))
            .1
    };
    for ((asked, found), segment) in walks.iter_mut().zip(segments) {
        let filled = found.len() == *asked && found.last().is_some_and(|(_, c)| *c >= bar);
        if *asked < k && filled {
            *found = segment.search(v, k);
        }
    }
    walks.into_iter().flat_map(|(_, found)| found).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::ann::tests::unit;

    const DIM: usize = 32;
    /// Points per segment (4 segments).
    const PER: i64 = 500;
    const K: usize = 120;
    /// The rows a recall keeps of the `K` it asks (`limit` 40).
    const KEPT: usize = 40;

    fn normalized(v: Vec<f32>) -> Arc<[f32]> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// `d` moved by noise of weight `w` (seeded by `seed`).
    fn near(d: &[f32], seed: u64, w: f32) -> Arc<[f32]> {
        let noise = unit(seed, DIM);
        normalized(d.iter().zip(&noise).map(|(a, b)| a + w * b).collect())
    }

    /// Every point of the segments: (row, vector).
    type Rows = Vec<(i64, Arc<[f32]>)>;

    /// Four segments of `per` points; the last one's all near `d` if given.
    fn segments(d: Option<&[f32]>, per: i64) -> (Vec<Arc<Segment>>, Rows) {
        let mut all = Vec::new();
        let segments = (0..4i64)
            .map(|s| {
                let points: Vec<(Entry, Arc<[f32]>)> = (0..per)
                    .map(|i| {
                        let row = s * per + i;
                        let v = match d {
                            Some(d) if s == 3 => near(d, row as u64, 0.35),
                            _ => Arc::from(unit(row as u64 + 1, DIM)),
                        };
                        all.push((row, v.clone()));
                        (Entry { row, seq: 1 }, v)
                    })
                    .collect();
                Arc::new(Segment::build(&points).unwrap())
            })
            .collect();
        (segments, all)
    }

    /// The rows of brute force's top `KEPT` among the best `K` of `found`,
    /// and how many candidates the walks gave.
    fn kept(found: Vec<(Entry, f32)>, exact: &[(i64, f32)]) -> (usize, usize) {
        let given = found.len();
        let mut found: Vec<(i64, f32)> = found.into_iter().map(|(e, c)| (e.row, c)).collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1));
        found.truncate(K);
        let hits = exact[..KEPT]
            .iter()
            .filter(|(r, _)| found.iter().any(|(f, _)| f == r))
            .count();
        (hits, given)
    }

    /// Over 30 queries: brute force's top 40 found by walks of every
    /// segment for all of `K`, and by `walk_shares`; the candidates each gave.
    fn compare(d: Option<&[f32]>, per: i64) -> ((usize, usize), (usize, usize)) {
        let (segments, all) = segments(d, per);
        let (mut full, mut shares) = ((0, 0), (0, 0));
        for q in 0..30u64 {
            let v = match d {
                Some(d) => near(d, 50_000 + q, 0.35),
                None => Arc::from(unit(50_000 + q, DIM)),
            };
            let mut exact: Vec<(i64, f32)> = all.iter().map(|(r, w)| (*r, dot(&v, w))).collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1));
            let each: Vec<_> = segments.iter().flat_map(|s| s.search(&v, K)).collect();
            let (h, g) = kept(each, &exact);
            full = (full.0 + h, full.1 + g);
            let (h, g) = kept(walk_shares(&segments, &v, K, all.len(), &[]), &exact);
            shares = (shares.0 + h, shares.1 + g);
        }
        (full, shares)
    }

    #[test]
    fn segments_walked_for_their_share_find_what_full_walks_find() {
        // Spread evenly: each walks 60, none again; the same rows kept.
        let (full, shares) = compare(None, PER);
        assert_eq!(full.1, 30 * 4 * K);
        assert_eq!(shares.1, 30 * 4 * K / 2, "no segment walked again");
        assert!(shares.0 + 3 >= full.0, "{shares:?} against {full:?}");
        assert!(shares.0 >= 30 * KEPT * 97 / 100, "{shares:?}");
        // Every near point in the last segment: it fills its 60 with rows
        // of the best 120, and is walked again for all 120.
        let d = unit(999, DIM);
        let (full, shares) = compare(Some(&d), PER);
        assert_eq!(
            shares.1,
            30 * (3 * K / 2 + K),
            "the last segment walked again"
        );
        assert!(shares.0 >= full.0, "{shares:?} against {full:?}");
        assert_eq!(full.0, 30 * KEPT);
    }

    #[test]
    fn one_segment_walks_as_before() {
        let (segments, _) = segments(None, PER);
        let v = unit(7, DIM);
        let found = walk_shares(&segments[..1], &v, K, PER as usize, &[]);
        assert_eq!(found, segments[0].search(&v, K));
    }

    /// The long form: four segments of 50,000 random points, where a walk
    /// is approximate (`cargo test --release -p mnemo-host --lib --
    /// --ignored segment::tests --nocapture`).
    #[test]
    #[ignore = "builds 200,000 points: minutes"]
    fn at_fifty_thousand_a_segment() {
        let (full, shares) = compare(None, 50_000);
        println!(
            "brute force's top {KEPT} of 30 queries found: every segment walked for {K} {} \
             ({} candidates), for its share {} ({})",
            full.0, full.1, shares.0, shares.1
        );
        assert!(shares.0 + 30 >= full.0, "{shares:?} against {full:?}");
    }
}
