//! How good is a candidate? A relevance built from the channels' evidence —
//! a convex blend of the lexical and semantic scores, the keyword-affinity
//! penalty, entity and fact links, the speaker named by the query — then
//! seed 004 §4.2's `score = (0.2·importance + 0.2·recency + 0.6·relevance) ×
//! layer_bonus`, capped at 1.

use crate::model::{Layer, Relevance, Score};
use crate::read::question::Asks;
use crate::thresholds::*;

/// What the channels found out about one candidate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Cosine similarity to the query, when the candidate has a vector
    /// (whichever channel found it).
    pub semantic: Option<Score>,
    /// BM25 normalised to (0, 1] against the channel's best, when FTS found it.
    pub fts: Option<Score>,
    pub entity: bool,
    pub fact: bool,
    /// The text contains at least one query term.
    pub has_query_term: bool,
    /// The query is short CJK text (seed 004 special-cases it).
    pub short_cjk: bool,
    /// The blend's lexical weight for the embedder that made the cosine
    /// (`lexical_weight_for`); None: `LEXICAL_WEIGHT`.
    pub lexical_weight: Option<Score>,
    /// The query names who said this (an episode's role).
    pub speaker_named: bool,
    /// Share of the requested tags the memory carries, in [0, 1].
    pub tag_share: Score,
    /// A correction superseded this memory's fact (`superseded_by` set).
    pub superseded: bool,
    /// Its time falls in a date the query names.
    pub date_match: bool,
    /// It holds the kind of answer the question asks for.
    pub answer: Option<Asks>,
}

/// Relevance in [0, ∞) before the final cap, and the notes explaining it.
pub fn relevance(ev: &Evidence, model: Relevance, notes: &mut Vec<String>) -> Score {
    let rel = evidence_relevance(ev, model, notes);
    if ev.superseded {
        notes.push(format!(
            "superseded by a correction x{SUPERSEDED_RELEVANCE_FACTOR}"
        ));
        return rel * SUPERSEDED_RELEVANCE_FACTOR;
    }
    rel
}

fn evidence_relevance(ev: &Evidence, model: Relevance, notes: &mut Vec<String>) -> Score {
    if ev.fact {
        notes.push("fact-linked: relevance 1.0".into());
        return FACT_RELEVANCE;
    }
    let mut rel = match model {
        Relevance::Blend => blend(ev, notes),
        Relevance::Semantic => semantic_led(ev, notes),
    };
    if ev.entity && rel < ENTITY_RELEVANCE {
        notes.push(format!(
            "entity match: relevance raised to {ENTITY_RELEVANCE}"
        ));
        rel = ENTITY_RELEVANCE;
    }
    if ev.tag_share > 0.0 {
        let factor = 1.0 + TAG_BOOST * ev.tag_share.min(1.0);
        notes.push(format!("requested tags x{factor:.3}"));
        rel *= factor;
    }
    if ev.speaker_named {
        notes.push(format!("the query names the speaker x{SPEAKER_BOOST}"));
        rel *= SPEAKER_BOOST;
    }
    if ev.date_match {
        notes.push(format!(
            "its time falls in a date the query names x{DATE_MATCH_BOOST}"
        ));
        rel *= DATE_MATCH_BOOST;
    }
    if let Some(asks) = ev.answer {
        let what = match asks {
            Asks::Time => "a time",
            Asks::Quantity => "a quantity",
        };
        notes.push(format!(
            "the query asks for {what} and the text names one x{ANSWER_TYPE_BOOST}"
        ));
        rel *= ANSWER_TYPE_BOOST;
    }
    rel
}

