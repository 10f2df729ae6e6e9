//! `AnnIndex`: every partition's segments, the background builds that
//! flush and merge them, and the two-step search.

use rmcp::schemars::{self, JsonSchema};
use std::collections::HashMap;
use std::sync::{Arc, mpsc};

use mnemo_core::model::Target;

use super::file::{self, Persist};
use super::segment::{Entry, Segment, SegmentId, dot, walk_shares};
use super::tail::{self, Points, Scan, Tail};
use super::{ANN_BUILD_NICE, Built, Job, Key, Kind, Live, Partition, Snapshot, chunks};

/// The graphs of every partition, and when to use them.
pub struct AnnIndex {
    /// Smallest partition worth a graph; `None` disables the index.
    min_rows: Option<usize>,
    /// Fresh vectors at which a segment is built (`ANN_FLUSH_AT`).
    flush_at: usize,
    /// The largest segment a build makes (`ANN_SEGMENT_MAX`).
    segment_max: usize,
    parts: HashMap<Key, Partition>,
    /// Saved next to the database after each build, when set.
    persist: Option<Persist>,
    /// Segments installed since the store last looked, with the change
    /// number after which the store must replay the log into the partition.
    installed: Vec<(Key, i64)>,
    /// When set, each chunk a build thread builds waits for a token from
    /// it (tests, to see a partition while its first build runs).
    gate: Option<Gate>,
}

/// Tokens that let a build thread build one chunk each.
type Gate = Arc<std::sync::Mutex<mpsc::Receiver<()>>>;

/// The index at a glance (`/health`).
#[derive(Debug, Clone, Copy, serde::Serialize, JsonSchema)]
pub struct AnnStatus {
    /// Whether large partitions are searched through the HNSW index.
    pub enabled: bool,
    /// Partitions served by graphs.
    pub graphs: usize,
    /// Graph segments over all partitions.
    pub segments: usize,
    /// Vectors in those segments.
    pub points: usize,
    /// Vectors written since their segments were built (searched exactly).
    pub fresh: usize,
    /// Builds in progress.
    pub building: usize,
}

/// What a partition can answer right now.
pub enum Answer {
    /// Use sqlite-vec (small, disabled, or being built).
    Exact,
    /// Candidates (rowid, cosine), best first.
    Approximate(Vec<(i64, f32)>),
}

/// A search between its two locked steps: the segments to walk and the
/// first build's chunks to scan (outside the lock), and the fresh vectors
/// already scored.
pub struct Probe {
    segments: Vec<Arc<Segment>>,
    tail: Vec<Arc<Scan>>,
    fresh: Vec<(i64, f32)>,
}

impl Probe {
    /// Walks each segment's graph for its share (`walk_shares`) and scans
    /// the tail (no lock held) for the `k` nearest: (entry, cosine).
    pub fn walk(&self, v: &[f32], k: usize) -> Vec<(Entry, f32)> {
        let scanned = tail::nearest(&self.tail, v, k);
        // The fresh vectors (at most `ANN_FLUSH_AT`) are left out of the
        // shares: the probe kept only their `k` nearest.
        let total = self.segments.iter().map(|s| s.points_len()).sum::<usize>()
            + self.tail.iter().map(|c| c.len()).sum::<usize>();
        let beside: Vec<f32> = scanned
            .iter()
            .map(|(_, c)| *c)
            .chain(self.fresh.iter().map(|(_, c)| *c))
            .collect();
        let mut found = walk_shares(&self.segments, v, k, total, &beside);
        found.extend(scanned);
        found
    }
}

impl AnnIndex {
    pub fn new(min_rows: Option<usize>) -> Self {
        Self {
            min_rows,
            flush_at: super::ANN_FLUSH_AT,
            segment_max: super::ANN_SEGMENT_MAX,
            parts: HashMap::new(),
            persist: None,
            installed: Vec::new(),
            gate: None,
        }
    }

