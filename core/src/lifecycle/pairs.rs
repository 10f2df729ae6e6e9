//! Seed 004 §3.1–3.2 with an LLM: near-duplicate pairs merge, same-topic
//! updates reconcile; a pair judged distinct is not asked about again until
//! one of the two memories changes.

use std::collections::BTreeMap;

use super::plan::*;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts::{self, PairDecision};
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Seed 004 §3.1–3.2 with an LLM: near-duplicates merge, same-topic
    /// updates reconcile. Pairs come from the nearest neighbours of the
    /// memories changed since the last cycle; a pair judged distinct is
    /// remembered and not asked about again.
    pub(super) fn llm_pairs(&self, cycle: &mut Cycle, ns: &str, since: Millis) -> CoreResult<()> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Ok(());
        }
        let storage = self.ports().storage();
        let mut changed: Vec<(Millis, String)> = cycle
            .ids_where(ns, |m| m.modified_at >= since)
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).map(|m| (m.modified_at, id)))
            .collect();
        changed.sort_by(|a, b| b.cmp(a));
        changed.truncate(PAIR_SCAN_MAX);
        let ids: Vec<String> = changed.into_iter().map(|(_, id)| id).collect();
        let vectors: BTreeMap<String, Vec<f32>> = storage
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let filter = SearchFilter {
            namespaces: vec![ns.to_string()],
            ..Default::default()
        };
        let mut asked = 0;
        for id in ids {
            if asked >= LLM_PAIRS_PER_CYCLE {
                break;
            }
            let Some(v) = vectors.get(&id) else {
                continue;
            };
            let near = storage.vector_search(Target::Memories, v, &filter, PAIR_NEIGHBOURS + 1)?;
            let others: Vec<String> = near.iter().map(|h| h.id.clone()).collect();
            self.load_into(cycle, &others)?;
            for hit in near.into_iter().filter(|h| h.id != id) {
                let (Some(a), Some(b)) = (cycle.memories.get(&id), cycle.memories.get(&hit.id))
                else {
                    continue;
                };
                if !a.is_active() || !b.is_active() {
                    continue;
                }
                let key = pair_key(&a.id, &b.id);
                // Judged distinct (the key holds when): asked again only
                // once either memory changed after that judgement. Keys of
                // round 1 hold `keep_both`, read as judged at time 0.
                let judged_at = storage
                    .get_meta(&key)?
                    .map(|v| v.parse::<Millis>().unwrap_or(0));
                let changed_since = |at: Millis| a.modified_at.max(b.modified_at) > at;
                if cycle.judged.contains(&key) || judged_at.is_some_and(|at| !changed_since(at)) {
                    continue;
                }
                // A pair whose judgement failed waits out its backoff.
                if self.waits(ns, LlmComponent::Merge, &key)?.is_some() {
                    continue;
                }
                let (older, newer) = if a.created_at <= b.created_at {
                    (a, b)
                } else {
                    (b, a)
                };
                let upper = |m: &Memory| m.layer != Layer::Buffer;
                let request = if hit.score >= MERGE_SIM {
                    prompts::merge::request(older, newer)
                } else if hit.score > RECONCILE_MIN_SIM
                    && hit.score < RECONCILE_MAX_SIM
                    && upper(older)
                    && upper(newer)
                    && newer.created_at - older.created_at >= RECONCILE_MIN_GAP_MS
                {
                    prompts::reconcile::request(older, newer)
                } else {
                    continue;
                };
                let (older, newer) = (older.clone(), newer.clone());
                asked += 1;
                let decision = self.ask_llm(ns, &request, |content| {
                    if request.component == LlmComponent::Merge {
                        prompts::merge::parse(content)
                    } else {
                        prompts::reconcile::parse(content, &newer)
                    }
                });
                let sim = hit.score;
                // Seed 004's sandbox rule for merges (mnemo's review rules): the result must keep at
                // least half of the shorter input, and fit a memory.
                let shortest = older
                    .content
                    .chars()
                    .count()
                    .min(newer.content.chars().count());
                let decision = decision.and_then(|d| match d {
                    PairDecision::Merge(c) | PairDecision::Update(c)
                        if c.chars().count() < shortest / 2 =>
                    {
                        Err(crate::CoreError::Llm(format!(
                            "the merged text ({} chars) drops too much of the inputs",
                            c.chars().count()
                        )))
                    }
                    PairDecision::Merge(c) => validate::content(&c).map(PairDecision::Merge),
                    PairDecision::Update(c) => validate::content(&c).map(PairDecision::Update),
                    keep => Ok(keep),
                });
                let decision_ok = decision.is_ok();
                match decision {
                    Ok(PairDecision::Merge(content)) => {
                        let strength = |m: &Memory| (m.importance, m.access_count);
                        let (winner, loser) = if strength(&older) > strength(&newer) {
                            (older, newer)
                        } else {
                            (newer, older)
                        };
                        combine(cycle, &winner, &loser, content);
                        cycle.evict(
                            &loser.id,
                            "merged",
                            format!("{} into {} (cosine {sim:.3})", request.component, winner.id),
                        );
                    }
                    Ok(PairDecision::Update(content)) => {
                        combine(cycle, &newer, &older, content);
                        if let Some(n) = cycle.memories.get_mut(&newer.id) {
                            n.supersedes = Some(older.id.clone());
                        }
                        cycle.evict(
                            &older.id,
                            "superseded",
                            format!("updated by {} (cosine {sim:.3})", newer.id),
                        );
                        cycle.act(
                            &newer.id,
                            Action::Supersede,
                            None,
                            format!("supersedes {}", older.id),
                        );
                    }
                    Ok(PairDecision::KeepBoth) => cycle.judged.push(key.clone()),
                    Err(e) => {
                        self.item_failed(ns, LlmComponent::Merge, &key, &e)?;
                        cycle
                            .warnings
                            .push(format!("{} skipped: {e}", request.component));
                    }
                }
                if decision_ok {
                    self.item_done(ns, LlmComponent::Merge, &key)?;
                }
                break;
            }
        }
        Ok(())
    }
}
