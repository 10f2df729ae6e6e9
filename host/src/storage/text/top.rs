//! The best rows of a BM25 query, without scoring every row it matches.
//!
//! A query of common words matches most of a large partition: scoring each
//! posting of its terms and then ordering all of them was most of a
//! recall's full-text time at a million rows (docs/benchmarks.md). This is
//! MaxScore (Turtle and Flood, 1995), term at a time, over the lists a
//! term's postings are kept in (`postings.rs`: by count and row length for
//! a common term), each with a bound on what the term adds to any of its
//! rows. The lists of all the query's phrases are read from the largest
//! bound down, the best `n` partial sums kept as they grow (`Leaders`).
//! Once those `n` rows each reach more than the unread lists could add to
//! a row together, no unread row can reach the top; reading goes on only
//! while a list costs less than scoring one by one the touched rows it
//! could rule out. Those that can still reach the top are then scored as
//! `partition.rs` scores a row — each phrase's share added in the query's
//! order — so the answer is the same rows with the same scores, bit for
//! bit, as scoring every row and keeping the best. `Query::score_all`
//! is that scoring of every row, for queries with few postings and for a
//! filter's later rounds (`ranking.rs`).

use std::collections::VecDeque;

use super::leaders::Leaders;
use super::partition::{Overlay, Partition, Stats};
use super::postings::Posting;

/// Relative slack on every comparison of a bound with a score. A partial
/// sum adds a row's shares in another order than its score does, so each
/// may round a few ulps (~1e-16) away from the other; the slack is far
/// more than that, and far less than two distinct scores differ by in
/// practice, so it costs no pruning.
const BOUND_SLACK: f64 = 1e-9;

/// A row scored on its own (its slot's terms looked up, its shares added)
/// costs about as much as reading this many postings: the walk reads on
/// through a list while that is cheaper than scoring the rows it could
/// rule out. Measured with a timing loop around `top` (not kept) on 400
/// queries of `bench serve`'s kind over 1,000,000 rows, 81 rows asked:
/// stopping as soon as no unread row can reach the top took 11.7–12.8 ms
/// a query, any value from 1 to 16 here 3.8–5.2 ms, within the runs'
/// noise of each other. `bench serve --memories 1000000` shows the effect
/// on recall (docs/benchmarks.md).
const EXACT_READS: usize = 8;

thread_local! {
    /// Partial sums by slot over every part a search reads (NaN: not
    /// touched), reused by the thread's next search: only touched entries
    /// are reset. A search that panics leaves the thread a fresh one.
    static PARTIAL: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// Postings read by the thread's searches (the tests check the skipping).
    static READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A list of one phrase's postings in one part, and the most that phrase
/// adds to a row of it.
struct Unit<'a> {
    phrase: usize,
    part: usize,
    most: f64,
    postings: &'a [Posting],
}

/// What a query reads: its statistics, its lists and its rows scored whole.
pub(super) struct Query<'a> {
    parts: &'a [(&'a Partition, &'a Overlay)],
    weights: [f64; 2],
    st: Stats,
    /// Every list of every phrase, the largest bound first.
    units: Vec<Unit<'a>>,
    /// Their postings.
    pub(super) total: usize,
    /// Each part's first place in the partial sums.
    base: Vec<usize>,
    slots: usize,
    /// The overlay's rows (a transaction's own writes, few), scored whole.
    whole: Vec<(i64, f64)>,
    /// Each part's query terms by id, with the phrase of each (a phrase
    /// repeated is one term twice).
    by_id: Vec<Vec<(u32, usize)>>,
    phrases: usize,
}