    /// Builds a segment at `n` fresh vectors instead of `ANN_FLUSH_AT`
    /// (tests, at sizes that build in milliseconds).
    pub fn with_flush_at(mut self, n: usize) -> Self {
        self.flush_at = n.max(1);
        self
    }

    /// Builds segments of at most `n` points instead of `ANN_SEGMENT_MAX`
    /// (tests).
    #[cfg(test)]
    pub fn with_segment_max(mut self, n: usize) -> Self {
        self.segment_max = n.max(1);
        self
    }

    /// Builds wait for a token per chunk from the sender returned (tests).
    #[cfg(test)]
    pub fn gated(mut self) -> (Self, mpsc::Sender<()>) {
        let (tx, rx) = mpsc::channel();
        self.gate = Some(Arc::new(std::sync::Mutex::new(rx)));
        (self, tx)
    }

    /// Saves each segment built from now on (and is where they are loaded from).
    pub(in crate::storage) fn persist_to(&mut self, persist: Option<Persist>) {
        self.persist = persist;
    }

    /// A segment loaded from disk.
    pub(in crate::storage) fn install_loaded(&mut self, key: Key, seg: Segment) {
        let (from, _) = seg.seq_range();
        let p = self.parts.entry(key.clone()).or_default();
        p.segments.push(Live {
            seg: Arc::new(seg),
            stale: Default::default(),
        });
        // Replay from before the oldest point: a later change makes it stale.
        p.synced = if p.segments.len() == 1 {
            from
        } else {
            p.synced.min(from)
        };
        self.installed.retain(|(k, _)| k != &key);
        self.installed.push((key, p.synced));
    }

    /// Segments installed since the last call, with the change number after
    /// which the log must be replayed into their partition.
    pub(in crate::storage) fn take_installed(&mut self) -> Vec<(Key, i64)> {
        self.collect();
        std::mem::take(&mut self.installed)
    }

    /// The log has been replayed into `key` up to `seq`.
    pub(in crate::storage) fn synced(&mut self, key: &Key, seq: i64) {
        if let Some(p) = self.parts.get_mut(key) {
            p.synced = p.synced.max(seq);
        }
    }

    pub fn enabled(&self) -> bool {
        self.min_rows.is_some()
    }

    /// Forget everything (the vectors were reset).
    pub fn clear(&mut self) {
        self.parts.clear();
        self.installed.clear();
    }

    /// Forget one partition's segments (rebuilt on demand).
    pub(in crate::storage) fn forget(&mut self, key: &Key) {
        self.parts.remove(key);
    }

    /// Change `seq` wrote `v` for `rowid`.
    pub fn put(&mut self, target: Target, namespace: &str, rowid: i64, v: &[f32], seq: i64) {
        let key = (target, namespace.to_string());
        if let Some(p) = self.parts.get_mut(&key) {
            p.put(rowid, v, seq);
            if p.fresh.len() >= self.flush_at {
                self.schedule(&key);
            }
        }
    }

    /// Change `seq` deleted `rowid`'s vector: no segment returns it again.
    pub fn remove(&mut self, target: Target, namespace: &str, rowid: i64, seq: i64) {
        if let Some(p) = self.parts.get_mut(&(target, namespace.to_string())) {
            p.remove(rowid, seq);
        }
    }

    /// Replaying change `seq` of `row`: marks older points stale; true when
    /// a live segment holds the row at that version or later (nothing more
    /// to do).
    pub(in crate::storage) fn settled(
        &mut self,
        target: Target,
        namespace: &str,
        row: i64,
        seq: i64,
    ) -> bool {
        let Some(p) = self.parts.get_mut(&(target, namespace.to_string())) else {
            return false;
        };
        p.mark_older(row, seq);
        p.holds(row, seq)
    }

    /// Installs what builds have finished, and starts the next builds they
    /// call for.
    fn collect(&mut self) {
        let mut done = Vec::new();
        for (key, p) in self.parts.iter_mut() {
            let Some(mut job) = p.pending.take() else {
                continue;
            };
            let mut over = false;
            while let Ok(msg) = job.rx.try_recv() {
                over = receive(&self.persist, key, p, &mut job, msg, &mut self.installed);
                if over {
                    break;
                }
            }
            if over {
                done.push(key.clone());
            } else {
                p.pending = Some(job);
            }
        }
        for key in done {
            self.schedule(&key);
        }
    }

