//! Small vector partitions searched exactly in memory, with sqlite-vec's
//! answer: its cosine distance to the bit (`distance_cosine_float`: f32
//! sums in order, the rest in double), nearest first, ties by rowid (as
//! the JavaScript host breaks them). sqlite-vec's own scan computes the
//! same distances from its chunk pages, then picks its top k by a k × 1,024
//! selection per chunk (`min_idx`): profiled, 39% of the writer's time in
//! `bench serve`'s remember, whose dedup asks for the 15 nearest of a
//! 10,000-row namespace. Here the partition is a dense array scanned eight
//! rows at a time (each row's sums still in order) and a linear selection.
//!
//! The partitions are here; reading them from the tables and keeping
//! them current is `exact_store.rs`.
//!
//! Per connection, so each holds what its own transaction sees: the
//! writer's includes its uncommitted writes, a reader's is its snapshot.
//! Kept current from `vector_changes` with one cursor per table, so a row
//! that moved namespace leaves its old partition. A rollback drops the
//! connection's copy (`forget_exact`), and so does a pruned log (the
//! shared `vector_log_epoch`). At most `EXACT_MAX_FLOATS` per connection,
//! the least recently searched partition dropped first; a partition larger
//! than that is left to sqlite-vec, and one the HNSW index serves is
//! dropped (`release_exact`).

use std::collections::HashMap;

use mnemo_core::model::Target;

/// Floats one connection keeps (32 MB): one partition of `ANN_MIN_ROWS`
/// (20,000) rows at 384 dimensions (the default model's), the largest a
/// search leaves to exact search once the HNSW index is on.
pub(super) const EXACT_MAX_FLOATS: usize = 8_000_000;

/// A connection's partitions.
#[derive(Default)]
pub struct ExactVectors {
    pub(super) tables: HashMap<Target, Table>,
    /// Searches so far: a partition's `used` orders the drops.
    pub(super) tick: u64,
}

/// One table's partitions, current up to change `synced`.
#[derive(Default)]
pub(super) struct Table {
    pub(super) synced: i64,
    pub(super) epoch: u64,
    pub(super) dimension: usize,
    pub(super) parts: HashMap<String, Part>,
    /// The partition holding each row held.
    pub(super) home: HashMap<i64, String>,
}

/// One namespace's vectors, eight rows to a block, interleaved by
/// dimension (`data[block][dim][lane]`): a scan multiplies eight rows'
/// same dimension at once, each row's sum still taken in order.
#[derive(Default)]
pub(super) struct Part {
    dimension: usize,
    rows: Vec<i64>,
    data: Vec<f32>,
    /// Each row's squared magnitude, summed as sqlite-vec sums it.
    mags: Vec<f32>,
    pos: HashMap<i64, usize>,
    pub(super) used: u64,
}

/// Rows per block of `Part::data`.
const LANES: usize = 8;

impl ExactVectors {
    fn floats(&self) -> usize {
        self.tables
            .values()
            .flat_map(|t| t.parts.values())
            .map(Part::floats)
            .sum()
    }

    /// Drops the least recently searched partitions until `room` more
    /// floats fit.
    pub(super) fn make_room(&mut self, room: usize) {
        while self.floats() + room > EXACT_MAX_FLOATS {
            let oldest = self
                .tables
                .iter()
                .flat_map(|(t, tab)| tab.parts.iter().map(move |(ns, p)| (p.used, *t, ns)))
                .min_by_key(|(used, _, _)| *used)
                .map(|(_, t, ns)| (t, ns.clone()));
            let Some((t, ns)) = oldest else { return };
            if let Some(tab) = self.tables.get_mut(&t) {
                tab.drop_part(&ns);
            }
        }
    }
}

impl Table {
    pub(super) fn drop_part(&mut self, ns: &str) {
        if let Some(p) = self.parts.remove(ns) {
            for row in p.rows {
                self.home.remove(&row);
            }
        }
    }

