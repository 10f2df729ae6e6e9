//! The in-memory HNSW index (instant-distance) beside sqlite-vec, per
//! (target, namespace) partition once the partition holds `min_rows`
//! vectors. sqlite-vec stays the source of truth and answers exactly while
//! a partition is small; while its first graph builds, the build's own
//! points are scanned (`tail.rs`: 8-bit codes, the best 4 × k scored
//! exactly), each chunk until its segment is installed.
//!
//! Segmented, so the index grows without rebuilds: a partition is a few
//! immutable graphs (`segment.rs`) plus `fresh`, the vectors written since,
//! searched exactly. When `fresh` reaches `ANN_FLUSH_AT` it is built into a
//! new segment in the background; when `ANN_MERGE_FANOUT` segments share a
//! size tier they are merged into one (so there are O(log n) of them, and
//! each vector is rebuilt O(log n) times, never the whole store at once);
//! a segment whose points have mostly been replaced is rewritten alone. A
//! point replaced or removed since its segment was built is stale, and
//! never returned. Deleted and filtered-out rows are also removed by the
//! SQL filter the caller applies to the candidates.
//!
//! Shared by every connection of the process (`sqlite.rs`). A search takes
//! the lock twice, briefly: to pick the segments and scan `fresh`, and to
//! drop stale candidates; the graph walks run between, so readers walk in
//! parallel. Kept exact across threads and restarts by the change log
//! (`ann_store.rs`), and saved next to the database segment by segment
//! (`ann/file.rs`).

pub(super) mod file;
mod segment;
mod tail;
mod walk;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, mpsc};

use mnemo_core::model::Target;

use tail::Tail;

pub use segment::{
    ANN_EF_CONSTRUCTION, ANN_EF_SEARCH, Entry, Graph, Segment, SegmentId, Unit, dot,
};

/// Fresh vectors (searched exactly) at which they are built into a segment.
/// Small enough that the exact scan stays a fraction of a recall's vector
/// work; large enough that segments stay few.
pub const ANN_FLUSH_AT: usize = 5_000;
/// Segments of one size tier (tier `t` holds `ANN_FLUSH_AT × 4^t` up to
/// `× 4^(t+1)` points) merged into one when there are this many.
pub const ANN_MERGE_FANOUT: usize = 4;
/// The largest segment a build makes: a first build of a bigger partition
/// is cut into chunks of at most this many points, and a merge whose
/// result would pass it is not made (Lucene's "max merged segment", for the
/// same reason). An instant-distance build grows faster than its size on
/// this 2-core machine: 100k points (64-d) built in 52 s, and one 1M graph
/// had not finished after 50 min (`mnemo-lab bench serve`), so a partition
/// grows by segments of a few minutes each instead.
pub const ANN_SEGMENT_MAX: usize = 250_000;
/// A segment with more than this share of stale points is rewritten alone.
pub const ANN_COMPACT_STALE: f32 = 0.3;
/// The nice value of the threads that build graphs (the same as the
/// background embedding's, `server/engine.rs`): instant-distance builds
/// on every core, and a recall waiting behind a build's time slice is
/// what a build costs the requests. A 1,000,000-point first build took
/// 1,590 s at full priority (docs/benchmarks.md).
pub const ANN_BUILD_NICE: i32 = 10;

pub(super) type Key = (Target, String);
/// A partition's (rowid, vector) pairs and the last vector change they include.
pub(super) type Snapshot = (Vec<(i64, Vec<f32>)>, i64);

/// A segment in use and its points replaced or removed since it was built.
struct Live {
    seg: Arc<Segment>,
    stale: HashSet<i64>,
}

/// What a background build makes.
enum Kind {
    /// The first segments, one per chunk of the table as of change `seq`;
    /// each is installed as it is built.
    Full { seq: i64 },
    /// The fresh vectors taken (row → change number).
    Flush { taken: HashMap<i64, i64> },
    /// Live points of these segments.
    Merge { inputs: Vec<Arc<Segment>> },
}

/// What a build thread sends: each segment as it is built, then `Done`.
/// A build that fails sends no `Done`, and its job stays pending.
enum Built {
    Segment(Segment),
    Done,
}

struct Job {
    rx: mpsc::Receiver<Built>,
    kind: Kind,
    /// Segments received and not yet installed (a flush's or merge's,
    /// installed together at `Done`).
    built: Vec<Segment>,
}

