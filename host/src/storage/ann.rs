//! The in-memory HNSW index (instant-distance) beside sqlite-vec: one graph
//! per (target, namespace) partition once the partition holds
//! `min_rows` vectors. sqlite-vec stays the source of truth and answers
//! exactly while a partition is small or its graph is being built.
//!
//! In sync with every write path: a graph is built from a snapshot of the
//! partition on a background thread; vectors written after the snapshot go to
//! a `fresh` list scanned exactly at query time (and mark the replaced point
//! `stale`); when `fresh` grows past a share of the graph, a new snapshot is
//! built and swapped in. Deleted and filtered-out rows are removed by the SQL
//! filter the caller applies to the candidates.
//!
//! Shared by every connection of the process (`sqlite.rs`), kept exact
//! across threads and restarts by the change log (`ann_store.rs`), and
//! saved next to the database after each build (`ann_file.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use instant_distance::{Builder, HnswMap, Search};
use mnemo_core::model::Target;

/// Candidates the graph walk keeps (instant-distance's `ef_search`).
pub const ANN_EF_SEARCH: usize = 256;
pub const ANN_EF_CONSTRUCTION: usize = 64;
/// A graph is rebuilt when the vectors written since its snapshot exceed
/// this share of it (and `ANN_REBUILD_MIN`).
pub const ANN_REBUILD_SHARE: f32 = 0.10;
pub const ANN_REBUILD_MIN: usize = 2_000;

/// A unit vector; distance is `1 − cosine`. Shared (`Arc`) between the
/// graph and the by-row lookup, so serving a candidate's vector from memory
/// costs no second copy.
#[derive(Clone)]
pub struct Unit(pub Arc<[f32]>);

impl serde::Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Unit {
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
fn dot(a: &[f32], b: &[f32]) -> f32 {
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

pub(super) type Key = (Target, String);
pub(super) type Graph = HnswMap<Unit, i64>;
/// A partition's (rowid, vector) pairs and the last vector change they include.
pub(super) type Snapshot = (Vec<(i64, Vec<f32>)>, i64);

struct Built {
    graph: Graph,
    points: usize,
    build_ms: u128,
    /// Each point's vector by rowid (the same allocations as the graph's).
    by_row: HashMap<i64, Arc<[f32]>>,
}

impl Built {
    fn new(graph: Graph, points: usize, build_ms: u128) -> Self {
        let by_row = graph
            .iter()
            .filter_map(|(pid, p)| {
                let row = graph.values.get(pid.into_inner() as usize)?;
                Some((*row, p.0.clone()))
            })
            .collect();
        Self {
            graph,
            points,
            build_ms,
            by_row,
        }
    }
}

#[derive(Default)]
struct Partition {
    built: Option<Built>,
    /// A build in progress and the change sequence number of its snapshot.
    pending: Option<(mpsc::Receiver<Built>, i64)>,
    /// Vectors written since the snapshot of `built`, with their change
    /// sequence number (`vector_changes.seq`).
    fresh: HashMap<i64, (Vec<f32>, i64)>,
    /// Points of the graph whose vector was replaced or removed since.
    stale: HashSet<i64>,
}

impl Partition {
    /// A finished build replaces the graph; what was written after its
    /// snapshot stays fresh (and stale in the new graph).
    fn install(&mut self, built: Built, snapshot_seq: i64) {
        self.built = Some(built);
        self.fresh.retain(|_, (_, s)| *s > snapshot_seq);
        self.stale = self.fresh.keys().copied().collect();
    }
}

/// Where graphs are saved, and the embedder they belong to.
#[derive(Clone)]
pub(super) struct Persist {
    pub dir: std::path::PathBuf,
    pub model: String,
    pub dimension: u32,
}

/// The graphs of every partition, and when to use them.
pub struct AnnIndex {
    /// Smallest partition worth a graph; `None` disables the index.
    min_rows: Option<usize>,
    parts: HashMap<Key, Partition>,
    /// Saved next to the database after each build, when set.
    persist: Option<Persist>,
    /// Graphs installed since the store last looked, with their snapshot's
    /// sequence number: the store replays the changes after it.
    installed: Vec<(Key, i64)>,
}

/// The index at a glance (`/health`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct AnnStatus {
    pub enabled: bool,
    /// Partitions served by a graph.
    pub graphs: usize,
    /// Vectors in those graphs.
    pub points: usize,
    /// Vectors written since their graphs' snapshots (searched exactly).
    pub fresh: usize,
    /// Graph builds in progress.
    pub building: usize,
}

/// What a partition can answer right now.
pub enum Answer {
    /// Use sqlite-vec (small, disabled, or being built).
    Exact,
    /// Candidates (rowid, cosine), best first.
    Approximate(Vec<(i64, f32)>),
}

impl AnnIndex {
    pub fn new(min_rows: Option<usize>) -> Self {
        Self {
            min_rows,
            parts: HashMap::new(),
            persist: None,
            installed: Vec::new(),
        }
    }