    /// Row `row` now holds `now` (namespace and vector), or nothing.
    pub(super) fn apply(&mut self, row: i64, now: Option<(String, Vec<f32>)>) {
        if let Some(old) = self.home.remove(&row)
            && let Some(p) = self.parts.get_mut(&old)
        {
            p.remove(row);
        }
        if let Some((ns, v)) = now
            && v.len() == self.dimension
            && let Some(p) = self.parts.get_mut(&ns)
        {
            p.put(row, &v);
            self.home.insert(row, ns);
        }
    }
}

impl Part {
    pub(super) fn new(dimension: usize) -> Self {
        Self {
            dimension,
            ..Self::default()
        }
    }

    fn floats(&self) -> usize {
        self.data.len()
    }

    /// Where dimension `j` of the row in slot `i` lives.
    fn at(&self, i: usize, j: usize) -> usize {
        (i / LANES) * LANES * self.dimension + j * LANES + i % LANES
    }

    fn write(&mut self, i: usize, v: &[f32]) {
        if i / LANES * LANES * self.dimension >= self.data.len() {
            self.data
                .resize(self.data.len() + LANES * self.dimension, 0.0);
        }
        for (j, x) in v.iter().enumerate() {
            let k = self.at(i, j);
            self.data[k] = *x;
        }
    }

    pub(super) fn put(&mut self, row: i64, v: &[f32]) {
        let i = match self.pos.get(&row) {
            Some(&i) => i,
            None => {
                let i = self.rows.len();
                self.pos.insert(row, i);
                self.rows.push(row);
                self.mags.push(0.0);
                i
            }
        };
        self.write(i, v);
        self.mags[i] = sum_sq(v);
    }

    fn remove(&mut self, row: i64) {
        let Some(i) = self.pos.remove(&row) else {
            return;
        };
        let last = self.rows.len() - 1;
        if i != last {
            let moved = self.rows[last];
            let v: Vec<f32> = (0..self.dimension)
                .map(|j| self.data[self.at(last, j)])
                .collect();
            self.write(i, &v);
            self.rows[i] = moved;
            self.mags[i] = self.mags[last];
            self.pos.insert(moved, i);
        }
        for j in 0..self.dimension {
            let k = self.at(last, j);
            self.data[k] = 0.0;
        }
        self.rows.pop();
        self.mags.pop();
        self.data
            .truncate(self.rows.len().div_ceil(LANES) * LANES * self.dimension);
    }

    /// The `k` nearest rows to `q` and their distances, nearest first (ties
    /// by row); rows whose distance is not a number (a zero vector) are
    /// left out.
    pub(super) fn nearest(&self, q: &[f32], k: usize) -> Vec<(i64, f32)> {
        let d = self.dimension;
        if k == 0 || q.len() != d {
            return Vec::new();
        }
        let q_mag = sum_sq(q);
        let order = |a: &(i64, f32), b: &(i64, f32)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
        // The best k so far, and the worst of them once there are k.
        let mut best: Vec<(i64, f32)> = Vec::with_capacity(k + 1);
        let mut worst: Option<(i64, f32)> = None;
        for (b, block) in self.data.chunks_exact(LANES * d).enumerate() {
            let mut dot = [0f32; LANES];
            for (j, &qj) in q.iter().enumerate() {
                let lanes = &block[j * LANES..(j + 1) * LANES];
                for (acc, x) in dot.iter_mut().zip(lanes) {
                    *acc += x * qj;
                }
            }
            for (lane, dot) in dot.into_iter().enumerate() {
                let i = b * LANES + lane;
                let Some(&row) = self.rows.get(i) else {
                    break;
                };
                let hit = (row, distance(dot, self.mags[i], q_mag));
                if hit.1.is_nan() || worst.is_some_and(|w| order(&hit, &w).is_ge()) {
                    continue;
                }
                best.push(hit);
                if best.len() > k
                    && let Some((at, _)) = best.iter().enumerate().max_by(|a, b| order(a.1, b.1))
                {
                    best.swap_remove(at);
                }
                if best.len() == k {
                    worst = best.iter().copied().max_by(order);
                }
            }
        }
        best.sort_unstable_by(order);
        best
    }
}

