//! A first build's points not yet in a segment, searched while their
//! graphs build: the bounded tail that keeps recall off sqlite-vec's full
//! scan after a bulk write.
//!
//! A first build of a large partition takes minutes to most of an hour
//! (four 250,000-point segments: 1,590 s on this 2-core machine,
//! docs/benchmarks.md), and until it installed its segments every search
//! of the partition went to sqlite-vec, which scans every vector from its
//! pages (recall p50 975 ms at 1M right after ingest, against 28 ms
//! settled). The build's own points are scanned instead, in the order
//! the chunks build, and each chunk leaves the tail as its segment is
//! installed.
//!
//! The scan reads a copy of each vector in 8 bits (a scale per row), a
//! quarter of the floats' bytes: a scan of a million 64-d vectors is
//! bound by memory, 10 ms in floats against 3–4 ms in bytes on this
//! machine (a scratch loop over 1,000,000 random rows, not kept). Recall
//! at 1M right after ingest read p50 55.2 ms scanning the floats (builds
//! at nice 10) against 38.7 ms scanning the bytes (`bench serve`). The
//! best `ANN_TAIL_RERANK` × k of the scan are then scored exactly from
//! the floats the build shares, so the answer's scores are the segments'
//! own (`dot`).

use std::collections::HashSet;
use std::sync::Arc;

use super::segment::{Entry, dot};

/// The scan in 8 bits keeps this many times the candidates asked for, to
/// be scored exactly. The test below finds brute force's top k, bit for
/// bit, at every k it asks.
pub const ANN_TAIL_RERANK: usize = 4;
/// The fewest candidates the scan keeps for exact scoring.
const RERANK_MIN: usize = 64;

/// A chunk of a first build's points, in the order the build reads them.
pub(super) type Points = Arc<[(Entry, Arc<[f32]>)]>;

/// A chunk as the tail scans it: its points and their 8-bit copies.
pub(super) struct Scan {
    points: Points,
    dimension: usize,
    /// Each row's vector × its scale, rounded, `dimension` per row.
    codes: Vec<i8>,
    /// Each row's 1 / scale: a code product times it is the dot product's
    /// estimate, up to the query's own scale.
    inverse: Vec<f32>,
}

impl Scan {
    /// The chunk's points.
    pub(super) fn len(&self) -> usize {
        self.points.len()
    }

    pub(super) fn new(points: Points) -> Self {
        let dimension = points.first().map_or(0, |(_, v)| v.len());
        let mut codes = Vec::with_capacity(points.len() * dimension);
        let mut inverse = Vec::with_capacity(points.len());
        for (_, v) in points.iter() {
            let (code, inv) = quantize(v, dimension);
            codes.extend(code);
            inverse.push(inv);
        }
        Self {
            points,
            dimension,
            codes,
            inverse,
        }
    }
}

/// `v` in `dimension` bytes (cut or padded with zeros) scaled so that its
/// largest magnitude is 127, and the inverse of that scale.
fn quantize(v: &[f32], dimension: usize) -> (Vec<i8>, f32) {
    let top = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if top == 0.0 || !top.is_finite() {
        return (vec![0; dimension], 0.0);
    }
    let scale = 127.0 / top;
    let mut code: Vec<i8> = v
        .iter()
        .take(dimension)
        .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    code.resize(dimension, 0);
    (code, 1.0 / scale)
}

/// The dot product of two codes, sixteen lanes at a time.
fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// The chunks of a first build not yet installed.
pub(super) struct Tail {
    /// The snapshot's change number: the version every point holds.
    pub(super) seq: i64,
    /// Still building, in build order.
    pub(super) chunks: Vec<Arc<Scan>>,
    /// Rows changed since the snapshot: their point here is out of date.
    pub(super) stale: HashSet<i64>,
}

impl Tail {
    pub(super) fn new(seq: i64, chunks: Vec<Arc<Scan>>) -> Self {
        Self {
            seq,
            chunks,
            stale: HashSet::new(),
        }
    }

    /// Whether `row` at version `seq` is a point of the tail still current
    /// here (the fresh vectors are the partition's to check).
    pub(super) fn holds(&self, row: i64, seq: i64) -> bool {
        seq == self.seq && !self.stale.contains(&row)
    }
}

/// The `n` best items pushed, by `better` (a total order). A buffer of
/// `2n` is cut back to the best `n` whenever it fills, so an item below
/// the n-th best so far costs one comparison.
struct Best<T, F> {
    n: usize,
    kept: Vec<T>,
    floor: Option<T>,
    better: F,
}

impl<T: Copy, F: Fn(&T, &T) -> std::cmp::Ordering> Best<T, F> {
    fn new(n: usize, better: F) -> Self {
        Self {
            n,
            kept: Vec::with_capacity(2 * n),
            floor: None,
            better,
        }
    }

