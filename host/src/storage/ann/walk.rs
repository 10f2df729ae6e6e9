//! A segment's HNSW graph as this crate walks it: instant-distance builds
//! the graph; the walk is ours, for two things its search cannot do.
//!
//! - **A width per search.** instant-distance fixes `ef_search` when a
//!   graph is built, so dedup's search for a handful of near-duplicates
//!   walked as wide as recall's for 120 candidates (the HNSW walk was 52%
//!   of the writer remembering into a filled 100,000-row store). Here each
//!   walk keeps `max(k, ANN_EF_MIN)` candidates.
//! - **Vectors in one block, fetched ahead.** Each point's vector was its
//!   own allocation behind a pointer, and a walk is bound by waiting for
//!   vectors to arrive from memory (86% of `dot`'s samples on its first
//!   multiply at 1M). Here the vectors sit in one array by point, and a
//!   candidate's unvisited neighbours are prefetched together before any
//!   of them is measured, so their misses overlap.
//!
//! The walk is instant-distance's (the HNSW paper's algorithm 2): greedy
//! from point 0 down the upper layers, then a beam of `ef` on layer 0. The
//! serialised form is instant-distance's `HnswMap` field for field, so
//! saved graphs load either way and the file format is unchanged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_big_array::BigArray;

/// A unit vector as instant-distance builds a graph of it; distance is
/// `1 − cosine`. Once built, the graph's vectors move into `Graph`'s one
/// block (`Graph::from_built`).
#[derive(Clone)]
pub struct Unit(pub Arc<[f32]>);

impl Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(s)
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

/// Links per point on layer 0 and on the layers above (instant-distance's
/// `M * 2` and `M`).
const ZERO_LINKS: usize = 64;
const UPPER_LINKS: usize = 32;
/// No link (instant-distance's `INVALID`): a node's links end at the first.
const NONE: u32 = u32::MAX;
/// Bytes of a vector prefetched ahead of its distance: four cache lines,
/// a whole 64-d vector; the hardware's streamer follows a longer one.
const PREFETCH_BYTES: usize = 256;

/// A built graph: the points' vectors in one block, each layer's links,
/// and each point's entry.
pub struct Graph {
    dim: usize,
    vectors: Vec<f32>,
    zero: Vec<ZeroNode>,
    layers: Vec<Vec<UpperNode>>,
    pub values: Vec<Entry>,
    /// The width instant-distance was built with; kept for the file.
    ef_search: usize,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct ZeroNode(#[serde(with = "BigArray")] [u32; ZERO_LINKS]);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct UpperNode([u32; UPPER_LINKS]);

/// instant-distance's `HnswMap` and `Hnsw`, field for field, as read.
#[derive(Deserialize)]
struct MapIn {
    hnsw: HnswIn,
    values: Vec<Entry>,
}

#[derive(Deserialize)]
struct HnswIn {
    ef_search: usize,
    points: Vec<Vec<f32>>,
    zero: Vec<ZeroNode>,
    layers: Vec<Vec<UpperNode>>,
}

/// The same, as written from a graph (no copy of its vectors).
#[derive(Serialize)]
struct MapOut<'a> {
    hnsw: HnswOut<'a>,
    values: &'a [Entry],
}

#[derive(Serialize)]
struct HnswOut<'a> {
    ef_search: usize,
    points: Rows<'a>,
    zero: &'a [ZeroNode],
    layers: &'a [Vec<UpperNode>],
}

/// A block of vectors written as a sequence of sequences.
struct Rows<'a>(&'a [f32], usize);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.chunks_exact(self.1.max(1)))
    }
}

impl Serialize for Graph {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        MapOut {
            hnsw: HnswOut {
                ef_search: self.ef_search,
                points: Rows(&self.vectors, self.dim),
                zero: &self.zero,
                layers: &self.layers,
            },
            values: &self.values,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = MapIn::deserialize(d)?;
        let n = m.hnsw.points.len();
        let dim = m.hnsw.points.first().map_or(0, Vec::len);
        // Every link names a point of its layer: layer 0 holds every point,
        // a layer above the first `len` (instant-distance orders points by
        // their top layer), point 0 in each.
        let fits =
            |links: &[u32], len: usize| links.iter().all(|l| *l == NONE || (*l as usize) < len);
        let ok = m.values.len() == n
            && m.hnsw.zero.len() == n
            && m.hnsw.points.iter().all(|p| p.len() == dim)
            && m.hnsw.zero.iter().all(|z| fits(&z.0, n))
            && m.hnsw
                .layers
                .iter()
                .all(|l| !l.is_empty() && l.len() <= n && l.iter().all(|u| fits(&u.0, l.len())));
        if !ok {
            return Err(serde::de::Error::custom("inconsistent graph"));
        }
        Ok(Self {
            dim,
            vectors: m.hnsw.points.concat(),
            zero: m.hnsw.zero,
            layers: m.hnsw.layers,
            values: m.values,
            ef_search: m.hnsw.ef_search,
        })
    }
}

