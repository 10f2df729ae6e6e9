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
    fn counts(&self, token: &str) -> Option<[u16; 2]> {
        self.terms.iter().find(|(t, _)| t == token).map(|(_, c)| *c)
    }
}

#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Posting {
    slot: u32,
    tf: [u16; 2],
}

struct Slot {
    row: i64,
    len: u32,
    terms: Box<[u32]>,
}

/// Changes not yet applied to a partition (the caller's own uncommitted
/// writes, inside its transaction): the rows they replace are hidden and
/// their current versions scored beside the partition, with the
/// statistics both together would have.
#[derive(Default)]
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
    postings: Vec<Vec<Posting>>,
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
    postings: &'a [Vec<Posting>],
}

#[derive(serde::Deserialize)]
pub struct Saved {
    seq: i64,
    names: Vec<Box<str>>,
    slots: Vec<(i64, u32)>,
    postings: Vec<Vec<Posting>>,
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
        let mut terms: Vec<Vec<u32>> = vec![Vec::new(); f.slots.len()];
        for (id, list) in f.postings.iter().enumerate() {
            for p in list {
                let slot = terms
                    .get_mut(p.slot as usize)
                    .filter(|_| f.slots[p.slot as usize].0 != FREE)
                    .ok_or_else(|| format!("a posting of slot {}, which holds no row", p.slot))?;
                slot.push(id as u32);
            }
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
        part.postings = f.postings;
        Ok(part)
    }

    /// Rows indexed.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Postings held (one per row and distinct term): the index's size.
    pub fn postings(&self) -> usize {
        self.postings.iter().map(Vec::len).sum()
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
            self.postings[id as usize].push(Posting { slot, tf: *tf });
            ids.push(id);
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
        for id in old.terms.iter() {
            let list = &mut self.postings[*id as usize];
            if let Some(i) = list.iter().position(|p| p.slot == slot) {
                list.swap_remove(i);
            }
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
        self.postings.push(Vec::new());
        id
    }

    /// An overlay over this partition: `changes` are each changed row with
    /// its current version (`None`: gone from the partition).
    pub fn overlay(&self, changes: Vec<(i64, Option<Tokenized>)>) -> Overlay {
        let mut o = Overlay::default();
        for (row, doc) in changes {
            if let Some(slot) = self.by_row.get(&row)
                && o.hidden.insert(*slot)
            {
                let s = &self.slots[*slot as usize];
                o.rows -= 1;
                o.tokens -= i64::from(s.len);
                for id in s.terms.iter() {
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
        o
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

/// Every row of `parts` holding one of `phrases` (one token each, in the
/// query's order) with its BM25 score, the columns weighted by `weights`.
/// The statistics — rows, average length, each phrase's rows — are those of
/// the partitions together, as FTS5's would be over a table holding just
/// them.
pub fn score(
    parts: &[(&Partition, &Overlay)],
    phrases: &[String],
    weights: [f64; 2],
) -> Vec<(i64, f64)> {
    let rows: i64 = parts.iter().map(|(p, o)| p.rows_with(o)).sum();
    let tokens: i64 = parts.iter().map(|(p, o)| p.tokens + o.tokens).sum();
    if rows <= 0 || phrases.is_empty() {
        return Vec::new();
    }
    // fts5Bm25GetData: the average row length, each phrase's idf.
    let avgdl = tokens as f64 / rows as f64;
    let idfs: Vec<f64> = phrases
        .iter()
        .map(|token| {
            let hits: i64 = parts.iter().map(|(p, o)| p.df(token, o)).sum();
            let idf = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
            if idf <= 0.0 { IDF_FLOOR } else { idf }
        })
        .collect();
    let mut out = Vec::new();
    for (p, o) in parts {
        p.score_with(phrases, &idfs, avgdl, weights, o, &mut out);
    }
    out
}

impl Partition {
    /// This partition's share of [`score`], given the statistics.
    fn score_with(
        &self,
        phrases: &[String],
        idfs: &[f64],
        avgdl: f64,
        weights: [f64; 2],
        o: &Overlay,
        out: &mut Vec<(i64, f64)>,
    ) {
        let term = |freq: f64, idf: f64, len: u32| {
            idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * f64::from(len) / avgdl)))
        };
        // The row's frequency of a phrase, as fts5Bm25Function sums it: one
        // weight per instance, in position order (column 0's first).
        let freq = |tf: [u16; 2]| {
            let mut f = 0.0;
            for (c, n) in tf.iter().enumerate() {
                for _ in 0..*n {
                    f += weights[c];
                }
            }
            f
        };
        // Accumulated phrase by phrase, so each row's score is the same sum
        // in the same order as FTS5's; NaN marks a slot not matched yet.
        let mut acc = vec![f64::NAN; self.slots.len()];
        let mut matched: Vec<u32> = Vec::new();
        let mut extra: Vec<f64> = vec![f64::NAN; o.docs.len()];
        for (token, idf) in phrases.iter().zip(idfs) {
            if let Some(id) = self.term_ids.get(token.as_str()) {
                for p in &self.postings[*id as usize] {
                    if !o.hidden.is_empty() && o.hidden.contains(&p.slot) {
                        continue;
                    }
                    let s = &mut acc[p.slot as usize];
                    if s.is_nan() {
                        *s = 0.0;
                        matched.push(p.slot);
                    }
                    *s += term(freq(p.tf), *idf, self.slots[p.slot as usize].len);
                }
            }
            for (i, (_, doc)) in o.docs.iter().enumerate() {
                if let Some(tf) = doc.counts(token) {
                    let s = &mut extra[i];
                    if s.is_nan() {
                        *s = 0.0;
                    }
                    *s += term(freq(tf), *idf, doc.len);
                }
            }
        }
        out.extend(
            matched
                .into_iter()
                .map(|s| (self.slots[s as usize].row, acc[s as usize])),
        );
        out.extend(
            o.docs
                .iter()
                .zip(extra)
                .filter(|(_, s)| !s.is_nan())
                .map(|((row, _), s)| (*row, s)),
        );
    }
}
