//! Seed 004 §6's clustering of a namespace's memory vectors into leaves:
//! assign each entry to the closest leaf (or start one), split and merge
//! until stable, absorb small leaves, hold the leaf budget.

use crate::thresholds::*;
use crate::vector::{add, centroid, cosine, normalized};

/// A leaf under construction: indexes into the entries, and its centroid.
#[derive(Debug, Clone)]
struct Leaf {
    members: Vec<usize>,
    centroid: Vec<f32>,
    /// The members' vector sum, in member order (the centroid normalised).
    sum: Vec<f32>,
}

impl Leaf {
    fn of(members: Vec<usize>, vectors: &[Vec<f32>]) -> Self {
        let dim = vectors.first().map_or(0, Vec::len);
        let mut sum = vec![0.0f32; dim];
        for i in &members {
            add(&mut sum, &vectors[*i]);
        }
        let centroid = normalized(&sum);
        Self {
            members,
            centroid,
            sum,
        }
    }

    /// One more member: the sum grows by its vector, in the order `of` adds
    /// them, so the centroid is the same as recomputing it — at one
    /// vector's cost instead of every member's (a 100k cycle, `mnemo
    /// consolidate` on a copy of the bench store: 4.5 → 3.1 s).
    fn push(&mut self, i: usize, vectors: &[Vec<f32>]) {
        self.members.push(i);
        add(&mut self.sum, &vectors[i]);
        self.centroid = normalized(&self.sum);
    }

    /// Mean similarity of the members to the centroid.
    fn cohesion(&self, vectors: &[Vec<f32>]) -> f32 {
        if self.members.is_empty() {
            return 1.0;
        }
        self.members
            .iter()
            .map(|i| cosine(&vectors[*i], &self.centroid))
            .sum::<f32>()
            / self.members.len() as f32
    }
}

