//! One partition of the derived full-text index: the rows of one table and
//! namespace, each term's postings, and BM25 computed the way FTS5's
//! `bm25()` computes it (fts5_aux.c), over this partition's statistics.
//!
//! A search scores only the postings of its own terms in its own
//! namespace — never another tenant's rows, never a term's whole doclist
//! across the store, which is what FTS5's `bm25()` walks on every query to
//! count a term's rows. Given the same rows and tokens, the arithmetic is
//! FTS5's, operation for operation, so a store of one namespace ranks
//! bit-for-bit as FTS5 does (`tests/it/text_index.rs`).

use std::collections::{HashMap, HashSet};

use super::postings::{Posting, Postings, SavedPosting, TermBound};

/// BM25's parameters, FTS5's constants (fts5_aux.c, `fts5Bm25Function`).
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// FTS5 floors an idf at or below zero (a term in half the rows or more)
/// to this, so such a term still ranks a row above one without it.
const IDF_FLOOR: f64 = 1e-6;

/// A row's tokens: each distinct token with its count per column (the
/// tables have two: content and tags, or an episode's words and the turn
/// before), and the row's length in tokens over both columns.
#[derive(Debug, Clone, Default)]
pub struct Tokenized {
    pub len: u32,
    pub terms: Vec<(String, [u16; 2])>,
}

impl Tokenized {
    /// The counts of one token, if the row holds it.
    pub(super) fn counts(&self, token: &str) -> Option<[u16; 2]> {
        self.terms.iter().find(|(t, _)| t == token).map(|(_, c)| *c)
    }
}

/// A row's place: its id, length, and each distinct term with its counts
/// (a term's counts in a row are found here, not in the term's postings).
struct Slot {
    row: i64,
    len: u32,
    terms: Box<[(u32, [u16; 2])]>,
}

/// Changes not yet applied to a partition (the caller's own uncommitted
/// writes, inside its transaction): the rows they replace are hidden and
/// their current versions scored beside the partition, with the
/// statistics both together would have.
#[derive(Clone, Default)]
pub struct Overlay {
    hidden: HashSet<u32>,
    docs: Vec<(i64, Tokenized)>,
    rows: i64,
    tokens: i64,
    df: HashMap<String, i64>,
}

#[derive(Default)]
pub struct Partition {
    slots: Vec<Slot>,
    by_row: HashMap<i64, u32>,
    free: Vec<u32>,
    term_ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    postings: Vec<Postings>,
    rows: i64,
    tokens: i64,
    /// The last `text_changes.seq` applied: every change up to it is in.
    pub seq: i64,
    /// The `seq` of its last saved file (`file.rs`), and the changes
    /// applied since: when to save it again.
    pub saved: Option<i64>,
    pub unsaved: u64,
}

/// A partition as its file holds it: the postings and each slot's row and
/// length; a slot's terms are its postings, found again at load.
#[derive(serde::Serialize)]
pub struct SavedRef<'a> {
    seq: i64,
    names: &'a [Box<str>],
    slots: Vec<(i64, u32)>,
    postings: &'a [Postings],
}

#[derive(serde::Deserialize)]
pub struct Saved {
    seq: i64,
    names: Vec<Box<str>>,
    slots: Vec<(i64, u32)>,
    postings: Vec<Vec<SavedPosting>>,
}

/// A row of no slot (a freed one).
const FREE: i64 = i64::MIN;

impl Partition {
    pub fn new(seq: i64) -> Self {
        Self {
            seq,
            ..Self::default()
        }
    }