/// A point met by a walk: its distance (`1 − cosine`) and id, ordered by
/// distance then id as instant-distance orders its candidates.
#[derive(Clone, Copy, PartialEq)]
struct Near {
    distance: f32,
    pid: u32,
}

impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.pid.cmp(&other.pid))
    }
}

/// A walk's working state, kept by each thread for its next walk.
#[derive(Default)]
struct Scratch {
    /// The walk's mark on each point it visited (`mark`: this walk's).
    visited: Vec<u32>,
    mark: u32,
    candidates: BinaryHeap<Reverse<Near>>,
    /// The nearest found, nearest first.
    nearest: Vec<Near>,
    fresh: Vec<u32>,
}

impl Scratch {
    /// Forgets every visit (a new mark) for a graph of `n` points.
    fn forget(&mut self, n: usize) {
        if self.visited.len() < n {
            self.visited.resize(n, 0);
        }
        self.mark = self.mark.wrapping_add(1);
        if self.mark == 0 {
            self.visited.fill(0);
            self.mark = 1;
        }
    }

    fn visit(&mut self, pid: u32) -> bool {
        let v = &mut self.visited[pid as usize];
        let first = *v != self.mark;
        *v = self.mark;
        first
    }

    /// Keeps `near` if it is among the `ef` nearest so far.
    fn offer(&mut self, near: Near, ef: usize) {
        let at = self.nearest.partition_point(|n| *n < near);
        if at < ef {
            self.nearest.insert(at, near);
            self.candidates.push(Reverse(near));
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

impl Graph {
    /// instant-distance's built graph, taken apart through its serialised
    /// form (its fields are private).
    pub fn from_built(map: &instant_distance::HnswMap<Unit, Entry>) -> anyhow::Result<Self> {
        let bytes = postcard::to_stdvec(map)?;
        Ok(postcard::from_bytes(&bytes)?)
    }

    pub fn vector(&self, pid: u32) -> &[f32] {
        let at = pid as usize * self.dim;
        &self.vectors[at..at + self.dim]
    }

    /// The `ef` nearest points to `v` the walk finds, nearest first: (id,
    /// distance).
    pub fn search(&self, v: &[f32], ef: usize) -> Vec<(u32, f32)> {
        if self.values.is_empty() || v.len() != self.dim {
            return Vec::new();
        }
        SCRATCH.with_borrow_mut(|s| {
            s.forget(self.values.len());
            s.nearest.clear();
            s.candidates.clear();
            s.visit(0);
            s.offer(self.near(v, 0), 1);
            for layer in (0..=self.layers.len()).rev() {
                self.walk_layer(v, layer, if layer == 0 { ef } else { 1 }, s);
                if layer != 0 {
                    // The layer's nearest are where the next one starts.
                    s.candidates.clear();
                    s.forget(self.values.len());
                    for i in 0..s.nearest.len() {
                        let n = s.nearest[i];
                        s.candidates.push(Reverse(n));
                        s.visit(n.pid);
                    }
                }
            }
            s.nearest.iter().map(|n| (n.pid, n.distance)).collect()
        })
    }

    fn near(&self, v: &[f32], pid: u32) -> Near {
        Near {
            distance: 1.0 - dot(v, self.vector(pid)),
            pid,
        }
    }

    /// One layer's beam: from the nearest candidate out, until the nearest
    /// candidate left is farther than the farthest kept.
    fn walk_layer(&self, v: &[f32], layer: usize, ef: usize, s: &mut Scratch) {
        while let Some(Reverse(c)) = s.candidates.pop() {
            if s.nearest.last().is_some_and(|f| c.distance > f.distance) {
                break;
            }
            let links: &[u32] = match layer {
                0 => &self.zero[c.pid as usize].0,
                l => &self.layers[l - 1][c.pid as usize].0,
            };
            s.fresh.clear();
            for &pid in links.iter().take_while(|l| **l != NONE) {
                if s.visit(pid) {
                    s.fresh.push(pid);
                    self.prefetch(pid);
                }
            }
            for i in 0..s.fresh.len() {
                let near = self.near(v, s.fresh[i]);
                s.offer(near, ef);
            }
            s.nearest.truncate(ef);
        }
    }

    /// Asks for `pid`'s vector to be brought into cache.
    #[inline]
    fn prefetch(&self, pid: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let row = self.vector(pid);
            let bytes = std::mem::size_of_val(row).min(PREFETCH_BYTES);
            let base = row.as_ptr().cast::<i8>();
            for off in (0..bytes).step_by(64) {
                // SAFETY: `off` is within the vector's bytes, so the
                // address is inside its allocation; a prefetch reads
                // nothing the program sees and cannot fault.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(base.add(off), std::arch::x86_64::_MM_HINT_T0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use instant_distance::{Builder, Search};

    use super::{Entry, Graph, Unit};

    /// `n` unit vectors of `dim`, deterministic.
    fn points(n: usize, dim: usize, seed: u64) -> Vec<Arc<[f32]>> {
        let mut x = seed.max(1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.iter().map(|a| a / norm).collect()
            })
            .collect()
    }

    fn built(n: usize, ef: usize) -> instant_distance::HnswMap<Unit, Entry> {
        let pts = points(n, 16, 3);
        let entries = (0..n as i64).map(|row| Entry { row, seq: row }).collect();
        Builder::default()
            .ef_search(ef)
            .ef_construction(40)
            .seed(7)
            .build(pts.into_iter().map(Unit).collect(), entries)
    }

    #[test]
    fn the_walk_finds_what_instant_distance_finds_at_the_same_width() {
        for ef in [1, 15, 64] {
            let map = built(3_000, ef);
            let graph = Graph::from_built(&map).unwrap();
            for q in points(40, 16, 99) {
                let mut search = Search::default();
                let theirs: Vec<(i64, u32)> = map
                    .search(&Unit(q.clone()), &mut search)
                    .map(|item| (item.value.row, item.distance.to_bits()))
                    .collect();
                let ours: Vec<(i64, u32)> = graph
                    .search(&q, ef)
                    .into_iter()
                    .map(|(pid, d)| (graph.values[pid as usize].row, d.to_bits()))
                    .collect();
                assert_eq!(ours, theirs, "ef {ef}");
                assert_eq!(ours.len(), ef.min(3_000));
            }
        }
    }

    #[test]
    fn a_near_duplicate_is_found_at_the_narrowest_width() {
        // Dedup asks for its 5 candidates with k = 15, so it walks
        // `ANN_EF_MIN` wide. Random 16-d points are a hard case for a graph
        // (no clusters); each query is a stored point moved to a cosine of
        // ~0.88 with it, near dedup's 0.85. A walk 1 wide finds 180 of
        // these 200 among its first 5, 4 wide and more all 200.
        let map = built(3_000, 8);
        let graph = Graph::from_built(&map).unwrap();
        let pts = points(3_000, 16, 3);
        let mut found = 0;
        for (i, e) in points(200, 16, 41).iter().enumerate() {
            let row = i * 15;
            let q: Vec<f32> = pts[row]
                .iter()
                .zip(e.iter())
                .map(|(x, y)| x + 0.55 * y)
                .collect();
            let norm = q.iter().map(|x| x * x).sum::<f32>().sqrt();
            let q: Vec<f32> = q.iter().map(|x| x / norm).collect();
            let hits = graph.search(&q, super::super::segment::ANN_EF_MIN);
            let rows = hits
                .iter()
                .take(5)
                .map(|(pid, _)| graph.values[*pid as usize].row);
            found += usize::from(rows.into_iter().any(|r| r == row as i64));
        }
        assert_eq!(found, 200);
    }

    #[test]
    fn a_graph_is_written_as_instant_distance_writes_it() {
        let map = built(500, 32);
        let graph = Graph::from_built(&map).unwrap();
        let theirs = postcard::to_stdvec(&map).unwrap();
        assert_eq!(postcard::to_stdvec(&graph).unwrap(), theirs);
        // Read back, it walks as before.
        let again: Graph = postcard::from_bytes(&theirs).unwrap();
        let q = points(1, 16, 5).pop().unwrap();
        assert_eq!(again.search(&q, 20), graph.search(&q, 20));
        assert_eq!(again.vector(7), graph.vector(7));
    }

    #[test]
    fn a_link_past_the_points_is_refused() {
        let map = built(50, 8);
        let mut bytes = postcard::to_stdvec(&map).unwrap();
        // The last point's last entry (`row`, `seq`) is not a link; the
        // graph's first link list sits right after the vectors: there a
        // valid link (a varint under 50) becomes 127.
        let vectors = 1 + 50 * (1 + 16 * 4);
        let at = 1 + vectors + 1;
        assert!(bytes[at] < 50);
        bytes[at] = 127;
        let read: Result<Graph, _> = postcard::from_bytes(&bytes);
        assert!(read.is_err());
        // A link of a layer above to a point of layer 0 only.
        let mut graph = Graph::from_built(&built(3_000, 8)).unwrap();
        let top = graph.layers.len();
        assert!(top > 0 && graph.layers[0].len() < 3_000);
        let again: Result<Graph, _> = postcard::from_bytes(&postcard::to_stdvec(&graph).unwrap());
        assert!(again.is_ok());
        graph.layers[top - 1][0].0[0] = graph.layers[top - 1].len() as u32;
        let read: Result<Graph, _> = postcard::from_bytes(&postcard::to_stdvec(&graph).unwrap());
        assert!(read.is_err());
    }
}
