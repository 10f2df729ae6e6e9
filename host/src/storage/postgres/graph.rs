//! Which namespaces' vectors are in the HNSW graph, and moving them in.
//!
//! A namespace under `EXACT_MAX_ROWS` vectors is searched exactly, from the
//! covering index of the rows outside the graph (`search.rs`). A namespace
//! that reaches the threshold is listed in `vec_graph`, and the server
//! leading the backfill moves its vectors into the graph in the
//! background. No write pays the graph's insert: every vector is written
//! outside (`put_vector`) and moved in later. A search reads both sides at
//! every moment — the graph for a listed namespace's moved rows, exactly
//! for every row not yet moved — so no vector is out of reach while a move
//! runs.
//!
//! The leader moves the waiting rows one of two ways: a few batches a
//! round (`GRAPH_BATCH` rows a statement, each inserted into the index),
//! or, when many wait, a rebuild: the index dropped, the rows marked, the
//! index built again over every marked row (`CREATE INDEX CONCURRENTLY`,
//! pgvector's bulk build, `BULK_SPEEDUP` times faster a row; `rebuild_due`
//! says when). A rebuild runs on a connection of its own; while it runs
//! the graph's rows are searched without their index, exactly. A rebuild
//! that stops half way (the server killed) leaves the index missing or
//! invalid; the next leader's round builds it again.
//!
//! The leader finds the namespaces to list without scanning the store each
//! round: it counts every namespace's vectors outside the graph once when
//! it takes the lead, then adds the rows written past its watermark, and
//! counts a namespace exactly only when that estimate reaches the
//! threshold (deleted vectors make it high; a row committed behind the
//! watermark makes it low, so a namespace is listed a write late).

use std::collections::HashMap;
use std::thread::JoinHandle;

use mnemo_core::model::Target;

use super::search::EXACT_MAX_ROWS;
use super::{PgStore, unpoisoned};
use crate::storage::ann::AnnStatus;
use crate::storage::vectors::VectorState;

/// The vector tables, in the order of [`Surveys`].
pub(super) const TABLES: [&str; 2] = ["memories", "episodes"];

/// HNSW build parameters (pgvector's defaults, named: `m` links per node,
/// `ef_construction` candidates while building).
const HNSW_M: u32 = 16;
const HNSW_EF_CONSTRUCTION: u32 = 64;

/// The statement creating table `t`'s HNSW index over the rows marked
/// `graph`; `concurrently` while the table takes writes (a rebuild).
pub(super) fn graph_index(t: &str, concurrently: bool) -> String {
    let how = if concurrently { "CONCURRENTLY " } else { "" };
    format!(
        "CREATE INDEX {how}IF NOT EXISTS vec_{t}_graph ON vec_{t} USING hnsw (embedding vector_cosine_ops) \
             WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE graph"
    )
}

/// Rows moved into the graph per statement, so a statement holds its rows
/// briefly: 256 took 0.2–0.5 s into a 64-d graph of 5,000–25,000 vectors
/// (`\timing`, and the round measured below).
const GRAPH_BATCH: i64 = 256;

/// How long one round of the background move goes on (the server's
/// embedding worker pauses `BACKFILL_EVERY`, 0.5 s, between rounds), so a
/// round moves a few batches, not one. Measured with `mnemo serve` on a
/// copy of the 100,000-memory store given a namespace of 30,000 64-d
/// vectors and no requests: 250–360 rows a second while the graph grew
/// from 15,000 to 25,000 (a batch there takes ~0.5 s), so 20,000 rows move
/// in about a minute and a quarter.
const GRAPH_ROUND: std::time::Duration = std::time::Duration::from_secs(1);

/// How many times faster a row enters the graph by pgvector's bulk build
/// than by an insert into the built index: 200,000 random 64-d vectors
/// indexed by `CREATE INDEX` in 51.5 s (3,880 a second), then 2,000 more
/// inserted into that index in 4.4 s (452 a second), `\timing` on this
/// machine (2 cores, Postgres 18.3, pgvector 0.8.2, one run with a cargo
/// build beside it): 8.6, rounded down.
const BULK_SPEEDUP: i64 = 8;

/// Rows marked per statement of a rebuild (the index is gone then, so a
/// mark costs a row's update, not an insert into the graph).
const MARK_BATCH: i64 = 20_000;

