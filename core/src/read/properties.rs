//! Property tests of fusion and scoring: invariants that must hold for any
//! input, not just the examples of the unit tests — empty inputs, ties,
//! monotonicity, bounds and determinism.

use proptest::prelude::*;

use super::fusion::{RankedList, rrf};
use super::question::Asks;
use super::scoring::{Evidence, combine, layer_bonus, recency, relevance};
use crate::model::{Channel, Layer, Relevance, ScoredId, Target};
use crate::thresholds::RRF_K;

fn list(channel: Channel, ids: &[u8]) -> RankedList {
    RankedList {
        channel,
        target: Target::Memories,
        hits: ids
            .iter()
            .enumerate()
            .map(|(i, id)| ScoredId {
                id: format!("m{id}"),
                score: 1.0 / (i as f32 + 1.0),
            })
            .collect(),
    }
}

fn channels() -> [Channel; 4] {
    [
        Channel::Fts,
        Channel::Vector,
        Channel::Entity,
        Channel::Fact,
    ]
}

prop_compose! {
    fn rankings()(lists in prop::collection::vec(prop::collection::vec(0u8..20, 0..15), 0..4))
        -> Vec<RankedList> {
        lists.iter().zip(channels()).map(|(ids, c)| list(c, ids)).collect()
    }
}

prop_compose! {
    fn evidence()(
        semantic in prop::option::of(0.0f32..=1.0),
        fts in prop::option::of(0.0f32..=1.0),
        entity in any::<bool>(),
        fact in any::<bool>(),
        has_query_term in any::<bool>(),
        short_cjk in any::<bool>(),
        speaker_named in any::<bool>(),
        tag_share in 0.0f32..=1.0,
        superseded in any::<bool>(),
        date_match in any::<bool>(),
        answer in prop::option::of(prop_oneof![Just(Asks::Time), Just(Asks::Quantity)]),
    ) -> Evidence {
        Evidence { semantic, fts, entity, fact, has_query_term, short_cjk, lexical_weight: None, speaker_named, tag_share, superseded, date_match, answer }
    }
}

fn model() -> impl Strategy<Value = Relevance> {
    prop_oneof![Just(Relevance::Blend), Just(Relevance::Semantic)]
}

#[test]
fn fusing_nothing_gives_nothing() {
    assert!(rrf(&[]).is_empty());
    assert!(rrf(&[list(Channel::Fts, &[]), list(Channel::Vector, &[])]).is_empty());
}