    /// Saves each graph built from now on (and is where they are loaded from).
    pub(super) fn persist_to(&mut self, persist: Option<Persist>) {
        self.persist = persist;
    }

    /// A graph loaded from disk, built from the snapshot at `seq`.
    pub(super) fn install_loaded(&mut self, key: Key, graph: Graph, points: usize, seq: i64) {
        let built = Built::new(graph, points, 0);
        self.parts
            .entry(key.clone())
            .or_default()
            .install(built, seq);
        self.installed.push((key, seq));
    }

    /// Graphs installed since the last call, with their snapshot's sequence
    /// number.
    pub(super) fn take_installed(&mut self) -> Vec<(Key, i64)> {
        self.collect();
        std::mem::take(&mut self.installed)
    }

    pub fn enabled(&self) -> bool {
        self.min_rows.is_some()
    }

    /// Forget everything (the vectors were reset).
    pub fn clear(&mut self) {
        self.parts.clear();
        self.installed.clear();
    }

    /// Forget one partition's graph (it is rebuilt on demand).
    pub(super) fn forget(&mut self, key: &Key) {
        self.parts.remove(key);
    }

    /// A vector was written (inserted or replaced) for `rowid`, as change `seq`.
    pub fn put(&mut self, target: Target, namespace: &str, rowid: i64, v: &[f32], seq: i64) {
        if let Some(p) = self.parts.get_mut(&(target, namespace.to_string())) {
            if p.built.is_some() {
                p.stale.insert(rowid);
            }
            p.fresh.insert(rowid, (v.to_vec(), seq));
        }
    }

    /// `rowid`'s vector was deleted: the graph must not return it.
    pub fn remove(&mut self, target: Target, namespace: &str, rowid: i64) {
        if let Some(p) = self.parts.get_mut(&(target, namespace.to_string())) {
            p.stale.insert(rowid);
            p.fresh.remove(&rowid);
        }
    }

    /// Swaps in finished builds.
    fn collect(&mut self) {
        for (key, p) in self.parts.iter_mut() {
            let done = p
                .pending
                .as_ref()
                .and_then(|(rx, s)| rx.try_recv().ok().map(|b| (b, *s)));
            if let Some((built, snapshot_seq)) = done {
                p.pending = None;
                p.install(built, snapshot_seq);
                self.installed.push((key.clone(), snapshot_seq));
            }
        }
    }

    /// Whether a partition of `rows` vectors needs a (new) build.
    fn needs_build(&self, p: Option<&Partition>, rows: usize) -> bool {
        let Some(min) = self.min_rows else {
            return false;
        };
        match p {
            _ if rows < min => false,
            None => true,
            Some(p) if p.pending.is_some() => false,
            Some(p) => match &p.built {
                None => true,
                Some(b) => {
                    p.fresh.len() >= ANN_REBUILD_MIN
                        && p.fresh.len() as f32 > b.points as f32 * ANN_REBUILD_SHARE
                }
            },
        }
    }

    /// Starts a background build of `key` from `snapshot` — (rowid,
    /// vector) and the last change sequence number it includes — when it
    /// needs one. `rows` is the partition's size. The graph is saved when
    /// persistence is on.
    pub fn maybe_build(
        &mut self,
        target: Target,
        namespace: &str,
        rows: usize,
        snapshot: impl FnOnce() -> anyhow::Result<Snapshot>,
    ) -> anyhow::Result<()> {
        self.collect();
        let key = (target, namespace.to_string());
        if !self.needs_build(self.parts.get(&key), rows) {
            return Ok(());
        }
        let (rows, seq) = snapshot()?;
        let (tx, rx) = mpsc::channel();
        let persist = self.persist.clone();
        let file_key = key.clone();
        std::thread::Builder::new()
            .name("mnemo-hnsw".into())
            .spawn(move || {
                let started = Instant::now();
                let points = rows.len();
                let (ids, vectors): (Vec<i64>, Vec<Unit>) =
                    rows.into_iter().map(|(id, v)| (id, Unit(v.into()))).unzip();
                let graph = Builder::default()
                    .ef_search(ANN_EF_SEARCH)
                    .ef_construction(ANN_EF_CONSTRUCTION)
                    .seed(42)
                    .build(vectors, ids);
                if let Some(persist) = &persist
                    && let Err(e) = super::ann_file::save(persist, &file_key, seq, &graph, points)
                {
                    tracing::warn!(error = %format!("{e:#}"), "the HNSW graph was not saved; it is rebuilt after a restart");
                }
                let _ = tx.send(Built::new(graph, points, started.elapsed().as_millis()));
            })?;
        self.parts.entry(key).or_default().pending = Some((rx, seq));
        Ok(())
    }