/// `maintenance_work_mem` for a rebuild's session: pgvector builds the
/// graph in memory while it fits and far slower once it does not (its
/// NOTICE "hnsw graph no longer fits into maintenance_work_mem"). A point
/// takes its vector (4 bytes a dimension) and about `BUILD_POINT_BYTES`
/// more (its element, and 2·m = 32 neighbours at level 0 with their
/// distances, rounded up: an estimate from the graph's shape, not
/// measured); between Postgres's default of 64 MB and
/// `BUILD_MEMORY_MAX_MB`.
const BUILD_POINT_BYTES: u64 = 1024;
const BUILD_MEMORY_MIN_MB: u64 = 64;
const BUILD_MEMORY_MAX_MB: u64 = 4096;

/// How long no row may have joined the backlog before it counts as
/// settled (`rebuild_due`). An import body is one transaction, so its
/// rows arrive all at once when it commits: the bench's bodies of 20,000
/// commit every ~30 s at ~650 imported a second.
const SETTLED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether to rebuild the graph over its `points` and the `waiting` rows.
/// A single batch never rebuilds. While rows still arrive (`settled`
/// false: within `SETTLED_AFTER`, as in a bulk import) a rebuild waits
/// until the backlog matches the graph, so the rebuilds of a long import
/// at most double its rows' indexing; once the backlog has settled, a
/// rebuild starts when it ends sooner than the batches would: it indexes
/// `points + waiting` rows `BULK_SPEEDUP` times faster a row than the
/// batches insert `waiting`.
pub(super) fn rebuild_due(points: i64, waiting: i64, settled: bool) -> bool {
    if waiting <= GRAPH_BATCH {
        return false;
    }
    if settled {
        waiting * (BULK_SPEEDUP - 1) >= points
    } else {
        waiting >= points
    }
}

/// The memory a rebuild of `points` vectors of `dimension` asks for, in MB.
fn build_memory_mb(points: i64, dimension: u32) -> u64 {
    let bytes = points.max(0) as u64 * (4 * u64::from(dimension) + BUILD_POINT_BYTES);
    (bytes >> 20).clamp(BUILD_MEMORY_MIN_MB, BUILD_MEMORY_MAX_MB)
}

/// The leader's state of one vector table: its running count of vectors
/// per namespace outside the graph, from the rows past `seen`; the
/// vectors in the graph (counted once, then kept by the moves: deleted
/// rows make it high, so a rebuild comes a little later than it could);
/// whether its last rebuild failed (the next runs without parallel
/// workers: `rebuild`); the rows of listed namespaces waiting after the
/// last round's moves (unknown until the leader's first round) and when
/// the count last grew past it; and a rebuild running on its own
/// connection, which answers the vectors it left in the graph.
#[derive(Default)]
pub(super) struct Survey {
    seen: i64,
    counts: HashMap<String, i64>,
    points: Option<i64>,
    failed: bool,
    waiting: Option<i64>,
    arrived: Option<std::time::Instant>,
    rebuild: Option<JoinHandle<anyhow::Result<i64>>>,
}

/// Surveys of the two vector tables, in the order of [`TABLES`].
pub(super) type Surveys = std::cell::RefCell<[Survey; 2]>;

/// How a table's waiting rows move in this round.
#[derive(Debug, PartialEq, Eq)]
enum Move {
    Nothing,
    Batches,
    Rebuilding,
}

/// Up to `$2` rows of table `t`'s listed namespaces (`$1` the table)
/// waiting outside the graph: what the moves mark and the leader counts.
fn waiting_sql(t: &str) -> String {
    format!(
        "SELECT v.row FROM vec_graph g JOIN vec_{t} v ON v.namespace = g.namespace AND NOT v.graph \
         WHERE g.target = $1 LIMIT $2"
    )
}

/// The statement moving up to `$2` waiting rows into the graph.
fn mark_sql(t: &str) -> String {
    format!(
        "UPDATE vec_{t} SET graph = true WHERE row IN ({} FOR UPDATE OF v SKIP LOCKED)",
        waiting_sql(t)
    )
}

/// The statement counting table `t`'s vectors in the graph (a scan).
fn points_sql(t: &str) -> String {
    format!("SELECT COUNT(*) FROM vec_{t} WHERE graph")
}