    /// What its file holds.
    pub fn to_saved(&self) -> SavedRef<'_> {
        SavedRef {
            seq: self.seq,
            names: &self.names,
            slots: self.slots.iter().map(|s| (s.row, s.len)).collect(),
            postings: &self.postings,
        }
    }

    /// The partition a file held, with its mark; an error when the file
    /// does not describe one (a posting of no slot, a row twice, …).
    pub fn from_saved(f: Saved) -> Result<Self, String> {
        if f.names.len() != f.postings.len() {
            return Err(format!(
                "{} terms, {} posting lists",
                f.names.len(),
                f.postings.len()
            ));
        }
        let mut terms: Vec<Vec<(u32, [u16; 2])>> = vec![Vec::new(); f.slots.len()];
        let mut postings = Vec::with_capacity(f.postings.len());
        for (id, list) in f.postings.iter().enumerate() {
            let mut kept = Postings::default();
            for p in list {
                let slot = terms
                    .get_mut(p.slot as usize)
                    .filter(|_| f.slots[p.slot as usize].0 != FREE)
                    .ok_or_else(|| format!("a posting of slot {}, which holds no row", p.slot))?;
                slot.push((id as u32, p.tf));
                kept.push(Posting {
                    slot: p.slot,
                    tf: p.tf,
                    len: f.slots[p.slot as usize].1,
                });
            }
            postings.push(kept);
        }
        let mut part = Partition::new(f.seq);
        part.saved = Some(f.seq);
        for (slot, ((row, len), terms)) in f.slots.into_iter().zip(terms).enumerate() {
            if row == FREE {
                part.free.push(slot as u32);
            } else {
                if part.by_row.insert(row, slot as u32).is_some() {
                    return Err(format!("row {row} in two slots"));
                }
                part.rows += 1;
                part.tokens += i64::from(len);
            }
            part.slots.push(Slot {
                row,
                len,
                terms: terms.into_boxed_slice(),
            });
        }
        part.term_ids = f
            .names
            .iter()
            .enumerate()
            .map(|(id, name)| (name.clone(), id as u32))
            .collect();
        if part.term_ids.len() != f.names.len() {
            return Err("a term listed twice".into());
        }
        part.names = f.names;
        part.postings = postings;
        part.shrink();
        Ok(part)
    }

    /// Gives back the room its postings grew into: once built or loaded.
    pub fn shrink(&mut self) {
        self.postings.iter_mut().for_each(Postings::shrink);
    }

    /// Rows indexed.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Postings held (one per row and distinct term): the index's size.
    pub fn postings(&self) -> usize {
        self.postings.iter().map(Postings::len).sum()
    }

    /// Indexes `row` as `doc`, replacing what it held.
    pub fn put(&mut self, row: i64, doc: &Tokenized) {
        self.remove(row);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    row,
                    len: 0,
                    terms: Box::default(),
                });
                (self.slots.len() - 1) as u32
            }
        };
        let mut ids = Vec::with_capacity(doc.terms.len());
        for (token, tf) in &doc.terms {
            let id = self.intern(token);
            self.postings[id as usize].push(Posting {
                slot,
                tf: *tf,
                len: doc.len,
            });
            ids.push((id, *tf));
        }
        self.slots[slot as usize] = Slot {
            row,
            len: doc.len,
            terms: ids.into_boxed_slice(),
        };
        self.by_row.insert(row, slot);
        self.rows += 1;
        self.tokens += i64::from(doc.len);
    }

    /// Drops `row`, if indexed.
    pub fn remove(&mut self, row: i64) {
        let Some(slot) = self.by_row.remove(&row) else {
            return;
        };
        let old = std::mem::replace(
            &mut self.slots[slot as usize],
            Slot {
                row: FREE,
                len: 0,
                terms: Box::default(),
            },
        );
        for (id, tf) in old.terms.iter() {
            self.postings[*id as usize].remove(slot, *tf, old.len);
        }
        self.rows -= 1;
        self.tokens -= i64::from(old.len);
        self.free.push(slot);
    }

    fn intern(&mut self, token: &str) -> u32 {
        if let Some(id) = self.term_ids.get(token) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.term_ids.insert(token.into(), id);
        self.names.push(token.into());
        self.postings.push(Postings::default());
        id
    }

    /// An overlay over this partition: `changes` are each changed row with
    /// its current version (`None`: gone from the partition).
    pub fn overlay(&self, changes: Vec<(i64, Option<Tokenized>)>) -> Overlay {
        let mut o = Overlay::default();
        self.extend_overlay(&mut o, changes);
        o
    }

    /// `o` with `changes` after those it holds, as [`Self::overlay`] of
    /// them all would be.
    pub fn extend_overlay(&self, o: &mut Overlay, changes: Vec<(i64, Option<Tokenized>)>) {
        for (row, doc) in changes {
            if let Some(slot) = self.by_row.get(&row)
                && o.hidden.insert(*slot)
            {
                let s = &self.slots[*slot as usize];
                o.rows -= 1;
                o.tokens -= i64::from(s.len);
                for (id, _) in s.terms.iter() {
                    *o.df
                        .entry(self.names[*id as usize].to_string())
                        .or_default() -= 1;
                }
            }
            if let Some(i) = o.docs.iter().position(|(r, _)| *r == row) {
                let (_, old) = o.docs.swap_remove(i);
                o.rows -= 1;
                o.tokens -= i64::from(old.len);
                for (t, _) in &old.terms {
                    *o.df.entry(t.clone()).or_default() -= 1;
                }
            }
            if let Some(doc) = doc {
                o.rows += 1;
                o.tokens += i64::from(doc.len);
                for (t, _) in &doc.terms {
                    *o.df.entry(t.clone()).or_default() += 1;
                }
                o.docs.push((row, doc));
            }
        }
    }

    /// Rows of the partition, with the overlay's.
    pub fn rows_with(&self, o: &Overlay) -> i64 {
        self.rows + o.rows
    }

    /// Rows holding `token`, with the overlay's.
    pub fn df(&self, token: &str, o: &Overlay) -> i64 {
        let here = self
            .term_ids
            .get(token)
            .map_or(0, |id| self.postings[*id as usize].len() as i64);
        here + o.df.get(token).copied().unwrap_or(0)
    }
}

