//! Dialogue context in recall: a turn is not read alone. A reply often
//! carries the answer without the words of the question it answers ("It
//! was Matt Patterson!"), and the turns of one conversation about one thing
//! sit in one session. So, after scoring, an episode candidate gains
//!
//! - `TURN_BEFORE_WEIGHT ×` the relevance of the turn just before it in
//!   its session, when that turn is a candidate too (the answer follows the
//!   question it answers), and
//! - `SESSION_WEIGHT ×` the best relevance among the candidates of its
//!   session (the right session first, then the turn in it).
//!
//! Both read the relevances computed before either was added, so the order
//! of the candidates does not matter, and both are named in the hit's
//! notes. Memories are left alone: they are not turns of a dialogue.

use std::collections::{BTreeMap, HashMap};

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::read::recall::Scored;
use crate::read::scoring;
use crate::thresholds::*;

impl<P: Ports> Engine<P> {
    /// Adds the dialogue-context terms to the episode candidates in `scored`.
    pub(crate) fn dialogue_context(&self, scored: &mut [Scored]) -> CoreResult<()> {
        // Candidates by session, and each one's relevance before this pass.
        let mut sessions: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
        for (i, s) in scored.iter().enumerate() {
            if let Item::Episode(e) = &s.hit.item {
                sessions
                    .entry((e.namespace.as_str(), e.session_id.as_str()))
                    .or_default()
                    .push(i);
            }
        }
        let relevance: HashMap<&str, Score> = scored
            .iter()
            .filter(|s| matches!(s.hit.item, Item::Episode(_)))
            .map(|s| (s.hit.item.id(), s.hit.explanation.relevance))
            .collect();
        let mut added: Vec<(usize, Score, String)> = Vec::new();
        for ((namespace, session), members) in &sessions {
            let best = members
                .iter()
                .map(|&i| scored[i].hit.explanation.relevance)
                .fold(0.0f32, f32::max);
            let mut before: HashMap<String, String> = HashMap::new();
            if members.len() > 1 {
                // Which turn precedes which: the session in dialogue order,
                // read only when two of its turns are candidates.
                let turns = self.ports().storage().session_episodes(
                    namespace,
                    session,
                    0,
                    DIALOGUE_SESSION_SCAN,
                )?;
                for pair in turns.windows(2) {
                    before.insert(pair[1].id.clone(), pair[0].id.clone());
                }
            }
            for &i in members {
                let id = scored[i].hit.item.id();
                let mut bonus = 0.0;
                let mut why = Vec::new();
                if let Some((prev, r)) = before
                    .get(id)
                    .and_then(|p| relevance.get(p.as_str()).map(|r| (p, *r)))
                {
                    let b = TURN_BEFORE_WEIGHT * r;
                    bonus += b;
                    why.push(format!("the turn before ({prev}) matches: +{b:.3}"));
                }
                let b = SESSION_WEIGHT * best;
                if b > 0.0 {
                    bonus += b;
                    why.push(format!("its session's best match {best:.3}: +{b:.3}"));
                }
                if bonus > 0.0 {
                    added.push((i, bonus, why.join("; ")));
                }
            }
        }
        for (i, bonus, why) in added {
            let ex = &mut scored[i].hit.explanation;
            ex.relevance += bonus;
            ex.notes.push(format!("dialogue context: {why}"));
            scored[i].hit.score =
                scoring::combine(ex.importance, ex.recency, ex.relevance, ex.layer_bonus);
        }
        Ok(())
    }
}