/// Rebuilds table `t`'s graph on a connection of its own (`url`): drops
/// the index (an invalid one too, left by a rebuild that stopped), marks
/// every waiting row of the listed namespaces, vacuums, and builds the
/// index over the marked rows without blocking writes. Returns the rows
/// in the graph.
///
/// Not `parallel`, the build runs in the backend alone: pgvector's
/// parallel build asks `maintenance_work_mem` of shared memory at once,
/// which a container's small `/dev/shm` refuses ("could not resize shared
/// memory segment", Docker's 64 MB; pgvector issue 453), so a rebuild
/// after a failed one is not parallel.
fn rebuild(url: &str, t: &str, memory_mb: u64, parallel: bool) -> anyhow::Result<i64> {
    let started = std::time::Instant::now();
    let mut db = super::connect(url)?;
    // A bulk build runs minutes over a million rows, and a concurrent
    // build waits for every transaction that could see the old index.
    db.batch_execute(&format!(
        "SET statement_timeout = 0; SET lock_timeout = 0; SET maintenance_work_mem = '{memory_mb}MB'"
    ))?;
    if !parallel {
        db.batch_execute("SET max_parallel_maintenance_workers = 0")?;
    }
    db.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS vec_{t}_graph"))?;
    let mark = mark_sql(t);
    let mut marked = 0;
    loop {
        let n = db.execute(&mark, &[&t, &MARK_BATCH])?;
        marked += n;
        if n == 0 {
            break;
        }
    }
    // Each mark left a dead row version behind in the heap and in the
    // covering index of the rows outside the graph, which every exact
    // search of the namespace would step over until autovacuum came.
    db.batch_execute(&format!("VACUUM (ANALYZE) vec_{t}"))?;
    db.batch_execute(&graph_index(t, true))?;
    let points: i64 = db.query_one(&points_sql(t), &[])?.get(0);
    tracing::info!(
        table = t,
        marked,
        points,
        parallel,
        seconds = started.elapsed().as_secs_f64(),
        "the HNSW graph is rebuilt"
    );
    Ok(points)
}

impl PgStore {
    /// Lists the namespaces that reached `EXACT_MAX_ROWS` vectors and
    /// moves the waiting rows of listed namespaces into the graph: a
    /// rebuild started on its own connection when that ends sooner (or
    /// the index is missing or invalid), else `GRAPH_BATCH` rows per table
    /// and statement until none is left or `GRAPH_ROUND` has passed.
    /// Returns how many rows moved by batches. The caller holds no
    /// transaction.
    pub fn grow_graphs(&self) -> anyhow::Result<u64> {
        if !self.vectors_on() {
            return Ok(0);
        }
        let started = std::time::Instant::now();
        let mut batched = Vec::new();
        for (i, t) in TABLES.into_iter().enumerate() {
            self.list_large(i, t)?;
            if self.choose_move(i, t)? == Move::Batches {
                batched.push(i);
            }
        }
        let mut moved = 0;
        loop {
            let mut round = 0;
            for &i in &batched {
                let t = TABLES[i];
                let n = self.db().execute(&mark_sql(t), &[&t, &GRAPH_BATCH])?;
                let mut surveys = self.surveys.borrow_mut();
                let s = &mut surveys[i];
                s.points = s.points.map(|p| p + n as i64);
                s.waiting = s.waiting.map(|w| w - n as i64);
                round += n;
            }
            moved += round;
            if round == 0 || started.elapsed() >= GRAPH_ROUND {
                return Ok(moved);
            }
        }
    }