#[derive(Default)]
struct Partition {
    segments: Vec<Live>,
    pending: Option<Job>,
    /// Vectors written since the segments were built, with their change
    /// number (`vector_changes.seq`).
    fresh: HashMap<i64, (Arc<[f32]>, i64)>,
    /// A first build's chunks not yet installed, scanned (`tail.rs`).
    tail: Option<Tail>,
    /// The change log has been replayed into this partition up to here.
    synced: i64,
}

impl Partition {
    /// Whether a live segment holds `row` at version `seq` or newer.
    fn holds(&self, row: i64, seq: i64) -> bool {
        self.segments
            .iter()
            .any(|l| !l.stale.contains(&row) && l.seg.seq_of(row).is_some_and(|s| s >= seq))
    }

    /// Whether the candidate (`row` at version `seq`, walked in a segment
    /// or scanned in the tail) is still current.
    fn current(&self, row: i64, seq: i64) -> bool {
        self.fresh.get(&row).is_none_or(|(_, s)| *s <= seq)
            && (self
                .segments
                .iter()
                .any(|l| l.seg.seq_of(row) == Some(seq) && !l.stale.contains(&row))
                || self.tail.as_ref().is_some_and(|t| t.holds(row, seq)))
    }

    /// Change `seq` wrote `v` for `row`.
    fn put(&mut self, row: i64, v: &[f32], seq: i64) {
        self.mark_older(row, seq);
        if self.holds(row, seq) || self.fresh.get(&row).is_some_and(|(_, s)| *s >= seq) {
            return;
        }
        self.fresh.insert(row, (v.into(), seq));
    }

    /// Change `seq` deleted `row`'s vector.
    fn remove(&mut self, row: i64, seq: i64) {
        self.mark_older(row, seq);
        if self.fresh.get(&row).is_some_and(|(_, s)| *s < seq) {
            self.fresh.remove(&row);
        }
    }

    fn mark_older(&mut self, row: i64, seq: i64) {
        for l in &mut self.segments {
            if l.seg.seq_of(row).is_some_and(|s| s < seq) {
                l.stale.insert(row);
            }
        }
        if let Some(t) = &mut self.tail
            && seq > t.seq
        {
            t.stale.insert(row);
        }
    }

    /// A finished build (a flush's or merge's segment, or one chunk of a
    /// first build, which leaves the tail) joins the segments; returns the
    /// change number after which the log must be replayed into the
    /// partition.
    fn install(&mut self, built: Vec<Segment>, kind: &Kind) -> i64 {
        let mut stale = HashSet::new();
        let from = match kind {
            Kind::Full { seq } => {
                let seq = *seq;
                self.fresh.retain(|_, (_, s)| *s > seq);
                if let Some(t) = &mut self.tail {
                    for seg in &built {
                        // Chunks are built in order: this segment is the first left.
                        if !t.chunks.is_empty() {
                            t.chunks.remove(0);
                        }
                        // The tail's out-of-date points are this segment's stale ones.
                        stale.extend(t.stale.iter().copied().filter(|r| seg.seq_of(*r).is_some()));
                    }
                }
                // The first chunk's replay runs every change since the
                // snapshot through the tail's stale rows, which the later
                // chunks take over: they replay only what came after it.
                if self.segments.is_empty() {
                    seq
                } else {
                    self.synced.max(seq)
                }
            }
            Kind::Flush { taken } => {
                for (&row, &seq) in taken {
                    match self.fresh.get(&row) {
                        Some((_, s)) if *s == seq => {
                            self.fresh.remove(&row);
                        }
                        // Replaced or removed while the segment was built.
                        _ => {
                            stale.insert(row);
                        }
                    }
                }
                self.synced
            }
            Kind::Merge { inputs } => {
                let is_input = |l: &Live| inputs.iter().any(|i| Arc::ptr_eq(i, &l.seg));
                if let Some(seg) = built.first() {
                    for l in self.segments.iter().filter(|l| is_input(l)) {
                        stale.extend(l.stale.iter().copied().filter(|row| {
                            l.seg.seq_of(*row).is_some() && seg.seq_of(*row) == l.seg.seq_of(*row)
                        }));
                    }
                }
                self.segments.retain(|l| !is_input(l));
                self.synced
            }
        };
        for seg in built {
            let mut own: HashSet<i64> = stale
                .iter()
                .copied()
                .filter(|row| seg.seq_of(*row).is_some())
                .collect();
            own.extend(self.fresh.iter().filter_map(|(row, (_, s))| {
                seg.seq_of(*row).is_some_and(|p| p < *s).then_some(*row)
            }));
            self.segments.push(Live {
                seg: Arc::new(seg),
                stale: own,
            });
        }
        from
    }

