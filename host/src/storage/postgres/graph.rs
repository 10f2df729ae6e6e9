//! Which namespaces' vectors are in the HNSW graph, and moving them in.
//!
//! A namespace under `EXACT_MAX_ROWS` vectors is searched exactly, from the
//! covering index of the rows outside the graph (`search.rs`), so its rows
//! stay out of the graph and its writes do not pay the graph's insert
//! (4.7 ms against 0.04 ms without it, in a 100,000-vector store). A
//! namespace that reaches the threshold is listed in `vec_graph`; from
//! then on its new vectors are written into the graph (`put_vector`), and
//! the server leading the backfill moves its earlier ones in,
//! `GRAPH_BATCH` rows a statement, in the background. A search reads both
//! sides at every moment — the graph for a listed namespace's moved rows,
//! exactly for every row not yet moved — so no vector is out of reach
//! while a move runs.
//!
//! The leader finds the namespaces to list without scanning the store each
//! round: it counts every namespace's vectors outside the graph once when
//! it takes the lead, then adds the rows written past its watermark, and
//! counts a namespace exactly only when that estimate reaches the
//! threshold (deleted vectors make it high; a row committed behind the
//! watermark makes it low, so a namespace is listed a write late).

use std::collections::HashMap;

use mnemo_core::model::Target;

use super::search::EXACT_MAX_ROWS;
use super::{PgStore, unpoisoned};
use crate::storage::ann::AnnStatus;

/// The vector tables, in the order of [`Surveys`].
pub(super) const TABLES: [&str; 2] = ["memories", "episodes"];

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

/// The leader's running count of vectors per namespace outside the graph,
/// from the rows past `seen`.
#[derive(Default)]
pub(super) struct Survey {
    seen: i64,
    counts: HashMap<String, i64>,
}

/// Surveys of the two vector tables, in the order of [`TABLES`].
pub(super) type Surveys = std::cell::RefCell<[Survey; 2]>;

impl PgStore {
    /// Lists the namespaces that reached `EXACT_MAX_ROWS` vectors and
    /// moves rows of listed namespaces into the graph, `GRAPH_BATCH` per
    /// table and statement, until none is left or `GRAPH_ROUND` has
    /// passed. Returns how many rows moved. The caller holds no
    /// transaction.
    pub fn grow_graphs(&self) -> anyhow::Result<u64> {
        if !self.vectors_on() {
            return Ok(0);
        }
        let started = std::time::Instant::now();
        for (i, t) in TABLES.into_iter().enumerate() {
            self.list_large(i, t)?;
        }
        let mut moved = 0;
        loop {
            let mut round = 0;
            for t in TABLES {
                round += self.db().execute(
                    &format!(
                        "UPDATE vec_{t} SET graph = true WHERE row IN (\
                           SELECT v.row FROM vec_graph g JOIN vec_{t} v ON v.namespace = g.namespace AND NOT v.graph \
                           WHERE g.target = $1 LIMIT $2 FOR UPDATE OF v SKIP LOCKED)"
                    ),
                    &[&t, &GRAPH_BATCH],
                )?;
            }
            moved += round;
            if round == 0 || started.elapsed() >= GRAPH_ROUND {
                return Ok(moved);
            }
        }
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
            self.db().execute(
                "INSERT INTO vec_graph (target, namespace) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&t, &ns],
            )?;
            tracing::info!(table = t, namespace = %ns, vectors = exact, "the namespace moves into the HNSW graph");
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
    /// the listed namespaces with some.
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
            let points: i64 = self
                .db()
                .query_one(&format!("SELECT COUNT(*) FROM vec_{t} WHERE graph"), &[])?
                .get(0);
            let waiting: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
            status.graphs += rows.len();
            status.segments += 1;
            status.points += points.max(0) as usize;
            status.fresh += waiting.iter().sum::<i64>().max(0) as usize;
            status.building += waiting.iter().filter(|n| **n > 0).count();
        }
        Ok(status)
    }

    /// Forgets the kept listings (the vectors were reset).
    pub(super) fn forget_listings(&self) {
        unpoisoned(self.listed.lock()).clear();
        *self.surveys.borrow_mut() = Default::default();
    }
}