    /// Starts the flush, merge or compaction `key` needs, if any.
    fn schedule(&mut self, key: &Key) {
        let Some(p) = self.parts.get_mut(key) else {
            return;
        };
        let Some(kind) = p.next(self.flush_at, self.segment_max) else {
            return;
        };
        let points = p.points(&kind);
        match spawn(
            self.persist.clone(),
            self.gate.clone(),
            key.clone(),
            vec![points.into()],
        ) {
            Ok(rx) => {
                p.pending = Some(Job {
                    rx,
                    kind,
                    built: Vec::new(),
                })
            }
            Err(e) => tracing::warn!(error = %e, "HNSW segment build not started"),
        }
    }

    /// Starts the first background build of `key` from `snapshot` — (rowid,
    /// vector) and the last change number it includes — once the partition
    /// (`rows` vectors) is large enough; its points are scanned (`tail.rs`)
    /// until their segments are installed. Later builds (flushes, merges)
    /// are started as writes and installs call for them.
    pub fn maybe_build(
        &mut self,
        target: Target,
        namespace: &str,
        rows: usize,
        snapshot: impl FnOnce() -> anyhow::Result<Snapshot>,
    ) -> anyhow::Result<()> {
        self.collect();
        let Some(min) = self.min_rows else {
            return Ok(());
        };
        let key = (target, namespace.to_string());
        if let Some(p) = self.parts.get(&key)
            && (p.pending.is_some() || !p.segments.is_empty())
        {
            self.schedule(&key);
            return Ok(());
        }
        if rows < min {
            return Ok(());
        }
        let (rows, seq) = snapshot()?;
        let points = rows
            .into_iter()
            .map(|(row, v)| (Entry { row, seq }, v.into()))
            .collect();
        let parts: Vec<Points> = chunks(points, self.segment_max)
            .into_iter()
            .filter(|c| !c.is_empty())
            .map(Points::from)
            .collect();
        let rx = spawn(
            self.persist.clone(),
            self.gate.clone(),
            key.clone(),
            parts.clone(),
        )?;
        let scans = parts.into_iter().map(|c| Arc::new(Scan::new(c))).collect();
        let p = self.parts.entry(key).or_default();
        p.tail = Some(Tail::new(seq, scans));
        p.pending = Some(Job {
            rx,
            kind: Kind::Full { seq },
            built: Vec::new(),
        });
        Ok(())
    }

    /// The first step of a search for the `k` nearest: `None` when the
    /// partition must be searched exactly, else the segments to walk and
    /// the `k` nearest fresh vectors (no other fresh one can be among the
    /// answer's `k`). `admit` merged and sorted all of them, up to
    /// `ANN_FLUSH_AT`: 4.3% of the writer deduplicating into a filled
    /// 100,000-row store, 1.3% now (docs/benchmarks.md).
    pub fn probe(&mut self, target: Target, namespace: &str, v: &[f32], k: usize) -> Option<Probe> {
        self.collect();
        let p = self.parts.get(&(target, namespace.to_string()))?;
        if p.segments.is_empty() && p.tail.is_none() {
            return None;
        }
        Some(Probe {
            segments: p.segments.iter().map(|l| l.seg.clone()).collect(),
            tail: p
                .tail
                .as_ref()
                .map(|t| t.chunks.clone())
                .unwrap_or_default(),
            fresh: nearest_fresh(
                p.fresh
                    .iter()
                    .map(|(row, (w, _))| (*row, dot(v, w)))
                    .collect(),
                k,
            ),
        })
    }

