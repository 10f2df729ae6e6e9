//! How do several rankings become one? Reciprocal rank fusion:
//! `score(d) = Σ_lists 1 / (RRF_K + rank_d)` with 1-based ranks (seed 003).

use std::collections::HashMap;

use crate::model::{Channel, ChannelHit, Score, ScoredId, Target};
use crate::thresholds::RRF_K;

/// One channel's ranking over one target, best first.
#[derive(Debug, Clone)]
pub struct RankedList {
    pub channel: Channel,
    pub target: Target,
    pub hits: Vec<ScoredId>,
}

/// A fused candidate with the evidence of every channel that found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub target: Target,
    pub id: String,
    pub rrf: Score,
    pub channels: Vec<ChannelHit>,
}

impl Fused {
    pub fn channel(&self, c: Channel) -> Option<&ChannelHit> {
        self.channels.iter().find(|h| h.channel == c)
    }
}

/// Fuse rankings. An id repeated inside one list counts once (its best rank).
/// Output is sorted by fused score, ties broken by target then id, so the
/// result is deterministic. Each candidate's contributions are summed in
/// one canonical order (largest first), so the fused score does not depend
/// on the order of the lists, not even in its last bit.
pub fn rrf(lists: &[RankedList]) -> Vec<Fused> {
    let mut parts: HashMap<(Target, &str), Vec<f32>> = HashMap::new();
    let mut by_key: HashMap<(Target, &str), Fused> = HashMap::new();
    for list in lists {
        let mut seen = std::collections::HashSet::new();
        let mut rank = 0u32;
        for hit in &list.hits {
            if !seen.insert(hit.id.as_str()) {
                continue;
            }
            rank += 1;
            let entry = by_key
                .entry((list.target, hit.id.as_str()))
                .or_insert_with(|| Fused {
                    target: list.target,
                    id: hit.id.clone(),
                    rrf: 0.0,
                    channels: Vec::new(),
                });
            parts
                .entry((list.target, hit.id.as_str()))
                .or_default()
                .push(1.0 / (RRF_K + rank as f32));
            if entry.channel(list.channel).is_none() {
                entry.channels.push(ChannelHit {
                    channel: list.channel,
                    rank,
                    raw_score: hit.score,
                });
            }
        }
    }
    for (key, entry) in by_key.iter_mut() {
        if let Some(p) = parts.get_mut(key) {
            p.sort_by(|a, b| b.total_cmp(a));
            entry.rrf = p.iter().sum();
        }
    }
    let mut fused: Vec<Fused> = by_key.into_values().collect();
    fused.sort_by(|a, b| {
        b.rrf
            .total_cmp(&a.rrf)
            .then_with(|| a.target.cmp(&b.target))
            .then_with(|| a.id.cmp(&b.id))
    });
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(channel: Channel, ids: &[&str]) -> RankedList {
        RankedList {
            channel,
            target: Target::Memories,
            hits: ids
                .iter()
                .enumerate()
                .map(|(i, id)| ScoredId {
                    id: id.to_string(),
                    score: 1.0 / (i as f32 + 1.0),
                })
                .collect(),
        }
    }

    #[test]
    fn empty_inputs_fuse_to_nothing() {
        assert!(rrf(&[]).is_empty());
        assert!(rrf(&[list(Channel::Fts, &[])]).is_empty());
    }

    #[test]
    fn single_list_keeps_its_order_and_scores() {
        let f = rrf(&[list(Channel::Fts, &["a", "b", "c"])]);
        let ids: Vec<_> = f.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert!((f[0].rrf - 1.0 / 61.0).abs() < 1e-7);
    }

    #[test]
    fn agreement_beats_a_single_first_place() {
        // b is 2nd in both lists; a is 1st in one only.
        let f = rrf(&[
            list(Channel::Fts, &["a", "b"]),
            list(Channel::Vector, &["c", "b"]),
        ]);
        assert_eq!(f[0].id, "b");
        assert_eq!(f[0].channels.len(), 2);
        assert_eq!(f[0].channel(Channel::Vector).map(|h| h.rank), Some(2));
    }

    #[test]
    fn ties_break_by_id_deterministically() {
        let f = rrf(&[list(Channel::Fts, &["z"]), list(Channel::Vector, &["y"])]);
        assert_eq!(f[0].id, "y");
        assert_eq!(f[0].rrf, f[1].rrf);
    }

    #[test]
    fn duplicates_inside_a_list_count_once() {
        let f = rrf(&[list(Channel::Fts, &["a", "a", "b"])]);
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].channel(Channel::Fts).map(|h| h.rank), Some(2));
    }

    #[test]
    fn moving_up_a_list_never_lowers_the_score() {
        // Monotonicity over every position of "x" in a 10-item list.
        let mut prev = f32::INFINITY;
        for pos in 0..10 {
            let mut ids: Vec<String> = (0..10).map(|i| format!("o{i}")).collect();
            ids[pos] = "x".to_string();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let f = rrf(&[list(Channel::Fts, &refs)]);
            let x = f.iter().find(|c| c.id == "x").map(|c| c.rrf).unwrap_or(0.0);
            assert!(x <= prev);
            prev = x;
        }
    }
}
