//! Dialogue context in recall: a turn is not read alone. The turns of one
//! conversation about one thing sit in one session, so after scoring an
//! episode candidate gains `SESSION_WEIGHT ×` the best relevance among the
//! candidates of its session (the right session first, then the turn in
//! it), named in the hit's notes. It reads only the candidates' session ids,
//! nothing from the store. Every term reads the relevances from before the
//! pass, so the order of the candidates does not matter. Memories are left
//! alone: they are not turns of a dialogue.
//!
//! An answer follows its question: a candidate whose turn just before, in
//! its session, is also a candidate and asks something ("?") gains
//! `REPLY_WEIGHT ×` that question's relevance ("What did you paint?" finds
//! the question; the reply "A sunset over the lake" holds the answer). The
//! turn order is the `SESSION_TURN_KEY` ingest stamps on each turn, so it
//! too reads nothing from the store; turns stored before the stamp get no
//! such term. (The turn before is also in a turn's full-text index,
//! weighed `EPISODE_CONTEXT_WEIGHT`, but that counts only its words.)

use std::collections::BTreeMap;

use super::scored::Scored;
use crate::model::*;
use crate::read::scoring;
use crate::thresholds::{REPLY_WEIGHT, SESSION_TURN_KEY, SESSION_WEIGHT};

/// Adds the session and reply terms to the episode candidates in `scored`.
pub(crate) fn dialogue_context(scored: &mut [Scored]) {
    let before: Vec<Score> = scored.iter().map(|s| s.hit.explanation.relevance).collect();
    let mut best: BTreeMap<(&str, &str), Score> = BTreeMap::new();
    // (namespace, session, turn) → the candidate's index, for turns that ask.
    let mut questions: BTreeMap<(&str, &str, u64), usize> = BTreeMap::new();
    let mut turns: Vec<Option<u64>> = Vec::with_capacity(scored.len());
    for (i, s) in scored.iter().enumerate() {
        let Item::Episode(e) = &s.hit.item else {
            turns.push(None);
            continue;
        };
        let key = (e.namespace.as_str(), e.session_id.as_str());
        let b = best.entry(key).or_insert(0.0);
        *b = b.max(before[i]);
        let turn = session_turn(e);
        if let Some(t) = turn.filter(|_| e.content.contains('?')) {
            questions.insert((key.0, key.1, t), i);
        }
        turns.push(turn);
    }
    let bonuses: Vec<(Score, Option<Score>)> = scored
        .iter()
        .zip(&turns)
        .map(|(s, turn)| match &s.hit.item {
            Item::Episode(e) => {
                let key = (e.namespace.as_str(), e.session_id.as_str());
                let top = best.get(&key).copied().unwrap_or(0.0);
                let asked = turn
                    .and_then(|t| t.checked_sub(1))
                    .and_then(|t| questions.get(&(key.0, key.1, t)))
                    .map(|&j| before[j]);
                (top, asked)
            }
            Item::Memory(_) => (0.0, None),
        })
        .collect();
    for (s, (top, asked)) in scored.iter_mut().zip(bonuses) {
        if !matches!(s.hit.item, Item::Episode(_)) {
            continue;
        }
        let ex = &mut s.hit.explanation;
        let bonus = SESSION_WEIGHT * top;
        if bonus > 0.0 {
            ex.relevance += bonus;
            ex.notes.push(format!(
                "session context: its session's best match {top:.3}: +{bonus:.3}"
            ));
        }
        if let Some(q) = asked.filter(|q| *q > 0.0) {
            let bonus = REPLY_WEIGHT * q;
            ex.relevance += bonus;
            ex.notes.push(format!(
                "replies to a question that matched {q:.3}: +{bonus:.3}"
            ));
        }
        s.hit.score = scoring::combine(ex.importance, ex.recency, ex.relevance, ex.layer_bonus);
    }
}

/// A turn's place in its session, as ingest stamped it.
fn session_turn(e: &Episode) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(&e.attributes)
        .ok()?
        .get(SESSION_TURN_KEY)?
        .as_u64()
}
