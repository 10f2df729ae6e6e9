//! A query's best rows as a search's filter asks for them: a few first,
//! more while too few pass (`top_admitted`). The first ask of a query with
//! many postings walks only what can reach its top (`top.rs`); a later
//! ask, or the first of a query with few postings, scores every posting
//! once and keeps the scores, so each round after costs a selection.

use super::partition::{Overlay, Partition};
use super::top::{Query, best_first};

/// A query with at most this many postings has every one scored at its
/// first ask (`Ranking`) instead of a walk. Dedup's queries are a
/// memory's whole text, ~20 phrases over ~100–200 lists, and a walk for
/// 11 rows read 50–100% of their postings at 10,000 rows. `bench serve
/// --memories 10000`, remember into the full store: 0 here 661–679/s,
/// 8,192 709/s, 32,768 800–837/s, every query 814–834/s. Recall at 100,000
/// rows (three-word queries) could not tell 0, 16,384 and 32,768 apart
/// (307–394/s in six runs) and lost at 262,144 (304–323/s).
const FULL_READ_UPTO: usize = 32_768;

/// One query's rows, asked for best first in growing prefixes. A walk
/// (`Query::walk`) answers one ask only; had every round walked anew,
/// dedup's searches would be five walks where most rows are evicted and
/// the filter rejects them (docs/benchmarks.md).
pub struct Ranking<'a> {
    query: Option<Query<'a>>,
    full_read_upto: usize,
    walked: bool,
    all: Option<Ranked>,
}

impl<'a> Ranking<'a> {
    pub fn new(
        parts: &'a [(&'a Partition, &'a Overlay)],
        phrases: &[String],
        weights: [f64; 2],
    ) -> Self {
        Self {
            query: Query::new(parts, phrases, weights),
            full_read_upto: FULL_READ_UPTO,
            walked: false,
            all: None,
        }
    }

    /// A ranking whose first ask walks whatever the query's size.
    #[cfg(test)]
    pub(super) fn walking(
        parts: &'a [(&'a Partition, &'a Overlay)],
        phrases: &[String],
        weights: [f64; 2],
    ) -> Self {
        Self {
            full_read_upto: 0,
            ..Self::new(parts, phrases, weights)
        }
    }

    /// The best `n` rows with their scores, best first and ties by row;
    /// each ask's answer begins with every earlier one's.
    pub fn best(&mut self, n: usize) -> Vec<(i64, f64)> {
        let Some(q) = &self.query else {
            return Vec::new();
        };
        if n == 0 {
            return Vec::new();
        }
        match &mut self.all {
            Some(all) => all.best(n),
            None if self.walked || q.total <= self.full_read_upto => {
                self.all.insert(Ranked::new(q.score_all())).best(n)
            }
            None => {
                self.walked = true;
                let mut p = q.walk(n);
                p.settle(n, q);
                p.done.truncate(n);
                p.done
            }
        }
    }
}

/// Every matching row scored, ordered as far as asked.
struct Ranked {
    rows: Vec<(i64, f64)>,
    /// `rows[..sorted]` are the best, in order.
    sorted: usize,
}

impl Ranked {
    fn new(rows: Vec<(i64, f64)>) -> Self {
        Self { rows, sorted: 0 }
    }

    fn best(&mut self, n: usize) -> Vec<(i64, f64)> {
        let n = n.min(self.rows.len());
        if n > self.sorted {
            // The rows an ask adds are selected from those left, then
            // ordered: no ask orders more rows than it returns.
            let rest = &mut self.rows[self.sorted..];
            let k = n - self.sorted;
            if k < rest.len() {
                rest.select_nth_unstable_by(k - 1, best_first);
            }
            rest[..k].sort_unstable_by(best_first);
            self.sorted = n;
        }
        self.rows[..n].to_vec()
    }
}