/// `w × bm25/best + (1 − w) × cosine`, with seed 004's keyword-affinity
/// penalty for hits the index did not find and its short-CJK floor.
fn blend(ev: &Evidence, notes: &mut Vec<String>) -> Score {
    let sem = ev.semantic.unwrap_or(0.0).max(0.0);
    let lexical = ev.fts.unwrap_or(0.0).clamp(0.0, 1.0);
    let w = if ev.short_cjk {
        LEXICAL_WEIGHT_CJK_SHORT
    } else {
        ev.lexical_weight.unwrap_or(LEXICAL_WEIGHT)
    };
    let mut rel = w * lexical + (1.0 - w) * sem;
    notes.push(format!(
        "blend {w:.2} × bm25 {lexical:.3} + {:.2} × cosine {sem:.3} = {rel:.3}",
        1.0 - w
    ));
    if ev.short_cjk && ev.fts.is_some() && sem >= DEFAULT_SIM_FLOOR {
        rel = cjk_floor(rel, lexical, notes);
    }
    if ev.fts.is_none() && !ev.has_query_term {
        notes.push(format!(
            "keyword affinity penalty x{KEYWORD_AFFINITY_PENALTY}"
        ));
        rel *= KEYWORD_AFFINITY_PENALTY;
    }
    rel
}

/// The blend's lexical weight for vectors of `model` (the embedder's
/// name, a `@dimension` suffix ignored): `LEXICAL_WEIGHT_BY_MODEL`'s,
/// else `LEXICAL_WEIGHT`.
pub fn lexical_weight_for(model: &str) -> Score {
    let name = model.split('@').next().unwrap_or(model);
    LEXICAL_WEIGHT_BY_MODEL
        .iter()
        .find(|(m, _)| *m == name)
        .map_or(LEXICAL_WEIGHT, |&(_, w)| w)
}

