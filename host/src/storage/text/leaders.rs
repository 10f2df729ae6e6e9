//! The `n` best partial sums of a MaxScore walk (`top.rs`), kept as
//! postings are read so the walk knows its cut at every list.

/// `n` distinct rows, each with a partial sum it has reached, the least
/// on top: that least is a score `n` rows reach, since a row's sum only
/// grows. Offered every sum as postings are read, so the walk has a cut at
/// every list without counting the touched rows again.
pub(super) struct Leaders {
    n: usize,
    heap: std::collections::BinaryHeap<Least>,
    /// The rows in the heap, by place (an entry of a row whose sum grew
    /// since stays: still a sum it reached).
    inside: Vec<u64>,
    /// The heap's least once it holds `n`; −∞ before.
    floor: f64,
}

/// A heap entry, ordered so the max-heap's top is the least sum.
struct Least(f64, u32);

impl PartialEq for Least {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Least {}
impl PartialOrd for Least {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Least {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0)
    }
}

impl Leaders {
    pub(super) fn new(n: usize, places: usize) -> Self {
        Self {
            n,
            heap: std::collections::BinaryHeap::with_capacity(n + 1),
            inside: vec![0; places.div_ceil(64)],
            floor: f64::NEG_INFINITY,
        }
    }

    pub(super) fn cut(&self) -> Option<f64> {
        (self.heap.len() == self.n).then_some(self.floor)
    }

    /// Row `at` (`u32::MAX`: a row scored whole, offered once) has reached
    /// `sum`.
    pub(super) fn offer(&mut self, at: u32, sum: f64) {
        if sum <= self.floor {
            return;
        }
        let bit = (at != u32::MAX).then(|| (at as usize / 64, 1u64 << (at % 64)));
        if let Some((w, b)) = bit {
            if self.inside[w] & b != 0 {
                return;
            }
            self.inside[w] |= b;
        }
        self.heap.push(Least(sum, at));
        if self.heap.len() > self.n
            && let Some(Least(_, out)) = self.heap.pop()
            && out != u32::MAX
        {
            self.inside[out as usize / 64] &= !(1u64 << (out % 64));
        }
        if self.heap.len() == self.n {
            self.floor = self.heap.peek().map_or(f64::NEG_INFINITY, |l| l.0);
        }
    }
}