    /// The next background build the partition needs, if any (not the
    /// first one, which needs the table).
    fn next(&self, flush_at: usize, segment_max: usize) -> Option<Kind> {
        if self.pending.is_some() || self.segments.is_empty() {
            return None;
        }
        if self.fresh.len() >= flush_at {
            let taken = self.fresh.iter().map(|(r, (_, s))| (*r, *s)).collect();
            return Some(Kind::Flush { taken });
        }
        let mut tiers: HashMap<u32, Vec<Arc<Segment>>> = HashMap::new();
        for l in &self.segments {
            tiers
                .entry(tier(l.seg.points_len(), flush_at))
                .or_default()
                .push(l.seg.clone());
        }
        for mut group in tiers.into_values().filter(|g| g.len() >= ANN_MERGE_FANOUT) {
            // The smallest of the tier, as many as fit under the cap.
            group.sort_by_key(|s| s.points_len());
            let mut total = 0;
            let inputs: Vec<Arc<Segment>> = group
                .into_iter()
                .take(ANN_MERGE_FANOUT)
                .take_while(|s| {
                    total += s.points_len();
                    total <= segment_max
                })
                .collect();
            if inputs.len() >= 2 {
                return Some(Kind::Merge { inputs });
            }
        }
        let worn = self.segments.iter().find(|l| {
            l.stale.len() >= flush_at
                && l.stale.len() as f32 > l.seg.points_len() as f32 * ANN_COMPACT_STALE
        })?;
        Some(Kind::Merge {
            inputs: vec![worn.seg.clone()],
        })
    }

    /// The points a build of `kind` starts from.
    fn points(&self, kind: &Kind) -> Vec<(Entry, Arc<[f32]>)> {
        match kind {
            Kind::Full { .. } => Vec::new(),
            Kind::Flush { taken } => taken
                .iter()
                .filter_map(|(row, seq)| {
                    let (v, _) = self.fresh.get(row)?;
                    Some((
                        Entry {
                            row: *row,
                            seq: *seq,
                        },
                        v.clone(),
                    ))
                })
                .collect(),
            Kind::Merge { inputs } => {
                let mut best: HashMap<i64, (Entry, Arc<[f32]>)> = HashMap::new();
                for seg in inputs {
                    let live = self.segments.iter().find(|l| Arc::ptr_eq(&l.seg, seg));
                    for (e, v) in seg.points() {
                        if live.is_some_and(|l| l.stale.contains(&e.row)) {
                            continue;
                        }
                        if best.get(&e.row).is_none_or(|(b, _)| b.seq < e.seq) {
                            best.insert(e.row, (e, Arc::from(v)));
                        }
                    }
                }
                best.into_values().collect()
            }
        }
    }
}

/// A first build's points cut into chunks of at most `max` (the index's
/// `ANN_SEGMENT_MAX`), of equal sizes.
fn chunks<T>(mut points: Vec<T>, max: usize) -> Vec<Vec<T>> {
    let n = points.len().div_ceil(max.max(1)).max(1);
    let size = points.len().div_ceil(n).max(1);
    let mut out = Vec::with_capacity(n);
    while points.len() > size {
        let rest = points.split_off(size);
        out.push(std::mem::replace(&mut points, rest));
    }
    out.push(points);
    out
}

/// The size tier of a segment of `points`.
pub(crate) fn tier(points: usize, flush_at: usize) -> u32 {
    let mut t = 0;
    let mut bound = flush_at.max(1) * ANN_MERGE_FANOUT;
    while points >= bound {
        t += 1;
        bound = bound.saturating_mul(ANN_MERGE_FANOUT);
    }
    t
}

mod index;
pub(super) use file::Persist;
pub use index::{AnnIndex, AnnStatus, Answer, Probe};

#[cfg(test)]
mod tests;