/// Seed 004 §4.3: the cosine (above the similarity floor) is the relevance;
/// a dual hit is boosted by its BM25, an FTS-only hit is capped, a
/// semantic-only hit without any query term is penalised.
fn semantic_led(ev: &Evidence, notes: &mut Vec<String>) -> Score {
    let sem = ev.semantic.filter(|s| *s >= DEFAULT_SIM_FLOOR);
    match (sem, ev.fts) {
        (Some(sem), Some(fts)) => {
            let gate = (sem / DUAL_HIT_SEM_GATE).min(1.0);
            let boost = if ev.short_cjk {
                CJK_SHORT_FTS_BOOST
            } else {
                DUAL_HIT_FTS_BOOST
            };
            let factor = 1.0 + fts * boost * gate;
            notes.push(format!("dual-hit boost x{factor:.3}"));
            let rel = sem * factor;
            if ev.short_cjk {
                cjk_floor(rel, fts, notes)
            } else {
                rel
            }
        }
        (Some(sem), None) if ev.has_query_term => sem,
        (Some(sem), None) => {
            notes.push(format!(
                "keyword affinity penalty x{KEYWORD_AFFINITY_PENALTY}"
            ));
            sem * KEYWORD_AFFINITY_PENALTY
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
    }
}

/// Seed 004 §4.3's floor for short CJK queries both channels answered.
fn cjk_floor(rel: Score, fts: Score, notes: &mut Vec<String>) -> Score {
    let floor = CJK_SHORT_FLOOR_BASE + fts * CJK_SHORT_FLOOR_SCALE;
    if rel < floor {
        notes.push(format!("short CJK floor {floor:.3}"));
        floor
    } else {
        rel
    }
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
        relevance(&ev, Relevance::Blend, &mut Vec::new())
    }

    fn seed(ev: Evidence) -> Score {
        relevance(&ev, Relevance::Semantic, &mut Vec::new())
    }

    #[test]
    fn the_blend_weighs_the_cosine_by_the_embedder_that_made_it() {
        assert_eq!(lexical_weight_for("all-MiniLM-L6-v2"), LEXICAL_WEIGHT);
        assert_eq!(lexical_weight_for("all-mpnet-base-v2"), 0.25);
        assert_eq!(lexical_weight_for("all-mpnet-base-v2@256"), 0.25);
        assert_eq!(lexical_weight_for("text-embedding-3-small"), LEXICAL_WEIGHT);
        let ev = Evidence {
            semantic: Some(0.6),
            fts: Some(0.2),
            has_query_term: true,
            lexical_weight: Some(0.25),
            ..Default::default()
        };
        let mut notes = Vec::new();
        let r = relevance(&ev, Relevance::Blend, &mut notes);
        // 0.25 × 0.2 + 0.75 × 0.6, against 0.5 × 0.2 + 0.5 × 0.6 by default.
        assert!((r - 0.5).abs() < 1e-6);
        assert!(
            (rel(Evidence {
                lexical_weight: None,
                ..ev
            }) - 0.4)
                .abs()
                < 1e-6
        );
        assert!(
            notes[0].starts_with("blend 0.25 × bm25 0.200 + 0.75 × cosine 0.600"),
            "{notes:?}"
        );
    }

    #[test]
    fn seed_004_dual_hits_are_boosted_and_fts_only_hits_capped() {
        let both = seed(Evidence {
            semantic: Some(0.6),
            fts: Some(0.8),
            has_query_term: true,
            ..Default::default()
        });
        // 0.6 × (1 + 0.8 × 0.3 × min(1, 0.6 / 0.45))
        assert!((both - 0.744).abs() < 1e-5);
        let fts_only = seed(Evidence {
            fts: Some(1.0),
            has_query_term: true,
            ..Default::default()
        });
        assert!((fts_only - FTS_ONLY_CAP).abs() < 1e-6);
        // A cosine under the floor is no semantic evidence.
        let weak = seed(Evidence {
            semantic: Some(DEFAULT_SIM_FLOOR - 0.01),
            fts: Some(1.0),
            has_query_term: true,
            ..Default::default()
        });
        assert!((weak - FTS_ONLY_CAP).abs() < 1e-6);
        let bare = seed(Evidence {
            semantic: Some(0.5),
            ..Default::default()
        });
        assert!((bare - 0.5 * KEYWORD_AFFINITY_PENALTY).abs() < 1e-6);
    }

    #[test]
    fn weights_sum_to_one() {
        assert!((WEIGHT_IMPORTANCE + WEIGHT_RECENCY + WEIGHT_RELEVANCE - 1.0).abs() < 1e-6);
    }

    #[test]
    fn both_channels_beat_either_alone() {
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
        assert!(both > sem && both > fts);
        // 0.5 × 0.8 + 0.5 × 0.6
        assert!((both - 0.7).abs() < 1e-5);
    }

    #[test]
    fn relevance_rises_with_each_channel_score() {
        let at = |sem, fts| {
            rel(Evidence {
                semantic: Some(sem),
                fts: Some(fts),
                has_query_term: true,
                ..Default::default()
            })
        };
        for step in 0..10 {
            let x = step as f32 / 10.0;
            assert!(at(x + 0.1, 0.5) > at(x, 0.5));
            assert!(at(0.5, x + 0.1) > at(0.5, x));
        }
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
    fn requested_tags_lift_in_proportion() {
        let base = Evidence {
            semantic: Some(0.5),
            fts: Some(0.5),
            has_query_term: true,
            ..Default::default()
        };
        let half = rel(Evidence {
            tag_share: 0.5,
            ..base
        });
        let all = rel(Evidence {
            tag_share: 1.0,
            ..base
        });
        assert!(rel(base) < half && half < all);
        assert!((all - rel(base) * (1.0 + TAG_BOOST)).abs() < 1e-6);
    }

    #[test]
    fn a_named_speaker_lifts_the_turn() {
        let plain = Evidence {
            semantic: Some(0.5),
            fts: Some(0.5),
            has_query_term: true,
            ..Default::default()
        };
        let named = Evidence {
            speaker_named: true,
            ..plain
        };
        assert!((rel(named) - rel(plain) * SPEAKER_BOOST).abs() < 1e-6);
    }

    #[test]
    fn short_cjk_queries_lean_on_the_index_and_keep_the_seed_floor() {
        let ev = Evidence {
            semantic: Some(0.35),
            fts: Some(1.0),
            has_query_term: true,
            short_cjk: true,
            ..Default::default()
        };
        assert!(rel(ev) >= CJK_SHORT_FLOOR_BASE + CJK_SHORT_FLOOR_SCALE - 1e-6);
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