    /// Candidates for `v` from the partition's graph plus its fresh vectors.
    pub fn search(&mut self, target: Target, namespace: &str, v: &[f32], k: usize) -> Answer {
        self.collect();
        let Some(p) = self.parts.get(&(target, namespace.to_string())) else {
            return Answer::Exact;
        };
        let Some(built) = &p.built else {
            return Answer::Exact;
        };
        let mut search = Search::default();
        let query = Unit(v.into());
        let mut out: Vec<(i64, f32)> = built
            .graph
            .search(&query, &mut search)
            .filter(|item| !p.stale.contains(item.value))
            .take(k)
            .map(|item| (*item.value, 1.0 - item.distance))
            .collect();
        out.extend(p.fresh.iter().map(|(id, (w, _))| (*id, dot(v, w))));
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(k);
        Answer::Approximate(out)
    }

    /// `rowid`'s current vector when the partition's index holds it: a
    /// fresh one, or the graph's point unless replaced since (`None`: ask
    /// the table).
    pub fn vector(&self, target: Target, namespace: &str, rowid: i64) -> Option<Vec<f32>> {
        let p = self.parts.get(&(target, namespace.to_string()))?;
        if let Some((v, _)) = p.fresh.get(&rowid) {
            return Some(v.clone());
        }
        if p.stale.contains(&rowid) {
            return None;
        }
        p.built.as_ref()?.by_row.get(&rowid).map(|v| v.to_vec())
    }

    /// What the index holds now: graphs served, their points, builds running.
    pub fn status(&mut self) -> AnnStatus {
        self.collect();
        AnnStatus {
            enabled: self.enabled(),
            graphs: self.parts.values().filter(|p| p.built.is_some()).count(),
            points: self
                .parts
                .values()
                .filter_map(|p| p.built.as_ref().map(|b| b.points))
                .sum(),
            fresh: self.parts.values().map(|p| p.fresh.len()).sum(),
            building: self.parts.values().filter(|p| p.pending.is_some()).count(),
        }
    }

    /// Waits for running builds (benchmarks); returns (points, build ms) of
    /// every graph.
    pub fn wait(&mut self) -> Vec<(usize, u128)> {
        for (key, p) in self.parts.iter_mut() {
            if let Some((rx, snapshot_seq)) = p.pending.take()
                && let Ok(built) = rx.recv()
            {
                p.install(built, snapshot_seq);
                self.installed.push((key.clone(), snapshot_seq));
            }
        }
        self.parts
            .values()
            .filter_map(|p| p.built.as_ref().map(|b| (b.points, b.build_ms)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2000) as f32 / 1000.0 - 1.0
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn the_graph_finds_the_exact_neighbours_and_follows_writes() {
        let mut ann = AnnIndex::new(Some(100));
        let rows: Vec<(i64, Vec<f32>)> = (0..500).map(|i| (i, unit(i as u64, 32))).collect();
        let snapshot = rows.clone();
        ann.maybe_build(Target::Memories, "default", 500, move || Ok((snapshot, 0)))
            .unwrap();
        assert_eq!(ann.wait().len(), 1);
        // Recall@10 of the graph against brute force.
        let mut found = 0;
        for q in 0..20u64 {
            let v = unit(10_000 + q, 32);
            let mut exact: Vec<(i64, f32)> = rows.iter().map(|(i, w)| (*i, dot(&v, w))).collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1));
            let Answer::Approximate(got) = ann.search(Target::Memories, "default", &v, 10) else {
                panic!("a graph exists");
            };
            found += exact[..10]
                .iter()
                .filter(|(i, _)| got.iter().any(|(g, _)| g == i))
                .count();
        }
        assert!(found >= 190, "recall@10 {found}/200");
        // A written vector is found at once, and its old point is ignored.
        let v = unit(77_777, 32);
        ann.put(Target::Memories, "default", 3, &v, 1);
        let Answer::Approximate(got) = ann.search(Target::Memories, "default", &v, 3) else {
            panic!("a graph exists");
        };
        assert_eq!(got[0].0, 3);
        assert!((got[0].1 - 1.0).abs() < 1e-5);
        assert_eq!(got.iter().filter(|(i, _)| *i == 3).count(), 1);
        // Small or unknown partitions answer exactly.
        assert!(matches!(
            ann.search(Target::Episodes, "default", &v, 3),
            Answer::Exact
        ));
    }
}
