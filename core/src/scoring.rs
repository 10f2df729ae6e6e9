//! How good is a candidate? Seed 004 §4.2–4.3: a relevance built from the
//! channels' evidence (dual-hit boost, FTS-only cap, keyword-affinity
//! penalty, fact links), then
//! `score = (0.2·importance + 0.2·recency + 0.6·relevance) × layer_bonus`, capped at 1.

use crate::model::{Layer, Score};
use crate::thresholds::*;

/// What the channels found out about one candidate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Cosine similarity, when the vector channel found it.
    pub semantic: Option<Score>,
    /// BM25 normalised to (0, 1] against the channel's best, when FTS found it.
    pub fts: Option<Score>,
    pub entity: bool,
    pub fact: bool,
    /// The text contains at least one query term.
    pub has_query_term: bool,
    /// The query is short CJK text (seed 004 special-cases it).
    pub short_cjk: bool,
}

/// Relevance in [0, ∞) before the final cap, and the notes explaining it.
pub fn relevance(ev: &Evidence, notes: &mut Vec<String>) -> Score {
    if ev.fact {
        notes.push("fact-linked: relevance 1.0".into());
        return FACT_RELEVANCE;
    }
    let mut rel = match (ev.semantic, ev.fts) {
        (Some(sem), Some(fts)) => {
            let gate = (sem / DUAL_HIT_SEM_GATE).min(1.0);
            let boost = if ev.short_cjk {
                CJK_SHORT_FTS_BOOST
            } else {
                DUAL_HIT_FTS_BOOST
            };
            let factor = 1.0 + fts * boost * gate;
            notes.push(format!("dual-hit boost x{factor:.3}"));
            let mut rel = sem * factor;
            if ev.short_cjk {
                let floor = CJK_SHORT_FLOOR_BASE + fts * CJK_SHORT_FLOOR_SCALE;
                if rel < floor {
                    notes.push(format!("short CJK floor {floor:.3}"));
                    rel = floor;
                }
            }
            rel
        }
        (Some(sem), None) => {
            if ev.has_query_term {
                sem
            } else {
                notes.push(format!(
                    "keyword affinity penalty x{KEYWORD_AFFINITY_PENALTY}"
                ));
                sem * KEYWORD_AFFINITY_PENALTY
            }
        }
        (None, Some(fts)) => {
            let cap = if ev.short_cjk {
                FTS_ONLY_CAP_CJK
            } else {
                FTS_ONLY_CAP
            };
            notes.push(format!("fts-only cap x{cap}"));
            fts * cap
        }
        (None, None) => 0.0,
    };
    if ev.entity && rel < ENTITY_RELEVANCE {
        notes.push(format!(
            "entity match: relevance raised to {ENTITY_RELEVANCE}"
        ));
        rel = ENTITY_RELEVANCE;
    }
    rel
}

/// `exp(-decay_rate × age_hours / 168)`.
pub fn recency(decay_rate: f32, age_hours: f32) -> Score {
    (-decay_rate.max(0.0) * age_hours.max(0.0) / RECENCY_HOURS).exp()
}

pub fn layer_bonus(layer: Layer) -> Score {
    match layer {
        Layer::Buffer => LAYER_BONUS_BUFFER,
        Layer::Working => LAYER_BONUS_WORKING,
        Layer::Core => LAYER_BONUS_CORE,
    }
}

/// The final score, capped at 1.0.
pub fn combine(importance: Score, recency: Score, relevance: Score, layer_bonus: Score) -> Score {
    ((WEIGHT_IMPORTANCE * importance + WEIGHT_RECENCY * recency + WEIGHT_RELEVANCE * relevance)
        * layer_bonus)
        .min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(ev: Evidence) -> Score {
        relevance(&ev, &mut Vec::new())
    }

    #[test]
    fn weights_sum_to_one() {
        assert!((WEIGHT_IMPORTANCE + WEIGHT_RECENCY + WEIGHT_RELEVANCE - 1.0).abs() < 1e-6);
    }

    #[test]
    fn dual_hit_beats_either_channel_alone() {
        let both = rel(Evidence {
            semantic: Some(0.6),
            fts: Some(0.8),
            has_query_term: true,
            ..Default::default()
        });
        let sem = rel(Evidence {
            semantic: Some(0.6),
            has_query_term: true,
            ..Default::default()
        });
        let fts = rel(Evidence {
            fts: Some(0.8),
            has_query_term: true,
            ..Default::default()
        });
        assert!(both > sem && sem > fts);
        // 0.6 × (1 + 0.8 × 0.3 × 1)
        assert!((both - 0.744).abs() < 1e-5);
    }

    #[test]
    fn fts_only_is_capped() {
        assert!(
            (rel(Evidence {
                fts: Some(1.0),
                ..Default::default()
            }) - FTS_ONLY_CAP)
                .abs()
                < 1e-6
        );
    }

    #[test]
    fn semantic_without_query_terms_is_penalised() {
        let with = rel(Evidence {
            semantic: Some(0.5),
            has_query_term: true,
            ..Default::default()
        });
        let without = rel(Evidence {
            semantic: Some(0.5),
            ..Default::default()
        });
        assert!((without - with * KEYWORD_AFFINITY_PENALTY).abs() < 1e-6);
    }

    #[test]
    fn fact_links_are_fully_relevant() {
        assert_eq!(
            rel(Evidence {
                fact: true,
                ..Default::default()
            }),
            1.0
        );
    }

    #[test]
    fn recency_halves_nothing_when_protected_and_falls_with_age() {
        assert_eq!(recency(0.0, 10_000.0), 1.0);
        assert!(recency(1.0, 168.0) < recency(1.0, 24.0));
        assert!((recency(1.0, 168.0) - (-1.0f32).exp()).abs() < 1e-6);
    }

    #[test]
    fn score_is_monotonic_in_each_factor_and_capped() {
        let base = combine(0.5, 0.5, 0.5, 1.0);
        assert!(combine(0.6, 0.5, 0.5, 1.0) > base);
        assert!(combine(0.5, 0.6, 0.5, 1.0) > base);
        assert!(combine(0.5, 0.5, 0.6, 1.0) > base);
        assert!(combine(0.5, 0.5, 0.5, 1.1) > base);
        assert_eq!(combine(1.0, 1.0, 2.0, 1.1), 1.0);
        assert!(layer_bonus(Layer::Core) > layer_bonus(Layer::Working));
        assert!(layer_bonus(Layer::Working) > layer_bonus(Layer::Buffer));
    }
}
