//! Which namespaces' vectors are in the HNSW graph, and the backfill
//! leader's builds of it.
//!
//! A namespace under `EXACT_MAX_ROWS` vectors is searched exactly, from the
//! covering index of the rows outside the graph (`search.rs`). A namespace
//! that reaches the threshold is listed in `vec_graph`: its rows join the
//! open segment (`segments.rs`), and from then on its writes are written
//! there. The server leading the backfill seals the open segment when it
//! holds `ANN_FLUSH_AT` rows and builds each segment's index, then merges
//! indexes, one build per table at a time on a connection of its own. A
//! search reads the graph's indexes and, exactly, every row none of them
//! holds, so no vector is out of reach while a build runs.
//!
//! The leader finds the namespaces to list without scanning the store each
//! round: it counts every namespace's vectors outside the graph once when
//! it takes the lead, then adds the rows written past its watermark, and
//! counts a namespace exactly only when that estimate reaches the
//! threshold (deleted vectors make it high; a row committed behind the
//! watermark makes it low, so a namespace is listed a write late).

use std::collections::HashMap;
use std::thread::JoinHandle;
use std::time::Instant;

use mnemo_core::model::Target;

use super::knn::EXACT_MAX_ROWS;
use super::segments::{COVER_TTL, Cover, Job, catalog, compact_due, merge_due};
use super::sql::table;
use super::{PgStore, R, pg, unpoisoned};
use crate::storage::ann::{ANN_FLUSH_AT, AnnStatus};
use crate::storage::vectors::VectorState;

pub(super) use super::segments::{TABLES, segments_of, table_index};

/// Rows of newly listed namespaces moved into the open segment per
/// statement (an update of the row's `seg`: no index holds the open
/// segment, so no graph insert).
const ADOPT_BATCH: i64 = 20_000;

/// The leader's state of one vector table: its running count of vectors
/// per namespace outside the graph, from the rows past `seen`; the build
/// running on its own connection, and whether it was a seal's.
#[derive(Default)]
pub(super) struct Survey {
    seen: i64,
    counts: HashMap<String, i64>,
    build: Option<JoinHandle<anyhow::Result<()>>>,
    last_sealed: bool,
}

/// What one round of the backfill leader did: the rows it moved into the
/// open segment, and the tables with a build running after it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GraphRound {
    pub moved: u64,
    pub building: usize,
}

/// Surveys of the two vector tables, in the order of [`TABLES`].
pub(super) type Surveys = std::cell::RefCell<[Survey; 2]>;

/// Each table's cover as last read from the catalog, and when; shared by
/// a server's connections.
pub(super) type Covers = std::sync::Arc<std::sync::Mutex<[Option<(Instant, Cover)>; 2]>>;

/// The rows of table `t`'s listed namespaces (`$1` the table) outside
/// every segment, as a `FROM` clause over `v`: written before the listing,
/// or by a write that did not see it. What `adopt` moves and `/health`
/// counts.
fn strays_sql(t: &str) -> String {
    format!(
        "FROM vec_graph g JOIN vec_{t} v ON v.namespace = g.namespace AND v.seg IS NULL WHERE g.target = $1"
    )
}

/// The rows counted in the sealed segments of `range`.
fn rows_in(sealed: &[(i32, i64)], (lo, hi): (i32, i32)) -> i64 {
    sealed
        .iter()
        .filter(|(s, _)| (lo..=hi).contains(s))
        .map(|(_, n)| n)
        .sum()
}

impl PgStore {
    /// Lists the namespaces that reached `EXACT_MAX_ROWS` vectors, moves
    /// their rows outside the graph into the open segment, and starts the
    /// next build each table needs. The caller holds no transaction.
    pub fn grow_graphs(&self) -> anyhow::Result<GraphRound> {
        let mut round = GraphRound::default();
        if !self.vectors_on() {
            return Ok(round);
        }
        for (i, t) in TABLES.into_iter().enumerate() {
            self.list_large(i, t)?;
            round.moved += self.adopt(t)?;
            self.next_build(i, t)?;
            round.building += self.surveys.borrow()[i].build.is_some() as usize;
        }
        Ok(round)
    }

