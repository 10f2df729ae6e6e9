//! Seed 004 §6.3's hierarchy over the leaves: leaves whose centroids are
//! close (`TOPIC_PARENT_SIM`) share a parent topic, transitively; a parent
//! that would hold a single leaf is pruned (the leaf stays on top). One
//! level: resume lists the leaves, and drilling into a parent returns the
//! memories of all its leaves.

use crate::thresholds::TOPIC_PARENT_SIM;
use crate::vector::cosine;

fn root(of: &mut [usize], mut i: usize) -> usize {
    while of[i] != i {
        of[i] = of[of[i]];
        i = of[i];
    }
    i
}

/// Groups of two or more leaf indexes (by their centroids) that share a
/// parent, each sorted, in the order of their first leaf.
pub(super) fn parents(centroids: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let mut of: Vec<usize> = (0..centroids.len()).collect();
    for i in 0..centroids.len() {
        for j in i + 1..centroids.len() {
            if cosine(&centroids[i], &centroids[j]) >= TOPIC_PARENT_SIM {
                let (a, b) = (root(&mut of, i), root(&mut of, j));
                of[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..centroids.len() {
        let r = root(&mut of, i);
        groups.entry(r).or_default().push(i);
    }
    // Single-child pruning: a group of one is no parent.
    groups.into_values().filter(|g| g.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_leaves_share_a_parent_and_lone_ones_are_pruned() {
        let c = |v: [f32; 3]| {
            let mut v = v.to_vec();
            crate::vector::normalize(&mut v);
            v
        };
        let centroids = vec![
            c([1.0, 0.0, 0.0]),
            c([0.8, 0.6, 0.0]),
            c([0.0, 0.0, 1.0]),
            c([0.3, 0.95, 0.0]),
        ];
        // 0–1 close, 1–3 close (so 0, 1, 3 together), 2 alone.
        assert_eq!(parents(&centroids), vec![vec![0, 1, 3]]);
        assert!(parents(&centroids[2..3]).is_empty());
    }
}