/// A vector's squared magnitude, summed in order in f32.
fn sum_sq(v: &[f32]) -> f32 {
    v.iter().fold(0f32, |acc, x| acc + x * x)
}

/// sqlite-vec's `1 - (dot / (sqrt(aMag) * sqrt(bMag)))`: C's `sqrt` is
/// double's, and the result is returned as f32.
fn distance(dot: f32, a_mag: f32, b_mag: f32) -> f32 {
    (1.0 - f64::from(dot) / (f64::from(a_mag).sqrt() * f64::from(b_mag).sqrt())) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::rows;
    use rusqlite::params;

    /// sqlite-vec's own KNN over a vec0 table, and this module's, agree
    /// on every row and every distance's bits: 3,000 rows (some removed
    /// and rewritten) in two partitions, dimensions not a multiple of 8.
    #[test]
    fn the_nearest_are_sqlite_vecs_to_the_bit() {
        super::super::register_sqlite_vec();
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE v USING vec0(ns text partition key, e float[37] distance_metric=cosine)",
        )
        .unwrap();
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 20_000) as f32 / 10_000.0 - 1.0
        };
        let mut parts = [Part::new(37), Part::new(37)];
        let put = |row: i64, v: &[f32], parts: &mut [Part; 2]| {
            let ns = (row % 2) as usize;
            conn.execute("DELETE FROM v WHERE rowid = ?1", [row])
                .unwrap();
            conn.execute(
                "INSERT INTO v(rowid, ns, e) VALUES (?1, ?2, ?3)",
                params![row, format!("n{ns}"), rows::vector_blob(v)],
            )
            .unwrap();
            parts[ns].put(row, v);
        };
        for row in 1..=3_000 {
            let v: Vec<f32> = (0..37).map(|_| next()).collect();
            put(row, &v, &mut parts);
        }
        for row in (1..=3_000).step_by(7) {
            conn.execute("DELETE FROM v WHERE rowid = ?1", [row])
                .unwrap();
            parts[(row % 2) as usize].remove(row);
        }
        for row in (3..=3_000).step_by(11) {
            let v: Vec<f32> = (0..37).map(|_| next()).collect();
            put(row, &v, &mut parts);
        }
        let mut knn = conn
            .prepare("SELECT rowid, distance FROM v WHERE e MATCH ?1 AND k = ?2 AND ns = ?3")
            .unwrap();
        for q in 0..40 {
            let v: Vec<f32> = (0..37).map(|_| next()).collect();
            let ns = q % 2;
            let want: Vec<(i64, u32)> = knn
                .query_map(params![rows::vector_blob(&v), 15, format!("n{ns}")], |r| {
                    Ok((r.get(0)?, (r.get::<_, f64>(1)? as f32).to_bits()))
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let got: Vec<(i64, u32)> = parts[ns]
                .nearest(&v, 15)
                .into_iter()
                .map(|(row, d)| (row, d.to_bits()))
                .collect();
            assert_eq!(got, want, "query {q}");
        }
    }

    #[test]
    fn a_removed_row_leaves_the_others_where_they_were() {
        let mut p = Part::new(2);
        for (row, v) in [(1, [1.0, 0.0]), (2, [0.0, 1.0]), (3, [1.0, 1.0])] {
            p.put(row, &v);
        }
        p.remove(1);
        p.put(2, &[0.0, 2.0]);
        let near = p.nearest(&[0.0, 1.0], 5);
        assert_eq!(near.iter().map(|n| n.0).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(near[0].1, 0.0);
    }

    #[test]
    fn ties_go_to_the_lower_row_and_zero_vectors_are_left_out() {
        let mut p = Part::new(2);
        for row in [9, 4, 7, 1, 3, 8, 2, 6, 5] {
            p.put(row, &[1.0, 2.0]);
        }
        p.put(10, &[0.0, 0.0]);
        let near = p.nearest(&[2.0, 4.0], 3);
        assert_eq!(near.iter().map(|n| n.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    }
}