proptest! {
    #[test]
    fn fusion_is_sorted_unique_and_bounded(lists in rankings()) {
        let fused = rrf(&lists);
        let n = lists.len() as f32;
        for w in fused.windows(2) {
            prop_assert!(w[0].rrf > w[1].rrf || (w[0].rrf == w[1].rrf && w[0].id < w[1].id),
                "sorted by score, ties by id");
        }
        let mut ids: Vec<&str> = fused.iter().map(|f| f.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        prop_assert_eq!(ids.len(), fused.len(), "each candidate once");
        for f in &fused {
            prop_assert!(f.rrf > 0.0 && f.rrf <= n / (RRF_K + 1.0) + 1e-6);
            prop_assert!(!f.channels.is_empty() && f.channels.len() <= lists.len());
        }
    }

    #[test]
    fn fusion_does_not_depend_on_the_order_of_the_lists(lists in rankings()) {
        let mut reversed = lists.clone();
        reversed.reverse();
        let a: Vec<(String, u32)> = rrf(&lists).into_iter().map(|f| (f.id, (f.rrf * 1e6) as u32)).collect();
        let b: Vec<(String, u32)> = rrf(&reversed).into_iter().map(|f| (f.id, (f.rrf * 1e6) as u32)).collect();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn a_better_rank_never_scores_lower(ids in prop::collection::vec(0u8..50, 2..20)) {
        let fused = rrf(&[list(Channel::Fts, &ids)]);
        // In one list, fused order is the list's own order (first occurrences).
        let mut seen = Vec::new();
        for id in &ids {
            let id = format!("m{id}");
            if !seen.contains(&id) { seen.push(id); }
        }
        let order: Vec<String> = fused.into_iter().map(|f| f.id).collect();
        prop_assert_eq!(order, seen);
    }

    #[test]
    fn more_channels_agreeing_never_lowers_a_candidate(ids in prop::collection::vec(0u8..20, 1..10), extra in 0u8..20) {
        let one = rrf(&[list(Channel::Fts, &ids)]);
        let two = rrf(&[list(Channel::Fts, &ids), list(Channel::Vector, &[extra])]);
        let score = |v: &[super::fusion::Fused], id: &str| v.iter().find(|f| f.id == id).map_or(0.0, |f| f.rrf);
        let id = format!("m{extra}");
        prop_assert!(score(&two, &id) > score(&one, &id));
    }

    #[test]
    fn the_score_is_bounded_and_monotone(
        importance in 0.0f32..=1.0, rec in 0.0f32..=1.0, rel in 0.0f32..=2.0, bump in 0.0f32..=0.5,
        layer in prop_oneof![Just(Layer::Buffer), Just(Layer::Working), Just(Layer::Core)],
    ) {
        let bonus = layer_bonus(layer);
        let s = combine(importance, rec, rel, bonus);
        prop_assert!((0.0..=1.0).contains(&s));
        prop_assert!(combine((importance + bump).min(1.0), rec, rel, bonus) >= s);
        prop_assert!(combine(importance, (rec + bump).min(1.0), rel, bonus) >= s);
        prop_assert!(combine(importance, rec, rel + bump, bonus) >= s);
        prop_assert!(combine(importance, rec, rel, layer_bonus(Layer::Core)) >= combine(importance, rec, rel, layer_bonus(Layer::Buffer)));
    }

    #[test]
    fn recency_decays_from_one(rate in 0.0f32..=1.0, hours in 0.0f32..=10_000.0, later in 0.0f32..=1_000.0) {
        let r = recency(rate, hours);
        prop_assert!((0.0..=1.0).contains(&r));
        prop_assert!(recency(rate, hours + later) <= r);
        prop_assert_eq!(recency(0.0, hours), 1.0, "protected memories do not age");
    }

    #[test]
    fn relevance_is_finite_non_negative_and_explained(ev in evidence(), m in model()) {
        let mut notes = Vec::new();
        let r = relevance(&ev, m, &mut notes);
        prop_assert!(r.is_finite() && r >= 0.0);
        if ev.fact { prop_assert!(!notes.is_empty()); }
    }

    #[test]
    fn stronger_evidence_never_lowers_relevance(ev in evidence(), m in model(), bump in 0.0f32..=0.5) {
        let base = relevance(&ev, m, &mut Vec::new());
        if let Some(s) = ev.semantic {
            let up = Evidence { semantic: Some((s + bump).min(1.0)), ..ev };
            prop_assert!(relevance(&up, m, &mut Vec::new()) >= base - 1e-6, "a closer vector");
        }
        if let Some(f) = ev.fts {
            let up = Evidence { fts: Some((f + bump).min(1.0)), ..ev };
            prop_assert!(relevance(&up, m, &mut Vec::new()) >= base - 1e-6, "a stronger BM25");
        }
        let linked = Evidence { fact: true, ..ev };
        // A fact link sets relevance to 1.0 (times the correction factor).
        let cap = if ev.superseded { crate::thresholds::SUPERSEDED_RELEVANCE_FACTOR } else { 1.0 };
        prop_assert!(relevance(&linked, m, &mut Vec::new()) >= base.min(cap) - 1e-6, "a fact link");
        let named = Evidence { speaker_named: true, ..ev };
        prop_assert!(relevance(&named, m, &mut Vec::new()) >= base - 1e-6, "the speaker named");
        let dated = Evidence { date_match: true, ..ev };
        prop_assert!(relevance(&dated, m, &mut Vec::new()) >= base - 1e-6, "the query's date");
        let answering = Evidence { answer: Some(Asks::Time), ..ev };
        prop_assert!(relevance(&answering, m, &mut Vec::new()) >= base - 1e-6, "the answer asked for");
        let corrected = Evidence { superseded: true, ..ev };
        prop_assert!(relevance(&corrected, m, &mut Vec::new()) <= base + 1e-6, "a superseded memory never gains");
    }
}