/// Clusters `vectors` into leaves of member indexes, largest first.
pub fn cluster(vectors: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let mut leaves: Vec<Leaf> = Vec::new();
    for i in 0..vectors.len() {
        let best = leaves
            .iter()
            .enumerate()
            .map(|(l, leaf)| (l, cosine(&vectors[i], &leaf.centroid)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((l, sim)) if sim > TOPIC_ASSIGN_THRESHOLD => leaves[l].push(i, vectors),
            _ => leaves.push(Leaf::of(vec![i], vectors)),
        }
    }
    for _ in 0..TOPIC_MAX_CYCLES {
        let split = split_pass(&mut leaves, vectors);
        let merged = merge_pass(&mut leaves, vectors);
        if !split && !merged {
            break;
        }
    }
    absorb_small(&mut leaves, vectors);
    hold_budget(&mut leaves, vectors);
    let mut out: Vec<Vec<usize>> = leaves.into_iter().map(|l| l.members).collect();
    for m in &mut out {
        m.sort_unstable();
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out
}

/// Two-means split of oversized or loose leaves; seeds are the member
/// farthest from the centroid and the member farthest from that one.
fn split_pass(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) -> bool {
    let mut changed = false;
    let mut out = Vec::with_capacity(leaves.len());
    for leaf in leaves.drain(..) {
        let loose = leaf.members.len() > TOPIC_SMALL_LEAF
            && leaf.cohesion(vectors) < TOPIC_MIN_INTERNAL_SIM;
        if leaf.members.len() <= TOPIC_MAX_LEAF_SIZE && !loose {
            out.push(leaf);
            continue;
        }
        let farthest_from = |c: &[f32]| {
            leaf.members
                .iter()
                .copied()
                .min_by(|a, b| cosine(&vectors[*a], c).total_cmp(&cosine(&vectors[*b], c)))
        };
        let (Some(a), Some(b)) = (
            farthest_from(&leaf.centroid),
            farthest_from(&leaf.centroid).and_then(|a| farthest_from(&vectors[a])),
        ) else {
            out.push(leaf);
            continue;
        };
        let (mut ca, mut cb) = (vectors[a].clone(), vectors[b].clone());
        let mut groups: (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for _ in 0..TOPIC_MAX_CYCLES {
            groups = leaf
                .members
                .iter()
                .partition(|i| cosine(&vectors[**i], &ca) >= cosine(&vectors[**i], &cb));
            if groups.0.is_empty() || groups.1.is_empty() {
                break;
            }
            let dim = ca.len();
            ca = centroid(groups.0.iter().map(|i| vectors[*i].as_slice()), dim);
            cb = centroid(groups.1.iter().map(|i| vectors[*i].as_slice()), dim);
        }
        if groups.0.is_empty() || groups.1.is_empty() {
            out.push(leaf);
            continue;
        }
        changed = true;
        out.push(Leaf::of(groups.0, vectors));
        out.push(Leaf::of(groups.1, vectors));
    }
    *leaves = out;
    changed
}

/// Merges leaves whose centroids are close, when the result stays small
/// enough not to be split again.
fn merge_pass(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i < leaves.len() {
        let mut j = i + 1;
        while j < leaves.len() {
            let fits = leaves[i].members.len() + leaves[j].members.len() <= TOPIC_MAX_LEAF_SIZE;
            if fits && cosine(&leaves[i].centroid, &leaves[j].centroid) > TOPIC_MERGE_THRESHOLD {
                let other = leaves.remove(j);
                let mut members = std::mem::take(&mut leaves[i].members);
                members.extend(other.members);
                leaves[i] = Leaf::of(members, vectors);
                changed = true;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    changed
}

/// Leaves of one or two members join their nearest leaf when it is close.
fn absorb_small(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) {
    let mut i = 0;
    while i < leaves.len() {
        if leaves[i].members.len() > TOPIC_SMALL_LEAF {
            i += 1;
            continue;
        }
        let nearest = (0..leaves.len())
            .filter(|j| *j != i)
            .map(|j| (j, cosine(&leaves[i].centroid, &leaves[j].centroid)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match nearest {
            Some((j, sim)) if sim > TOPIC_ABSORB_THRESHOLD => {
                let small = leaves.remove(i);
                let j = if j > i { j - 1 } else { j };
                let mut members = std::mem::take(&mut leaves[j].members);
                members.extend(small.members);
                leaves[j] = Leaf::of(members, vectors);
            }
            _ => i += 1,
        }
    }
}

/// For leaf `i`, the first later leaf most similar to it.
fn row_best(leaves: &[Leaf], i: usize) -> Option<(usize, f32)> {
    let mut best: Option<(usize, f32)> = None;
    for j in i + 1..leaves.len() {
        let sim = cosine(&leaves[i].centroid, &leaves[j].centroid);
        if best.is_none_or(|(_, b)| sim > b) {
            best = Some((j, sim));
        }
    }
    best
}

/// Merges the two closest leaves until at most `TOPIC_LEAF_BUDGET` are
/// left. The closest pair is the first (in index order) of the most
/// similar ones, as a scan of every pair would find it, but each leaf's
/// best later partner is kept between merges and only the rows a merge
/// touched are scanned again: a fold from thousands of leaves compared
/// every pair once per merge (the 100k Postgres load's writer spent 92% of
/// its time here, docs/benchmarks.md, "Postgres").
fn hold_budget(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) {
    if leaves.len() <= TOPIC_LEAF_BUDGET {
        return;
    }
    let mut best: Vec<Option<(usize, f32)>> =
        (0..leaves.len()).map(|i| row_best(leaves, i)).collect();
    while leaves.len() > TOPIC_LEAF_BUDGET {
        let mut pick: Option<(usize, usize, f32)> = None;
        for (i, b) in best.iter().enumerate() {
            if let Some((j, sim)) = *b
                && pick.is_none_or(|(_, _, p)| sim > p)
            {
                pick = Some((i, j, sim));
            }
        }
        let Some((a, b, _)) = pick else { return };
        let other = leaves.remove(b);
        best.remove(b);
        let mut members = std::mem::take(&mut leaves[a].members);
        members.extend(other.members);
        leaves[a] = Leaf::of(members, vectors);
        for i in 0..leaves.len() {
            let Some((j, sim)) = best[i] else { continue };
            if i == a || j == a || j == b {
                best[i] = row_best(leaves, i);
                continue;
            }
            let j = if j > b { j - 1 } else { j };
            best[i] = Some((j, sim));
            if i < a {
                let with_a = cosine(&leaves[i].centroid, &leaves[a].centroid);
                if with_a > sim || (with_a == sim && a < j) {
                    best[i] = Some((a, with_a));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::heuristic_name;
    use super::*;

    /// The fold as first written: every pair scanned for every merge.
    fn merge_closest_by_scan(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) {
        let mut best = (0, 1, f32::MIN);
        for i in 0..leaves.len() {
            for j in i + 1..leaves.len() {
                let sim = cosine(&leaves[i].centroid, &leaves[j].centroid);
                if sim > best.2 {
                    best = (i, j, sim);
                }
            }
        }
        if best.1 < leaves.len() {
            let other = leaves.remove(best.1);
            let mut members = std::mem::take(&mut leaves[best.0].members);
            members.extend(other.members);
            leaves[best.0] = Leaf::of(members, vectors);
        }
    }

    #[test]
    fn the_kept_best_pairs_fold_as_the_full_scan_does() {
        // Near-random 8-d vectors (xorshift), some repeated so ties occur.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        };
        let mut vectors: Vec<Vec<f32>> = (0..700)
            .map(|_| unit(&(0..8).map(|_| next()).collect::<Vec<_>>()))
            .collect();
        for k in 0..40 {
            let copy = vectors[k * 3].clone();
            vectors.push(copy);
        }
        let leaves: Vec<Leaf> = (0..vectors.len())
            .map(|i| Leaf::of(vec![i], &vectors))
            .collect();
        let mut kept = leaves.clone();
        hold_budget(&mut kept, &vectors);
        let mut scanned = leaves;
        while scanned.len() > TOPIC_LEAF_BUDGET {
            merge_closest_by_scan(&mut scanned, &vectors);
        }
        let members = |ls: &[Leaf]| ls.iter().map(|l| l.members.clone()).collect::<Vec<_>>();
        assert_eq!(members(&kept), members(&scanned));
    }
    use std::collections::BTreeMap;

    fn unit(v: &[f32]) -> Vec<f32> {
        let mut v = v.to_vec();
        crate::vector::normalize(&mut v);
        v
    }

    #[test]
    fn separate_directions_make_separate_leaves() {
        let mut vectors = Vec::new();
        for k in 0..6 {
            let e = k as f32 * 0.01;
            vectors.push(unit(&[1.0, e, 0.0]));
            vectors.push(unit(&[0.0, 1.0, e]));
            vectors.push(unit(&[e, 0.0, 1.0]));
        }
        let leaves = cluster(&vectors);
        assert_eq!(leaves.len(), 3, "{leaves:?}");
        for leaf in &leaves {
            assert_eq!(leaf.len(), 6);
            let axis = leaf[0] % 3;
            assert!(leaf.iter().all(|i| i % 3 == axis));
        }
    }

    #[test]
    fn oversized_leaves_split_and_the_budget_holds() {
        // Twenty near-identical vectors: one leaf would exceed the size cap.
        let vectors: Vec<Vec<f32>> = (0..20)
            .map(|k| unit(&[1.0, (k as f32) * 0.05, 0.0]))
            .collect();
        let leaves = cluster(&vectors);
        assert!(
            leaves
                .iter()
                .all(|l| l.len() <= TOPIC_MAX_LEAF_SIZE + TOPIC_SMALL_LEAF * 2)
        );
        assert_eq!(leaves.iter().map(Vec::len).sum::<usize>(), 20);
        assert!(leaves.len() <= TOPIC_LEAF_BUDGET);
    }

    #[test]
    fn heuristic_names_prefer_distinctive_words() {
        let mut df = BTreeMap::new();
        df.insert("hiking".to_string(), 1);
        df.insert("alps".to_string(), 1);
        df.insert("likes".to_string(), 3);
        let name = heuristic_name(&["likes hiking in the alps", "hiking again"], &df, 3);
        assert!(name.starts_with("hiking"), "{name}");
    }
}