    /// Moves the rows of listed namespaces outside every segment (written
    /// before the listing, or by a write that did not see it) into the
    /// open one.
    fn adopt(&self, t: &str) -> anyhow::Result<u64> {
        let sql = format!(
            "UPDATE vec_{t} SET seg = (SELECT seg FROM vec_segments WHERE target = $1 AND rows IS NULL) \
             WHERE row IN (SELECT v.row {} LIMIT $2 FOR UPDATE OF v SKIP LOCKED)",
            strays_sql(t)
        );
        let mut moved = 0;
        loop {
            let n = self.db().execute(&sql, &[&t, &ADOPT_BATCH])?;
            moved += n;
            if n == 0 {
                return Ok(moved);
            }
        }
    }

    /// Starts table `t`'s next build, unless one runs: dropping indexes no
    /// search uses (an invalid one first, so its build can start again),
    /// building a sealed segment's index, sealing the open segment once it
    /// holds `ANN_FLUSH_AT` rows, merging a tier's indexes, or, with no
    /// seal due, merging every index into one (`compact_due`).
    fn next_build(&self, i: usize, t: &str) -> anyhow::Result<()> {
        let running = self.surveys.borrow_mut()[i].build.take();
        if let Some(handle) = running {
            if !handle.is_finished() {
                self.surveys.borrow_mut()[i].build = Some(handle);
                // A seal does not wait for the build: the open segment
                // stays small, and the sealed one is read from memory
                // (`tail.rs`) until its index is built after this one.
                let (open, _) = segments_of(&mut **self.db(), t)?;
                if self.open_full(t, open)? {
                    self.seal(t, open)?;
                }
                return Ok(());
            }
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(table = t, error = %format!("{e:#}"), "an HNSW build failed; will retry");
                }
                Err(_) => tracing::warn!(table = t, "an HNSW build panicked; will retry"),
            }
        }
        let VectorState::Enabled { dimension, .. } = self.vector_state() else {
            return Ok(());
        };
        let cat = catalog(&mut **self.db(), t)?;
        let mut sealing = false;
        let job = if !cat.building.is_empty() || !cat.inside.is_empty() {
            Job::Drop([cat.building, cat.inside].concat())
        } else {
            let (open, sealed) = segments_of(&mut **self.db(), t)?;
            let rows: Vec<i64> = cat.cover.0.iter().map(|r| rows_in(&sealed, *r)).collect();
            let merge = merge_due(&cat.cover, &rows);
            let gap = cat.cover.first_gap(open);
            let full = gap.is_none() && self.open_full(t, open)?;
            // New rows' builds (sealed while a build ran, or sealed now)
            // and merges take turns while rows pour in, so the indexes
            // stay few and the rows in none stay a build's worth.
            let last_sealed = self.surveys.borrow()[i].last_sealed;
            if (gap.is_some() || full) && (!last_sealed || merge.is_none()) {
                sealing = true;
                match gap {
                    Some(range) => Job::Build {
                        range,
                        rows: rows_in(&sealed, range),
                    },
                    None => Job::Build {
                        range: (open, open),
                        rows: self.seal(t, open)?,
                    },
                }
            } else {
                let quiet = (!full && gap.is_none())
                    .then(|| compact_due(&cat.cover, &rows))
                    .flatten();
                match merge.or(quiet) {
                    Some(range) => Job::Build {
                        range,
                        rows: rows_in(&sealed, range),
                    },
                    None => return Ok(()),
                }
            }
        };
        tracing::info!(table = t, job = ?job, "starting an HNSW build");
        let (url, table) = (self.url.clone(), t.to_string());
        let handle = std::thread::Builder::new()
            .name("mnemo-graph-build".into())
            .spawn(move || super::segments::run(&url, &table, job, dimension))?;
        let mut surveys = self.surveys.borrow_mut();
        surveys[i].build = Some(handle);
        surveys[i].last_sealed = sealing;
        Ok(())
    }

    /// Whether table `t`'s open segment `open` holds `ANN_FLUSH_AT` rows.
    fn open_full(&self, t: &str, open: i32) -> anyhow::Result<bool> {
        let n: i64 = self
            .db()
            .query_one(
                &format!("SELECT COUNT(*) FROM (SELECT 1 FROM vec_{t} WHERE seg = $1 LIMIT $2) s"),
                &[&open, &(ANN_FLUSH_AT as i64)],
            )?
            .get(0);
        Ok(n >= ANN_FLUSH_AT as i64)
    }

    /// Seals table `t`'s open segment `open` (the next number opens, in
    /// the same statement): its rows. Then keeps the transactions that may
    /// still write into it, those holding the table's write lock now, once
    /// the seal is committed (`tail.rs`).
    fn seal(&self, t: &str, open: i32) -> anyhow::Result<i64> {
        let row = self.db().query_one(
            &format!(
                "WITH sealed AS (UPDATE vec_segments SET rows = (SELECT COUNT(*) FROM vec_{t} WHERE seg = $2) \
                   WHERE target = $1 AND seg = $2 AND rows IS NULL RETURNING seg, rows) \
                 INSERT INTO vec_segments (target, seg, rows) SELECT $1, seg + 1, NULL FROM sealed \
                 RETURNING (SELECT rows FROM sealed)"
            ),
            &[&t, &open],
        )?;
        self.db().execute(
            &format!(
                "UPDATE vec_segments SET waits = (SELECT COALESCE(array_agg(DISTINCT l.virtualtransaction), '{{}}') \
                   FROM pg_locks l WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' \
                   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                   AND l.relation = 'vec_{t}'::regclass AND l.pid IS DISTINCT FROM pg_backend_pid()) \
                 WHERE target = $1 AND seg = $2"
            ),
            &[&t, &open],
        )?;
        Ok(row.get(0))
    }

    /// Table `t`'s cover (`segments.rs`), read from the catalog at most
    /// every `COVER_TTL` per server.
    pub(super) fn cover(&self, target: Target) -> R<Cover> {
        let i = table_index(target);
        if let Some((at, cover)) = &unpoisoned(self.covers.lock())[i]
            && at.elapsed() < COVER_TTL
        {
            return Ok(cover.clone());
        }
        let cover = pg(catalog(&mut **self.db(), table(target)))?.cover;
        unpoisoned(self.covers.lock())[i] = Some((Instant::now(), cover.clone()));
        Ok(cover)
    }

    /// Adds the vectors written since the last survey to each namespace's
    /// count, and lists each namespace whose exact count reached the
    /// threshold.
    fn list_large(&self, i: usize, t: &str) -> anyhow::Result<()> {
        let mut surveys = self.surveys.borrow_mut();
        let s = &mut surveys[i];
        let rows = self.db().query(
            &format!(
                "SELECT v.namespace, COUNT(*), MAX(v.row) FROM vec_{t} v WHERE v.row > $1 AND v.seg IS NULL \
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
                    &format!("SELECT COUNT(*) FROM vec_{t} WHERE namespace = $1 AND seg IS NULL"),
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
    /// index's terms: `graphs` the listed namespaces, `segments` the
    /// indexes searches walk, `points` the rows of their segments (as
    /// counted when sealed), `fresh` the listed namespaces' rows no index
    /// holds, `building` the builds running (an invalid index: a build
    /// running, or cut short) or due (a sealed segment without its index).
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
            let listed: i64 = self
                .db()
                .query_one("SELECT COUNT(*) FROM vec_graph WHERE target = $1", &[&t])?
                .get(0);
            if listed == 0 {
                continue;
            }
            let cat = catalog(&mut **self.db(), t)?;
            let (open, sealed) = segments_of(&mut **self.db(), t)?;
            let fresh: i64 = self
                .db()
                .query_one(
                    &format!(
                        "SELECT (SELECT COUNT(*) FROM vec_{t} v WHERE {}) + (SELECT COUNT(*) {})",
                        cat.cover.outside("v"),
                        strays_sql(t)
                    ),
                    &[&t],
                )?
                .get(0);
            status.graphs += listed as usize;
            status.segments += cat.cover.0.len();
            status.points += cat
                .cover
                .0
                .iter()
                .map(|r| rows_in(&sealed, *r).max(0) as usize)
                .sum::<usize>();
            status.fresh += fresh.max(0) as usize;
            let due = cat.cover.first_gap(open).is_some() as usize;
            status.building += cat.building.len().max(due);
        }
        Ok(status)
    }

    /// Forgets the kept listings and covers (the vectors were reset).
    pub(super) fn forget_listings(&self) {
        unpoisoned(self.listed.lock()).clear();
        *unpoisoned(self.covers.lock()) = Default::default();
        self.tails.clear();
        *self.surveys.borrow_mut() = Default::default();
    }
}