    /// Whether `item` would be kept: better than the n-th best so far.
    fn admits(&self, item: &T) -> bool {
        self.n > 0
            && self
                .floor
                .as_ref()
                .is_none_or(|f| (self.better)(item, f).is_lt())
    }

    fn push(&mut self, item: T) {
        if !self.admits(&item) {
            return;
        }
        self.kept.push(item);
        if self.kept.len() == 2 * self.n {
            self.cut();
            self.floor = self.kept.last().copied();
        }
    }

    fn cut(&mut self) {
        if self.kept.len() > self.n {
            self.kept.select_nth_unstable_by(self.n - 1, &self.better);
            self.kept.truncate(self.n);
        }
    }

    /// The best `n`, unordered.
    fn into_vec(mut self) -> Vec<T> {
        self.cut();
        self.kept
    }
}

/// The `k` nearest points of `chunks` to `v`: (entry, cosine), unordered.
/// Scanned in 8 bits, the best `ANN_TAIL_RERANK × k` (at least
/// `RERANK_MIN`) scored exactly.
pub(super) fn nearest(chunks: &[Arc<Scan>], v: &[f32], k: usize) -> Vec<(Entry, f32)> {
    let Some(dimension) = chunks.first().map(|c| c.dimension) else {
        return Vec::new();
    };
    if k == 0 || dimension == 0 {
        return Vec::new();
    }
    let (query, _) = quantize(v, dimension);
    // (estimate, chunk, row in the chunk); ties to the earlier point.
    let mut shortlist = Best::new(
        (k * ANN_TAIL_RERANK).max(RERANK_MIN),
        |a: &(f32, usize, usize), b: &(f32, usize, usize)| {
            b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2)))
        },
    );
    for (c, chunk) in chunks.iter().enumerate() {
        let codes = chunk.codes.chunks_exact(dimension);
        for (i, (code, inv)) in codes.zip(&chunk.inverse).enumerate() {
            let estimate = dot_codes(&query, code) as f32 * inv;
            // Most points fall below the floor: one comparison each.
            if shortlist.floor.is_some_and(|f| estimate < f.0) {
                continue;
            }
            shortlist.push((estimate, c, i));
        }
    }
    let mut exact = Best::new(k, |a: &(Entry, f32), b: &(Entry, f32)| {
        b.1.total_cmp(&a.1).then(a.0.row.cmp(&b.0.row))
    });
    for (_, c, i) in shortlist.into_vec() {
        let (e, w) = &chunks[c].points[i];
        exact.push((*e, dot(v, w)));
    }
    exact.into_vec()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::unit;
    use super::*;

    #[test]
    fn the_nearest_are_those_of_scoring_every_point_bit_for_bit() {
        // 64-d (the bench's) and 384-d (the default model's), with 40 exact
        // duplicates so that ties at the cut go to the lower row.
        for dim in [64, 384] {
            let point = |row: i64| -> (Entry, Arc<[f32]>) {
                let seed = if row >= 2_960 {
                    row as u64 - 40
                } else {
                    row as u64
                };
                (Entry { row, seq: 3 }, Arc::from(unit(seed, dim)))
            };
            let chunks: Vec<Arc<Scan>> = vec![
                Arc::new(Scan::new((0..1_700).map(point).collect())),
                Arc::new(Scan::new((1_700..3_000).map(point).collect())),
            ];
            for q in 0..30u64 {
                // Half the queries are stored vectors (a near-duplicate's search).
                let v = if q % 2 == 0 {
                    unit(q * 97, dim)
                } else {
                    unit(50_000 + q, dim)
                };
                let mut every: Vec<(i64, f32)> = (0..3_000)
                    .map(|row| (row, dot(&v, &point(row).1)))
                    .collect();
                every.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                for k in [1, 5, 15, 120, 3_000, 4_000] {
                    let mut got: Vec<(i64, f32)> = nearest(&chunks, &v, k)
                        .into_iter()
                        .map(|(e, s)| (e.row, s))
                        .collect();
                    got.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    assert_eq!(got, every[..k.min(3_000)], "dim {dim}, query {q}, k = {k}");
                }
            }
            assert!(nearest(&chunks, &unit(1, dim), 0).is_empty());
        }
        assert!(nearest(&[], &unit(1, 64), 10).is_empty());
    }

    #[test]
    fn a_code_is_the_vector_in_bytes() {
        let (code, inv) = quantize(&[0.5, -0.25, 0.0, 1e-9], 5);
        assert_eq!(code, vec![127, -64, 0, 0, 0]);
        assert!((inv - 0.5 / 127.0).abs() < 1e-9);
        assert_eq!(quantize(&[0.0, 0.0], 2), (vec![0, 0], 0.0));
        assert_eq!(dot_codes(&[127; 20], &[-2; 20]), -127 * 2 * 20);
    }
}