/// A query's BM25 statistics over `parts` together, as FTS5's would be
/// over a table holding just them (fts5Bm25GetData): the average row
/// length, and each phrase's idf. `None` when there is nothing to score.
pub(super) struct Stats {
    pub(super) avgdl: f64,
    pub(super) idfs: Vec<f64>,
}

impl Stats {
    pub(super) fn of(parts: &[(&Partition, &Overlay)], phrases: &[String]) -> Option<Self> {
        let rows: i64 = parts.iter().map(|(p, o)| p.rows_with(o)).sum();
        let tokens: i64 = parts.iter().map(|(p, o)| p.tokens + o.tokens).sum();
        if rows <= 0 || phrases.is_empty() {
            return None;
        }
        let idfs = phrases
            .iter()
            .map(|token| {
                let hits: i64 = parts.iter().map(|(p, o)| p.df(token, o)).sum();
                let idf = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
                if idf <= 0.0 { IDF_FLOOR } else { idf }
            })
            .collect();
        Some(Self {
            avgdl: tokens as f64 / rows as f64,
            idfs,
        })
    }

    /// A row's BM25 share from one phrase it holds `tf` times (per column)
    /// in `len` tokens, as fts5Bm25Function computes it: the frequency is
    /// one weight per instance, summed in position order (column 0's
    /// first).
    pub(super) fn share(&self, phrase: usize, tf: [u16; 2], len: u32, weights: [f64; 2]) -> f64 {
        let mut freq = 0.0;
        for (c, n) in tf.iter().enumerate() {
            for _ in 0..*n {
                freq += weights[c];
            }
        }
        self.saturate(phrase, freq, len)
    }

