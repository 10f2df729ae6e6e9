//! Session context in recall: a turn is not read alone. The turns of one
//! conversation about one thing sit in one session, so after scoring an
//! episode candidate gains `SESSION_WEIGHT ×` the best relevance among the
//! candidates of its session (the right session first, then the turn in
//! it), named in the hit's notes. It reads only the candidates' session ids,
//! nothing from the store. Every term reads the relevances from before the
//! pass, so the order of the candidates does not matter. Memories are left
//! alone: they are not turns of a dialogue.
//!
//! The turn just before a candidate (an answer follows its question) is
//! already in its full-text index, weighed `EPISODE_CONTEXT_WEIGHT`; as a
//! second term over the fused candidates it added R@10 0.008 on LoCoMo dev
//! for a read of each candidate session per query, 3.5 ms of recall's p50
//! (README, "Round 2 (issue 19)"), so it is not here.

use std::collections::BTreeMap;

use crate::model::*;
use crate::read::recall::Scored;
use crate::read::scoring;
use crate::thresholds::SESSION_WEIGHT;

/// Adds the session term to the episode candidates in `scored`.
pub(crate) fn session_context(scored: &mut [Scored]) {
    let mut best: BTreeMap<(String, String), Score> = BTreeMap::new();
    for s in scored.iter() {
        if let Item::Episode(e) = &s.hit.item {
            let b = best
                .entry((e.namespace.clone(), e.session_id.clone()))
                .or_insert(0.0);
            *b = b.max(s.hit.explanation.relevance);
        }
    }
    for s in scored.iter_mut() {
        let Item::Episode(e) = &s.hit.item else {
            continue;
        };
        let top = best
            .get(&(e.namespace.clone(), e.session_id.clone()))
            .copied()
            .unwrap_or(0.0);
        let bonus = SESSION_WEIGHT * top;
        if bonus <= 0.0 {
            continue;
        }
        let ex = &mut s.hit.explanation;
        ex.relevance += bonus;
        ex.notes.push(format!(
            "session context: its session's best match {top:.3}: +{bonus:.3}"
        ));
        s.hit.score = scoring::combine(ex.importance, ex.recency, ex.relevance, ex.layer_bonus);
    }
}