    /// The last step: the walked candidates still current, with the fresh
    /// ones, the `k` best (rowid, cosine).
    pub fn admit(
        &self,
        target: Target,
        namespace: &str,
        probe: Probe,
        walked: Vec<(Entry, f32)>,
        k: usize,
    ) -> Answer {
        let Some(p) = self.parts.get(&(target, namespace.to_string())) else {
            return Answer::Exact;
        };
        let mut best: HashMap<i64, f32> = probe.fresh.into_iter().collect();
        for (e, score) in walked {
            if p.current(e.row, e.seq) {
                let s = best.entry(e.row).or_insert(score);
                *s = s.max(score);
            }
        }
        let mut out: Vec<(i64, f32)> = best.into_iter().collect();
        out.sort_by(nearest_first);
        out.truncate(k);
        Answer::Approximate(out)
    }

    /// The whole search under one lock (the tests).
    #[cfg(test)]
    pub fn search(&mut self, target: Target, namespace: &str, v: &[f32], k: usize) -> Answer {
        let Some(probe) = self.probe(target, namespace, v, k) else {
            return Answer::Exact;
        };
        let walked = probe.walk(v, k);
        self.admit(target, namespace, probe, walked, k)
    }

    /// `rowid`'s current vector when the partition's index holds it (`None`:
    /// ask the table).
    pub fn vector(&self, target: Target, namespace: &str, rowid: i64) -> Option<Vec<f32>> {
        let p = self.parts.get(&(target, namespace.to_string()))?;
        if let Some((v, _)) = p.fresh.get(&rowid) {
            return Some(v.to_vec());
        }
        p.segments
            .iter()
            .filter(|l| !l.stale.contains(&rowid))
            .filter_map(|l| Some((l.seg.seq_of(rowid)?, l.seg.vector(rowid)?)))
            .max_by_key(|(seq, _)| *seq)
            .map(|(_, v)| v.to_vec())
    }

    /// What the index holds now.
    pub fn status(&mut self) -> AnnStatus {
        self.collect();
        let parts = || self.parts.values();
        AnnStatus {
            enabled: self.enabled(),
            graphs: parts().filter(|p| !p.segments.is_empty()).count(),
            segments: parts().map(|p| p.segments.len()).sum(),
            points: parts()
                .flat_map(|p| p.segments.iter().map(|l| l.seg.points_len()))
                .sum(),
            fresh: parts().map(|p| p.fresh.len()).sum(),
            building: parts().filter(|p| p.pending.is_some()).count(),
        }
    }

    /// Waits until no build is running or called for (benchmarks, tests);
    /// returns (points, build ms) of every segment.
    pub fn wait(&mut self) -> Vec<(usize, u128)> {
        loop {
            let mut waited = false;
            for (key, p) in self.parts.iter_mut() {
                let Some(mut job) = p.pending.take() else {
                    continue;
                };
                waited = true;
                // A build that failed sends no `Done`: its job is dropped.
                while let Ok(msg) = job.rx.recv() {
                    if receive(&self.persist, key, p, &mut job, msg, &mut self.installed) {
                        break;
                    }
                }
            }
            let keys: Vec<Key> = self.parts.keys().cloned().collect();
            for key in &keys {
                self.schedule(key);
            }
            if !waited && self.parts.values().all(|p| p.pending.is_none()) {
                break;
            }
        }
        self.parts
            .values()
            .flat_map(|p| {
                p.segments
                    .iter()
                    .map(|l| (l.seg.points_len(), l.seg.build_ms))
            })
            .collect()
    }
}

/// A search's order: the higher cosine first, ties by row.
fn nearest_first(a: &(i64, f32), b: &(i64, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The first `k` of `scored` in [`nearest_first`] order, unordered.
fn nearest_fresh(mut scored: Vec<(i64, f32)>, k: usize) -> Vec<(i64, f32)> {
    if k == 0 {
        return Vec::new();
    }
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, nearest_first);
        scored.truncate(k);
    }
    scored
}