impl<'a> Query<'a> {
    pub(super) fn new(
        parts: &'a [(&'a Partition, &'a Overlay)],
        phrases: &[String],
        weights: [f64; 2],
    ) -> Option<Self> {
        let st = Stats::of(parts, phrases)?;
        let ids: Vec<Vec<Option<u32>>> = parts
            .iter()
            .map(|(p, _)| phrases.iter().map(|t| p.term(t)).collect())
            .collect();
        let mut units: Vec<Unit> = Vec::new();
        for (k, (p, _)) in parts.iter().enumerate() {
            for (i, id) in ids[k].iter().enumerate() {
                let Some(id) = id else { continue };
                for list in p.postings_of(*id).lists() {
                    let most = st.share_bound(i, list.bound, weights);
                    units.push(Unit {
                        phrase: i,
                        part: k,
                        most,
                        postings: &list.postings,
                    });
                }
            }
        }
        units.sort_by(|a, b| b.most.total_cmp(&a.most));
        let mut whole: Vec<(i64, f64)> = Vec::new();
        for (_, o) in parts {
            for (row, doc) in o.docs() {
                if phrases.iter().any(|t| doc.counts(t).is_some()) {
                    let counts = |i: usize| doc.counts(&phrases[i]);
                    whole.push((*row, st.score(counts, doc.len, weights)));
                }
            }
        }
        let mut base = Vec::with_capacity(parts.len());
        let mut slots = 0;
        for (p, _) in parts {
            base.push(slots);
            slots += p.slots();
        }
        let by_id = ids
            .iter()
            .map(|ids| {
                let mut v: Vec<(u32, usize)> = ids
                    .iter()
                    .enumerate()
                    .filter_map(|(i, id)| id.map(|id| (id, i)))
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        Some(Self {
            parts,
            weights,
            st,
            total: units.iter().map(|u| u.postings.len()).sum(),
            units,
            base,
            slots,
            whole,
            by_id,
            phrases: phrases.len(),
        })
    }

    /// Adds unit `u`'s shares to the partial sums, noting rows touched
    /// first; then `visit` sees each sum.
    fn read(
        &self,
        u: &Unit,
        share: impl Fn([u16; 2], u32) -> f64,
        partial: &mut [f64],
        touched: &mut Vec<u32>,
        mut visit: impl FnMut(u32, f64),
    ) {
        let o = self.parts[u.part].1;
        #[cfg(test)]
        READ.set(READ.get() + u.postings.len());
        for post in u.postings {
            if o.hides(post.slot) {
                continue;
            }
            let at = self.base[u.part] + post.slot as usize;
            let s = &mut partial[at];
            if s.is_nan() {
                *s = 0.0;
                touched.push(at as u32);
            }
            *s += share(post.tf, post.len);
            visit(at as u32, *s);
        }
    }

    /// The partial sums of the touched rows, taken out of `partial` (left
    /// untouched again for the thread's next search).
    fn take(partial: &mut [f64], touched: &[u32]) -> Vec<(f64, u32)> {
        touched
            .iter()
            .map(|&at| (std::mem::replace(&mut partial[at as usize], f64::NAN), at))
            .collect()
    }

    /// Every posting read, a phrase's lists after the phrase before it's:
    /// each row's shares are added in the query's order, with
    /// `partition.rs`'s arithmetic, so its sum is its score bit for bit.
    pub(super) fn score_all(&self) -> Vec<(i64, f64)> {
        let mut partial = sums(self.slots);
        let mut touched: Vec<u32> = Vec::new();
        let mut order: Vec<&Unit> = self.units.iter().collect();
        order.sort_by_key(|u| u.phrase);
        for u in order {
            let share = |tf, len| self.st.share(u.phrase, tf, len, self.weights);
            self.read(u, share, &mut partial, &mut touched, |_, _| {});
        }
        let mut rows = self.whole.clone();
        for (s, at) in Self::take(&mut partial, &touched) {
            let (p, slot) = self.place(at);
            rows.push((p.row(slot), s));
        }
        PARTIAL.set(partial);
        rows
    }

    /// The part and slot at place `at` of the partial sums.
    fn place(&self, at: u32) -> (&Partition, u32) {
        let k = self.base.partition_point(|b| *b <= at as usize) - 1;
        (self.parts[k].0, (at as usize - self.base[k]) as u32)
    }

    /// The lists read from the largest bound down while an unread row can
    /// still reach the top `n`, or while a list costs less than scoring one
    /// by one the touched rows it could rule out: the rows that can still
    /// reach the top, with what the unread lists add at most.
    pub(super) fn walk(&self, n: usize) -> Pending {
        // Each phrase's bounds in the lists' order, the first not read yet
        // being the most the phrase can add to a row not read yet.
        let mut unread: Vec<VecDeque<f64>> = vec![Default::default(); self.phrases];
        for u in &self.units {
            unread[u.phrase].push_back(u.most);
        }
        let left =
            |unread: &[VecDeque<f64>]| -> f64 { unread.iter().filter_map(|q| q.front()).sum() };
        let mut partial = sums(self.slots);
        let mut touched: Vec<u32> = Vec::new();
        let mut leaders = Leaders::new(n, self.slots);
        for (_, s) in &self.whole {
            leaders.offer(u32::MAX, *s);
        }
        let (mut read, mut read_at_count) = (0usize, 0usize);
        for u in &self.units {
            // No row not read yet can reach the top. Stopping here leaves
            // the touched rows that still can to be scored one by one;
            // reading on narrows them, at the cost of this list. (They are
            // counted once the postings read since the last count, this
            // list's with them, are a quarter of the rows touched: counting
            // costs at most four times what reading does.)
            if let Some(cut) = leaders.cut()
                && below(left(&unread), cut)
                && read - read_at_count + u.postings.len() >= touched.len() / 4
            {
                read_at_count = read;
                let now = hopeful(&partial, &touched, left(&unread), cut);
                if now * EXACT_READS <= u.postings.len() {
                    break;
                }
            }
            unread[u.phrase].pop_front();
            read += u.postings.len();
            let share = |tf, len| self.st.quick_share(u.phrase, tf, len, self.weights);
            self.read(u, share, &mut partial, &mut touched, |at, s| {
                leaders.offer(at, s)
            });
        }
        // A touched row can reach the top if its partial sum and what the
        // lists not read add at most do.
        let cut = nth_best(&partial, &touched, &self.whole, n);
        let left = left(&unread);
        let mut rows = Self::take(&mut partial, &touched);
        PARTIAL.set(partial);
        rows.retain(|(s, _)| !cut.is_some_and(|cut| below(s + left, cut)));
        Pending::new(rows, left, self.whole.clone(), self.phrases)
    }

    /// Row `at` scored as `partition.rs` scores it: each phrase's share
    /// added in the query's order. In one pass over the row's own terms,
    /// each looked up among the query's: looking each phrase up in the row
    /// instead costs as many passes as the query has phrases, ~20 for
    /// dedup's whole-text queries.
    fn exact(&self, at: u32, tfs: &mut [Option<[u16; 2]>]) -> (i64, f64) {
        let k = self.base.partition_point(|b| *b <= at as usize) - 1;
        let (p, slot) = self.place(at);
        let by_id = &self.by_id[k];
        for (term, tf) in p.terms_of(slot) {
            let from = by_id.partition_point(|(t, _)| t < term);
            for (_, i) in by_id[from..].iter().take_while(|(t, _)| t == term) {
                tfs[*i] = Some(*tf);
            }
        }
        let score = self.st.score(|i| tfs[i], p.slot_len(slot), self.weights);
        tfs.fill(None);
        (p.row(slot), score)
    }
}

/// The thread's partial sums, at least `slots` long, every entry NaN.
fn sums(slots: usize) -> Vec<f64> {
    let mut partial = PARTIAL.take();
    if partial.len() < slots {
        partial.resize(slots, f64::NAN);
    }
    partial
}

/// Rows that may reach a top, scored exactly as it asks for them.
pub(super) struct Pending {
    /// Partial sums not scored yet, from `from` on; `rows[from]` the best
    /// of them once `head_known`.
    rows: Vec<(f64, u32)>,
    from: usize,
    head_known: bool,
    /// What a row's exact score may exceed its partial sum by.
    left: f64,
    /// The rows scored, best first and ties by row.
    pub(super) done: Vec<(i64, f64)>,
    tfs: Vec<Option<[u16; 2]>>,
}

impl Pending {
    fn new(rows: Vec<(f64, u32)>, left: f64, done: Vec<(i64, f64)>, phrases: usize) -> Self {
        Self {
            rows,
            from: 0,
            head_known: false,
            left,
            done,
            tfs: vec![None; phrases],
        }
    }

    /// Scores rows, the best partial sums first, until no row left can
    /// reach the `n`-th exact score.
    pub(super) fn settle(&mut self, n: usize, q: &Query) {
        let mut chunk = 2 * n;
        loop {
            self.done.sort_unstable_by(best_first);
            let rest = &mut self.rows[self.from..];
            let Some(&(head, _)) = rest.first() else {
                break;
            };
            if self.head_known
                && self.done.len() >= n
                && below(head + self.left, self.done[n - 1].1)
            {
                break;
            }
            let take = chunk.min(rest.len());
            if take < rest.len() {
                rest.select_nth_unstable_by(take, |a, b| b.0.total_cmp(&a.0));
            }
            for &(_, at) in &rest[..take] {
                self.done.push(q.exact(at, &mut self.tfs));
            }
            // After the selection the first row left has the best sum.
            self.from += take;
            self.head_known = true;
            chunk *= 2;
        }
    }
}

/// Touched rows whose partial sum, and `left` more, do not fall below
/// `cut`.
fn hopeful(partial: &[f64], touched: &[u32], left: f64, cut: f64) -> usize {
    touched
        .iter()
        .filter(|at| !below(partial[**at as usize] + left, cut))
        .count()
}

/// Whether a row that scores at most `bound` is surely below `cut`, a
/// score some `n` rows reach, rounding aside.
fn below(bound: f64, cut: f64) -> bool {
    bound * (1.0 + BOUND_SLACK) < cut * (1.0 - BOUND_SLACK)
}

/// The `n`-th best of the touched rows' partial sums and the rows scored
/// whole: a score at least `n` rows reach. `None` while fewer are known.
fn nth_best(partial: &[f64], touched: &[u32], scored: &[(i64, f64)], n: usize) -> Option<f64> {
    if touched.len() + scored.len() < n {
        return None;
    }
    let mut all: Vec<f64> = touched
        .iter()
        .map(|at| partial[*at as usize])
        .chain(scored.iter().map(|(_, s)| *s))
        .collect();
    let (_, nth, _) = all.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
    Some(*nth)
}

/// Best score first, ties by the lower row, as FTS5's statement orders.
pub(super) fn best_first(a: &(i64, f64), b: &(i64, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

#[cfg(test)]
mod tests {
    use super::super::partition::score;
    use super::super::ranking::Ranking;
    use super::super::{Overlay, Partition, Tokenized};
    use super::READ;

    /// A deterministic corpus: Zipf-like words, rows of 3–20 tokens, some
    /// in the second column.
    fn corpus(rows: usize, seed: u64) -> Vec<(i64, Tokenized)> {
        let mut x = seed.max(1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..rows)
            .map(|r| {
                let n = 3 + (next() % 18) as usize;
                let mut terms: Vec<(String, [u16; 2])> = Vec::new();
                for _ in 0..n {
                    let u = (next() % 1_000_000) as f64 / 1e6;
                    let word = format!("w{}", (40f64.powf(u) as usize) - 1);
                    let col = usize::from(next() % 5 == 0);
                    match terms.iter_mut().find(|(t, _)| *t == word) {
                        Some((_, tf)) => tf[col] += 1,
                        None => {
                            let mut tf = [0, 0];
                            tf[col] = 1;
                            terms.push((word, tf));
                        }
                    }
                }
                (
                    r as i64 * 7 + 1,
                    Tokenized {
                        len: n as u32,
                        terms,
                    },
                )
            })
            .collect()
    }

    /// Every row scored, best first and ties by row, the first `n`.
    fn every(
        parts: &[(&Partition, &Overlay)],
        q: &[String],
        w: [f64; 2],
        n: usize,
    ) -> Vec<(i64, f64)> {
        let mut all = score(parts, q, w);
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    /// The same rows with the same scores, bit for bit.
    #[track_caller]
    fn same(got: &[(i64, f64)], want: &[(i64, f64)]) {
        assert_eq!(got.len(), want.len());
        for (g, e) in got.iter().zip(want) {
            assert_eq!((g.0, g.1.to_bits()), (e.0, e.1.to_bits()), "{g:?} {e:?}");
        }
    }

    fn words(q: &str) -> Vec<String> {
        q.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_best_rows_are_those_of_scoring_every_row_bit_for_bit() {
        let mut a = Partition::new(0);
        let mut b = Partition::new(0);
        for (row, doc) in corpus(3000, 7) {
            if row % 3 == 0 { &mut b } else { &mut a }.put(row, &doc);
        }
        // Edits and deletes leave bounds wider than the rows left need.
        for (row, doc) in corpus(400, 11) {
            a.put(row * 3 + 1, &doc);
            a.remove(row * 5 + 1);
        }
        let classed = |t: &str| {
            let id = a.term(t).unwrap();
            matches!(
                a.postings_of(id),
                super::super::postings::Postings::Classed { .. }
            )
        };
        assert!(classed("w0") && !classed("w30"));
        let none = Overlay::default();
        // A transaction's own writes: a row replaced, one gone, one new.
        let o = a.overlay(vec![
            (8, corpus(1, 3).pop().map(|(_, d)| d)),
            (15, None),
            (1_000_000, corpus(1, 5).pop().map(|(_, d)| d)),
        ]);
        let queries = [
            "w0 w1 w2",
            "w0 w0 w5",
            "w30 w1",
            "w38",
            "w0",
            "w2 w9 w17 w0 w3",
            "nothing w0",
        ];
        for q in queries {
            let q = words(q);
            for w in [[1.0, 1.0], [1.0, 0.0], [1.0, 0.35]] {
                for parts in [vec![(&a, &none)], vec![(&a, &o), (&b, &none)]] {
                    // One ask each, walked and scored whole; then asks
                    // growing as a filter's rounds do, from either.
                    for n in [1, 5, 10, 40, 400, 5000] {
                        same(
                            &Ranking::walking(&parts, &q, w).best(n),
                            &every(&parts, &q, w, n),
                        );
                        same(
                            &Ranking::new(&parts, &q, w).best(n),
                            &every(&parts, &q, w, n),
                        );
                    }
                    let mut walked = Ranking::walking(&parts, &q, w);
                    let mut whole = Ranking::new(&parts, &q, w);
                    for n in [3, 7, 15, 31, 63, 127, 5000] {
                        same(&walked.best(n), &every(&parts, &q, w, n));
                        same(&whole.best(n), &every(&parts, &q, w, n));
                    }
                }
            }
        }
        // A rare word's rows outscore what the common words can add: most
        // of the common words' postings are not read.
        let q = words("w30 w0 w1");
        let all: usize = q
            .iter()
            .filter_map(|t| a.term(t))
            .map(|id| a.postings_of(id).len())
            .sum();
        let rare = a.postings_of(a.term("w30").unwrap()).len();
        READ.set(0);
        let one = [(&a, &none)];
        let got = Ranking::walking(&one, &q, [1.0, 1.0]).best(5);
        same(&got, &every(&one, &q, [1.0, 1.0], 5));
        assert!(
            READ.get() < all / 4,
            "read {} of {all} postings",
            READ.get()
        );
        assert!(READ.get() >= rare);
    }

    #[test]
    fn ties_at_the_cut_go_to_the_lower_row() {
        let mut p = Partition::new(0);
        let doc = Tokenized {
            len: 4,
            terms: vec![("same".into(), [1, 0])],
        };
        for row in (1..=50).rev() {
            p.put(row, &doc);
        }
        let none = Overlay::default();
        let one = [(&p, &none)];
        for mut r in [
            Ranking::walking(&one, &words("same"), [1.0, 1.0]),
            Ranking::new(&one, &words("same"), [1.0, 1.0]),
        ] {
            let got = r.best(3);
            assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        }
    }
}
