//! A term's postings, kept so a search can read first the rows where the
//! term weighs most.
//!
//! BM25's share of a term in a row rises with the term's count there and
//! falls with the row's length. A term of many rows keeps its postings in
//! classes of count and length, each with its own bound (`TermBound`), so
//! a search (`top.rs`) reads the classes that can reach the top first and
//! leaves the others unread once they cannot: a query of common words
//! reads the short rows that repeat them, not the whole store's doclists.
//! A term of few rows keeps one list, read whole.

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// One row holding a term: its slot, the term's count per column, and the
/// row's length (here, not only in its slot, so a search reading the list
/// reads the lengths beside it instead of reaching into every slot).
#[derive(Clone, Copy)]
pub(super) struct Posting {
    pub(super) slot: u32,
    pub(super) tf: [u16; 2],
    pub(super) len: u32,
}

/// A posting as a file holds it: the length is its slot's.
#[derive(Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct SavedPosting {
    pub(super) slot: u32,
    pub(super) tf: [u16; 2],
}

/// What bounds a term's BM25 share in any row of a list: the largest count
/// per column, and the shortest row. Widened as rows are added, never
/// narrowed when one goes (a bound, not the maximum).
#[derive(Clone, Copy)]
pub(super) struct TermBound {
    pub(super) max_tf: [u16; 2],
    pub(super) min_len: u32,
}

impl Default for TermBound {
    fn default() -> Self {
        Self {
            max_tf: [0, 0],
            min_len: u32::MAX,
        }
    }
}

impl TermBound {
    fn widen(&mut self, tf: [u16; 2], len: u32) {
        self.max_tf = [self.max_tf[0].max(tf[0]), self.max_tf[1].max(tf[1])];
        self.min_len = self.min_len.min(len);
    }
}

/// A term keeps its postings in classes from this many rows. Below it a
/// whole list is read in a few microseconds; the classes cost 64 empty
/// lists' room, which only a term this common repays.
pub(super) const CLASSED_FROM: usize = 1024;
/// A class's row lengths (in tokens) start at one of these: the bands are
/// narrow where dialogue's rows are (a turn or a fact is 5–40 tokens), so
/// a bound there is close to its rows' shares.
const LEN_BANDS: [u32; 15] = [4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 40, 48, 64, 96, 128];
/// Classes of a term's count in a row (both columns): 1, 2, 3, 4 or more.
const COUNT_BANDS: usize = 4;
const CLASSES: usize = COUNT_BANDS * (LEN_BANDS.len() + 1);

fn class(tf: [u16; 2], len: u32) -> usize {
    let count = (usize::from(tf[0]) + usize::from(tf[1])).clamp(1, COUNT_BANDS) - 1;
    LEN_BANDS.partition_point(|b| *b <= len) * COUNT_BANDS + count
}

/// Postings and their bound.
#[derive(Default)]
pub(super) struct List {
    pub(super) bound: TermBound,
    pub(super) postings: Vec<Posting>,
}

impl List {
    fn push(&mut self, p: Posting) {
        self.bound.widen(p.tf, p.len);
        self.postings.push(p);
    }

    fn remove(&mut self, slot: u32) -> bool {
        match self.postings.iter().position(|p| p.slot == slot) {
            Some(i) => {
                self.postings.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

/// A term's postings: one list, or one per class.
pub(super) enum Postings {
    One(List),
    Classed { lists: Box<[List]>, len: usize },
}

impl Default for Postings {
    fn default() -> Self {
        Postings::One(List::default())
    }
}

impl Postings {
    /// Rows holding the term.
    pub(super) fn len(&self) -> usize {
        match self {
            Postings::One(l) => l.postings.len(),
            Postings::Classed { len, .. } => *len,
        }
    }

    /// Adds a row.
    pub(super) fn push(&mut self, p: Posting) {
        match self {
            Postings::One(l) if l.postings.len() + 1 >= CLASSED_FROM => {
                let len_now = l.postings.len() + 1;
                let mut lists: Box<[List]> = (0..CLASSES).map(|_| List::default()).collect();
                for q in std::mem::take(&mut l.postings) {
                    lists[class(q.tf, q.len)].push(q);
                }
                lists[class(p.tf, p.len)].push(p);
                *self = Postings::Classed {
                    lists,
                    len: len_now,
                };
            }
            Postings::One(l) => l.push(p),
            Postings::Classed { lists, len } => {
                lists[class(p.tf, p.len)].push(p);
                *len += 1;
            }
        }
    }

    /// Drops the posting of `slot`, which held the term `tf` times in `len`
    /// tokens.
    pub(super) fn remove(&mut self, slot: u32, tf: [u16; 2], len: u32) {
        match self {
            Postings::One(l) => {
                l.remove(slot);
            }
            Postings::Classed { lists, len: n } => {
                if lists[class(tf, len)].remove(slot) {
                    *n -= 1;
                }
            }
        }
    }

    /// Gives back the room its lists grew into (after a build or a load,
    /// where a list's doubling leaves up to half of it unused).
    pub(super) fn shrink(&mut self) {
        match self {
            Postings::One(l) => l.postings.shrink_to_fit(),
            Postings::Classed { lists, .. } => {
                for l in lists.iter_mut() {
                    l.postings.shrink_to_fit();
                }
            }
        }
    }

    /// The lists holding a posting.
    pub(super) fn lists(&self) -> impl Iterator<Item = &List> {
        let lists: &[List] = match self {
            Postings::One(l) => std::slice::from_ref(l),
            Postings::Classed { lists, .. } => lists,
        };
        lists.iter().filter(|l| !l.postings.is_empty())
    }

    /// Every posting, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Posting> {
        self.lists().flat_map(|l| l.postings.iter())
    }
}

/// Saved as one sequence of postings, however they are classed in memory:
/// the file's format does not depend on the classes (`file.rs`).
impl Serialize for Postings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for p in self.iter() {
            seq.serialize_element(&SavedPosting {
                slot: p.slot,
                tf: p.tf,
            })?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_common_term_is_classed_and_keeps_every_posting_once() {
        let len_of = |slot: u32| 3 + slot % 50;
        let mut p = Postings::default();
        for slot in 0..3000u32 {
            let tf = [(slot % 5) as u16 + 1, (slot % 7 == 0) as u16];
            p.push(Posting {
                slot,
                tf,
                len: len_of(slot),
            });
            assert_eq!(p.len(), slot as usize + 1);
        }
        assert!(matches!(p, Postings::Classed { .. }));
        for slot in (0..3000u32).step_by(3) {
            let tf = [(slot % 5) as u16 + 1, (slot % 7 == 0) as u16];
            p.remove(slot, tf, len_of(slot));
        }
        assert_eq!(p.len(), 2000);
        let mut slots: Vec<u32> = p.iter().map(|q| q.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..3000).filter(|s| s % 3 != 0).collect::<Vec<_>>());
        // Each list's bound covers its rows.
        for l in p.lists() {
            for q in &l.postings {
                assert!(q.tf[0] <= l.bound.max_tf[0] && q.tf[1] <= l.bound.max_tf[1]);
                assert!(q.len == len_of(q.slot) && q.len >= l.bound.min_len);
            }
        }
        assert!(p.lists().count() > 10);
    }
}