    /// BM25's share of `phrase` at frequency `freq` in a row of `len`
    /// tokens: fts5Bm25Function's expression, the one place it is written.
    fn saturate(&self, phrase: usize, freq: f64, len: u32) -> f64 {
        self.idfs[phrase]
            * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * f64::from(len) / self.avgdl)))
    }

    /// [`Self::share`] to within a few ulps, for partial sums and bounds:
    /// the frequency multiplied instead of added one instance at a time
    /// (which was a quarter of a million-row search's time).
    pub(super) fn quick_share(
        &self,
        phrase: usize,
        tf: [u16; 2],
        len: u32,
        weights: [f64; 2],
    ) -> f64 {
        let freq = weights[0] * f64::from(tf[0]) + weights[1] * f64::from(tf[1]);
        self.saturate(phrase, freq, len)
    }

    /// At least the share of `phrase` in any row `bound` covers (larger
    /// counts and shorter rows only raise it; the weights are not
    /// negative), before rounding.
    pub(super) fn share_bound(&self, phrase: usize, bound: TermBound, weights: [f64; 2]) -> f64 {
        if bound.min_len == u32::MAX {
            return 0.0;
        }
        self.quick_share(phrase, bound.max_tf, bound.min_len, weights)
    }

    /// A row's score: its share of each phrase it holds, added in the
    /// query's order from 0, as FTS5 adds them (a phrase it lacks adds
    /// FTS5's +0.0, which changes no sum).
    pub(super) fn score(
        &self,
        counts: impl Fn(usize) -> Option<[u16; 2]>,
        len: u32,
        weights: [f64; 2],
    ) -> f64 {
        let mut s = 0.0;
        for i in 0..self.idfs.len() {
            if let Some(tf) = counts(i) {
                s += self.share(i, tf, len, weights);
            }
        }
        s
    }
}

/// Every row of `parts` holding one of `phrases` with its BM25 score,
/// scoring every posting: what [`super::top::top`] must answer the best of.
#[cfg(test)]
pub fn score(
    parts: &[(&Partition, &Overlay)],
    phrases: &[String],
    weights: [f64; 2],
) -> Vec<(i64, f64)> {
    let Some(st) = Stats::of(parts, phrases) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (p, o) in parts {
        let ids: Vec<Option<u32>> = phrases.iter().map(|t| p.term(t)).collect();
        let mut seen = HashSet::new();
        for id in ids.iter().flatten() {
            for post in p.postings_of(*id).iter() {
                if !o.hides(post.slot) && seen.insert(post.slot) {
                    let score = st.score(
                        |i| ids[i].and_then(|id| p.tf(post.slot, id)),
                        p.slot_len(post.slot),
                        weights,
                    );
                    out.push((p.row(post.slot), score));
                }
            }
        }
        for (row, doc) in &o.docs {
            if phrases.iter().any(|t| doc.counts(t).is_some()) {
                out.push((
                    *row,
                    st.score(|i| doc.counts(&phrases[i]), doc.len, weights),
                ));
            }
        }
    }
    out
}

/// What a search reads of a partition (`top.rs`).
impl Partition {
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn term(&self, token: &str) -> Option<u32> {
        self.term_ids.get(token).copied()
    }

    pub(super) fn postings_of(&self, term: u32) -> &Postings {
        &self.postings[term as usize]
    }

    pub(super) fn row(&self, slot: u32) -> i64 {
        self.slots[slot as usize].row
    }

    pub(super) fn slot_len(&self, slot: u32) -> u32 {
        self.slots[slot as usize].len
    }

    /// A slot's terms, each with its counts.
    pub(super) fn terms_of(&self, slot: u32) -> &[(u32, [u16; 2])] {
        &self.slots[slot as usize].terms
    }

    /// A slot's counts of `term`, if it holds it.
    #[cfg(test)]
    pub(super) fn tf(&self, slot: u32, term: u32) -> Option<[u16; 2]> {
        self.slots[slot as usize]
            .terms
            .iter()
            .find(|(t, _)| *t == term)
            .map(|(_, tf)| *tf)
    }
}

impl Overlay {
    /// Whether a partition's `slot` is replaced by the overlay.
    pub(super) fn hides(&self, slot: u32) -> bool {
        !self.hidden.is_empty() && self.hidden.contains(&slot)
    }

    /// Its rows' current versions.
    pub(super) fn docs(&self) -> &[(i64, Tokenized)] {
        &self.docs
    }
}