    /// How table `t`'s waiting rows move this round (collecting a
    /// finished rebuild, starting one when it ends sooner or the index is
    /// not serving).
    fn choose_move(&self, i: usize, t: &str) -> anyhow::Result<Move> {
        let running = self.surveys.borrow_mut()[i].rebuild.take();
        if let Some(handle) = running {
            if !handle.is_finished() {
                self.surveys.borrow_mut()[i].rebuild = Some(handle);
                return Ok(Move::Rebuilding);
            }
            let points = match handle.join() {
                Ok(Ok(points)) => Some(points),
                Ok(Err(e)) => {
                    tracing::warn!(table = t, error = %format!("{e:#}"), "rebuilding the HNSW graph failed; will retry without parallel workers");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        table = t,
                        "rebuilding the HNSW graph panicked; will retry without parallel workers"
                    );
                    None
                }
            };
            let s = &mut self.surveys.borrow_mut()[i];
            s.failed = points.is_none();
            s.points = points;
        }
        let points = match self.surveys.borrow()[i].points {
            Some(p) => p,
            None => self.count_points(t)?,
        };
        // Enough rows to decide (`rebuild_due` asks at most as many as
        // the graph holds, and more than a batch).
        let cap = points.max(GRAPH_BATCH) + 1;
        let waiting: i64 = self
            .db()
            .query_one(
                &format!("SELECT COUNT(*) FROM ({}) w", waiting_sql(t)),
                &[&t, &cap],
            )?
            .get(0);
        let settled = {
            let mut surveys = self.surveys.borrow_mut();
            let s = &mut surveys[i];
            s.points = Some(points);
            // Only rows written can raise the count between rounds (the
            // moves are taken off it): a backlog the leader finds on its
            // first round counts as settled.
            if s.waiting.is_some_and(|before| waiting > before) {
                s.arrived = Some(std::time::Instant::now());
            }
            s.waiting = Some(waiting);
            s.arrived.is_none_or(|at| at.elapsed() >= SETTLED_AFTER)
        };
        let serving = self.graph_index_valid(t)?;
        if serving && waiting == 0 {
            return Ok(Move::Nothing);
        }
        if serving && !rebuild_due(points, waiting, settled) {
            return Ok(Move::Batches);
        }
        let dimension = match self.vector_state() {
            VectorState::Enabled { dimension, .. } => dimension,
            VectorState::Disabled { .. } => return Ok(Move::Nothing),
        };
        let memory = build_memory_mb(points + waiting, dimension);
        let (url, table) = (self.url.clone(), t.to_string());
        let parallel = !self.surveys.borrow()[i].failed;
        tracing::info!(
            table = t,
            points,
            waiting,
            index_serving = serving,
            parallel,
            "rebuilding the HNSW graph"
        );
        let handle = std::thread::Builder::new()
            .name("mnemo-graph-build".into())
            .spawn(move || rebuild(&url, &table, memory, parallel))?;
        let mut surveys = self.surveys.borrow_mut();
        surveys[i].rebuild = Some(handle);
        // The rebuild marks every row waiting now: the rows waiting after
        // it arrived meanwhile.
        surveys[i].waiting = Some(0);
        Ok(Move::Rebuilding)
    }

    /// The vectors of table `t` in the graph, counted (a scan: once per
    /// leader, and after a failed rebuild).
    fn count_points(&self, t: &str) -> anyhow::Result<i64> {
        Ok(self.db().query_one(&points_sql(t), &[])?.get(0))
    }

    /// Whether table `t`'s graph index exists and is valid (a concurrent
    /// build that has not finished, or stopped, leaves it invalid).
    fn graph_index_valid(&self, t: &str) -> anyhow::Result<bool> {
        let valid: Option<bool> = self
            .db()
            .query_opt(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
                &[&format!("vec_{t}_graph")],
            )?
            .map(|r| r.get(0));
        Ok(valid == Some(true))
    }

    /// Adds the vectors written since the last survey to each namespace's
    /// count, and lists each namespace whose exact count reached the
    /// threshold.
    fn list_large(&self, i: usize, t: &str) -> anyhow::Result<()> {
        let mut surveys = self.surveys.borrow_mut();
        let s = &mut surveys[i];
        let rows = self.db().query(
            &format!(
                "SELECT v.namespace, COUNT(*), MAX(v.row) FROM vec_{t} v WHERE v.row > $1 AND NOT v.graph \
                 GROUP BY v.namespace"
            ),
            &[&s.seen],
        )?;
        for r in rows {
            let (ns, n, last): (String, i64, i64) = (r.get(0), r.get(1), r.get(2));
            s.seen = s.seen.max(last);
            *s.counts.entry(ns).or_default() += n;
        }
        let due: Vec<String> = s
            .counts
            .iter()
            .filter(|(_, n)| **n >= EXACT_MAX_ROWS)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in due {
            let exact: i64 = self
                .db()
                .query_one(
                    &format!("SELECT COUNT(*) FROM vec_{t} WHERE namespace = $1 AND NOT graph"),
                    &[&ns],
                )?
                .get(0);
            if exact < EXACT_MAX_ROWS {
                s.counts.insert(ns, exact);
                continue;
            }
            let listed = self.db().execute(
                "INSERT INTO vec_graph (target, namespace) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&t, &ns],
            )?;
            if listed > 0 {
                tracing::info!(table = t, namespace = %ns, vectors = exact, "the namespace moves into the HNSW graph");
            }
            s.counts.remove(&ns);
        }
        Ok(())
    }

    /// Whether namespace `ns` of `target` is known to be listed in the
    /// graph (so some of its rows may be there). A listing is never
    /// withdrawn but by a reset of the vectors, so a yes is kept
    /// ([`Self::note_in_graph`]); a no is asked again with each exact
    /// search (`search.rs`), in its statement.
    pub(super) fn known_in_graph(&self, target: Target, ns: &str) -> bool {
        unpoisoned(self.listed.lock()).contains(&(target, ns.to_string()))
    }

    pub(super) fn note_in_graph(&self, target: Target, ns: &str) {
        unpoisoned(self.listed.lock()).insert((target, ns.to_string()));
    }

    /// The graph at a glance (`/health`, `/metrics`), in the SQLite
    /// index's terms: `graphs` the listed namespaces, `segments` the tables
    /// whose graph holds one, `points` the vectors in the graphs (counted:
    /// a scan of the vector tables, as the health's integrity counts are),
    /// `fresh` the listed namespaces' vectors not moved in yet, `building`
    /// the listed namespaces with some. While the index is rebuilt, its
    /// rows count as fresh and every listed namespace as building.
    pub fn graph_status(&self) -> anyhow::Result<AnnStatus> {
        let mut status = AnnStatus {
            enabled: self.vectors_on(),
            graphs: 0,
            segments: 0,
            points: 0,
            fresh: 0,
            building: 0,
        };
        if !status.enabled {
            return Ok(status);
        }
        for t in TABLES {
            let rows = self.db().query(
                &format!(
                    "SELECT g.namespace, (SELECT COUNT(*) FROM vec_{t} v WHERE v.namespace = g.namespace AND NOT v.graph) \
                     FROM vec_graph g WHERE g.target = $1"
                ),
                &[&t],
            )?;
            if rows.is_empty() {
                continue;
            }
            let points: i64 = self.db().query_one(&points_sql(t), &[])?.get(0);
            let waiting: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
            status.graphs += rows.len();
            status.segments += 1;
            status.fresh += waiting.iter().sum::<i64>().max(0) as usize;
            if self.graph_index_valid(t)? {
                status.points += points.max(0) as usize;
                status.building += waiting.iter().filter(|n| **n > 0).count();
            } else {
                // A rebuild runs (or stopped): every marked row is searched
                // exactly until the index is built, and every listed
                // namespace waits for it.
                status.fresh += points.max(0) as usize;
                status.building += rows.len();
            }
        }
        Ok(status)
    }

    /// Forgets the kept listings (the vectors were reset).
    pub(super) fn forget_listings(&self) {
        unpoisoned(self.listed.lock()).clear();
        *self.surveys.borrow_mut() = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rebuild_when_it_ends_before_the_batches() {
        // An empty graph: any backlog past one batch.
        assert!(!rebuild_due(0, GRAPH_BATCH, false));
        assert!(rebuild_due(0, GRAPH_BATCH + 1, false));
        // A graph of 700,000 and a settled backlog: batches until 100,000
        // wait (a seventh).
        assert!(!rebuild_due(700_000, 99_999, true));
        assert!(rebuild_due(700_000, 100_000, true));
        // Rows still arriving: not until the backlog matches the graph.
        assert!(!rebuild_due(700_000, 699_999, false));
        assert!(rebuild_due(700_000, 700_000, false));
    }

    #[test]
    fn a_rebuild_asks_memory_for_its_points_within_bounds() {
        assert_eq!(build_memory_mb(0, 64), BUILD_MEMORY_MIN_MB);
        // A million 64-d points: 1,280 bytes each.
        assert_eq!(build_memory_mb(1_000_000, 64), 1_220);
        assert_eq!(build_memory_mb(10_000_000, 768), BUILD_MEMORY_MAX_MB);
    }
}