/// Applies one message of `job`'s build to `p`, and records each install
/// (with the change number to replay the log from) in `installed`. A first
/// build's segments are installed as they come, each taking its chunk out
/// of the tail; a flush's or merge's wait for `Done`. True when the job is
/// over.
fn receive(
    persist: &Option<Persist>,
    key: &Key,
    p: &mut Partition,
    job: &mut Job,
    msg: Built,
    installed: &mut Vec<(Key, i64)>,
) -> bool {
    let full = matches!(job.kind, Kind::Full { .. });
    match msg {
        Built::Segment(seg) if full => {
            installed.push((key.clone(), install(persist, key, p, vec![seg], &job.kind)));
            false
        }
        Built::Segment(seg) => {
            job.built.push(seg);
            false
        }
        Built::Done if full => {
            p.tail = None;
            // Files of an earlier first build of this partition go.
            if let Some(persist) = persist {
                let kept: Vec<SegmentId> = p.segments.iter().map(|l| l.seg.id()).collect();
                file::remove_others(persist, key, &kept);
            }
            true
        }
        Built::Done => {
            let built = std::mem::take(&mut job.built);
            installed.push((key.clone(), install(persist, key, p, built, &job.kind)));
            true
        }
    }
}

/// Installs built segments into `p` and brings the saved files in line:
/// each new segment was saved by its build; the files of the segments it
/// replaces go. Returns the change number to replay the log from.
fn install(
    persist: &Option<Persist>,
    key: &Key,
    p: &mut Partition,
    built: Vec<Segment>,
    kind: &Kind,
) -> i64 {
    let replaced: Vec<SegmentId> = match kind {
        Kind::Merge { inputs } => inputs.iter().map(|s| s.id()).collect(),
        Kind::Full { .. } | Kind::Flush { .. } => Vec::new(),
    };
    let kept: Vec<SegmentId> = built.iter().map(Segment::id).collect();
    let from = p.install(built, kind);
    if let Some(persist) = persist {
        for id in replaced.into_iter().filter(|id| !kept.contains(id)) {
            file::remove(persist, key, id);
        }
    }
    from
}

/// Builds a segment of each chunk of points (one after the other, in
/// order) on a thread of its own at `ANN_BUILD_NICE`, saves each and sends
/// it as it is built, then `Done`.
fn spawn(
    persist: Option<Persist>,
    gate: Option<Gate>,
    key: Key,
    chunks: Vec<Points>,
) -> anyhow::Result<mpsc::Receiver<Built>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("mnemo-hnsw".into())
        .spawn(move || {
            crate::priority::lower(ANN_BUILD_NICE);
            for points in chunks.into_iter().filter(|c| !c.is_empty()) {
                if let Some(gate) = &gate {
                    let token = gate.lock().map(|rx| rx.recv());
                    if !matches!(token, Ok(Ok(()))) {
                        return;
                    }
                }
                // A graph that cannot be read as `walk.rs` walks it (see
                // `Segment::build`) is no build: nothing more is installed,
                // and the partition goes on searching what it searches now.
                let build = || Segment::build(&points);
                let seg = match builders() {
                    Some(pool) => pool.install(build),
                    None => build(),
                };
                let seg = match seg {
                    Ok(seg) => seg,
                    Err(e) => {
                        tracing::error!(error = %format!("{e:#}"), "an HNSW build failed");
                        return;
                    }
                };
                if let Some(persist) = &persist
                    && let Err(e) = file::save(persist, &key, &seg)
                {
                    tracing::warn!(error = %format!("{e:#}"), "an HNSW segment was not saved; it is rebuilt after a restart");
                }
                if tx.send(Built::Segment(seg)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Built::Done);
        })?;
    Ok(rx)
}

/// The threads instant-distance builds on: one per core, at
/// `ANN_BUILD_NICE`, so a request preempts a build rather than waiting out
/// its time slice (the global pool's threads run at the requests'
/// priority). `None` if the pool could not be made: builds then use the
/// global pool.
fn builders() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("mnemo-hnsw-{i}"))
            .start_handler(|_| {
                crate::priority::lower(ANN_BUILD_NICE);
            })
            .build()
            .map_err(|e| tracing::warn!(error = %e, "HNSW build threads not made; builds use the global pool"))
            .ok()
    })
    .as_ref()
}
