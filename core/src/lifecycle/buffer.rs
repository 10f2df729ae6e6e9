//! The Buffer's steps of a cycle (seed 004 §2.2–2.4): mechanical
//! promotion, LLM triage, cosine dedup and the capacity cap.

use std::collections::{BTreeMap, BTreeSet};

use super::plan::*;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts::{self};
use crate::text;
use crate::thresholds::*;
use crate::write::dedup;

impl<P: Ports> Engine<P> {
    /// Buffer→Working, mechanically: reinforcement score, or lessons and
    /// procedures after `KIND_PROMOTE_EPOCHS` in Buffer.
    pub(super) fn promote_buffer(&self, cycle: &mut Cycle, ns: &str) {
        let epoch = cycle.epoch(ns);
        let mut promote = Vec::new();
        for id in cycle.ids_where(ns, |m| m.layer == Layer::Buffer && !has(m, "distilled")) {
            let Some(m) = cycle.memories.get(&id) else {
                continue;
            };
            let score = m.reinforcement_score();
            if score >= BUFFER_PROMOTE_SCORE {
                promote.push((id, format!("reinforcement score {score:.1}")));
            } else if (has(m, "lesson") || m.kind == Kind::Procedural)
                && epoch.saturating_sub(m.created_epoch) >= KIND_PROMOTE_EPOCHS
            {
                promote.push((id, format!("{} after {KIND_PROMOTE_EPOCHS} epochs", m.kind)));
            }
        }
        for (id, why) in promote {
            cycle.act(&id, Action::Promote, Some(Layer::Working), why);
        }
    }

    /// Buffer triage (seed 004 §2.3): the heuristic first (every level but
    /// `full`; with `off` it is the whole triage), then the LLM on what the
    /// heuristic left and no earlier triage kept.
    pub(super) fn triage(&self, cycle: &mut Cycle, ns: &str) {
        let level = self.ports().llm().level();
        let now = cycle.now;
        let eligible = cycle.ids_where(ns, |m| {
            m.layer == Layer::Buffer
                && now - m.created_at > TRIAGE_MIN_AGE_MS
                && !["distilled", "ephemeral"].iter().any(|t| has(m, t))
        });
        let mut rest = Vec::new();
        for id in eligible {
            let verdict = match (level, cycle.memories.get(&id)) {
                (LlmLevel::Full, _) | (_, None) => None,
                (_, Some(m)) => prompts::triage::heuristic(m),
            };
            match verdict {
                Some(why) => cycle.act(
                    &id,
                    Action::Promote,
                    Some(Layer::Working),
                    format!("triage heuristic: {why}"),
                ),
                None => rest.push(id),
            }
        }
        if level == LlmLevel::Off {
            return;
        }
        let mut batch: Vec<Memory> = rest
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .filter(|m| !has(m, TAG_TRIAGED))
            .filter(|m| matches!(self.waits(ns, LlmComponent::Triage, &m.id), Ok(None)))
            .collect();
        batch.sort_by_key(|m| std::cmp::Reverse(m.created_at));
        batch.truncate(TRIAGE_BATCH);
        if batch.is_empty() {
            return;
        }
        let request = prompts::triage::request(&batch, now);
        let answer = self.ask_llm(ns, &request, |c| prompts::triage::parse(c, &batch));
        let verdicts = match answer {
            Ok(v) => v,
            Err(e) => {
                for m in &batch {
                    if let Err(e) = self.item_failed(ns, LlmComponent::Triage, &m.id, &e) {
                        cycle
                            .warnings
                            .push(format!("triage failure not recorded: {e}"));
                    }
                }
                cycle.warnings.push(format!("triage skipped: {e}"));
                return;
            }
        };
        for m in &batch {
            if let Err(e) = self.item_done(ns, LlmComponent::Triage, &m.id) {
                cycle
                    .warnings
                    .push(format!("triage success not recorded: {e}"));
            }
        }
        for v in verdicts {
            if v.promote {
                if let (Some(kind), Some(m)) = (v.kind, cycle.memories.get_mut(&v.id)) {
                    m.kind = kind;
                }
                cycle.act(
                    &v.id,
                    Action::Promote,
                    Some(Layer::Working),
                    format!("triage: {}", v.reason),
                );
            } else if let Some(m) = cycle.memories.get_mut(&v.id) {
                add_tag(m, TAG_TRIAGED);
                cycle.act(&v.id, Action::TriageKeep, None, v.reason);
            }
        }
    }

    /// Cosine duplicates inside the Buffer fold into the stronger memory,
    /// every pair compared. A Buffer grown far past its cap between cycles
    /// (a bulk import, a burst of writes) is first brought down to
    /// `BUFFER_DEDUP_ALL_PAIRS` by the cap's own rule — the weakest go to
    /// the trash, restorable — since all pairs of 100,000 never finished.
    pub(super) fn dedup_buffer(&self, cycle: &mut Cycle, ns: &str) -> CoreResult<()> {
        let most = BUFFER_DEDUP_ALL_PAIRS.max(cycle.limits.cap);
        if cycle.ids_where(ns, |m| m.layer == Layer::Buffer).len() > most {
            self.cap_buffer_at(cycle, ns, most);
        }
        let ids = cycle.ids_where(ns, |m| m.layer == Layer::Buffer);
        if ids.len() < 2 {
            return Ok(());
        }
        let vectors: Vec<Option<Vec<f32>>> = {
            let mut found: BTreeMap<String, Vec<f32>> = self
                .ports()
                .storage()
                .get_vectors(Target::Memories, &ids)?
                .into_iter()
                .collect();
            ids.iter().map(|id| found.remove(id)).collect()
        };
        let mut pairs = Vec::new();
        for (i, va) in vectors.iter().enumerate() {
            for (j, vb) in vectors.iter().enumerate().skip(i + 1) {
                if let (Some(va), Some(vb)) = (va, vb) {
                    let sim = crate::vector::cosine(va, vb);
                    if sim >= TRIAGE_DEDUP_SIM {
                        pairs.push((i, j, sim));
                    }
                }
            }
        }
        let mut tokens: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut token_set = |i: usize, m: &Memory| {
            tokens
                .entry(i)
                .or_insert_with(|| text::token_set(&m.content))
                .clone()
        };
        let mut gone: BTreeSet<String> = BTreeSet::new();
        for (i, j, sim) in pairs {
            let (a, b) = (&ids[i], &ids[j]);
            if gone.contains(a) || gone.contains(b) {
                continue;
            }
            let (Some(ma), Some(mb)) = (cycle.memories.get(a), cycle.memories.get(b)) else {
                continue;
            };
            // A protected memory (confirmed, `decay_rate` 0) is never the
            // one folded away; two protected memories both stay.
            if ma.is_protected() && mb.is_protected() {
                continue;
            }
            let jaccard = text::jaccard(&token_set(i, ma), &token_set(j, mb));
            if jaccard <= DEDUP_JACCARD_PREFILTER
                || dedup::is_substitution(&ma.content, &mb.content)
            {
                continue;
            }
            let strength = |m: &Memory| {
                (
                    m.is_protected(),
                    m.reinforcement_score(),
                    m.importance,
                    -m.created_at,
                )
            };
            let (winner, loser) = if strength(ma) >= strength(mb) {
                (a.clone(), b.clone())
            } else {
                (b.clone(), a.clone())
            };
            fold(cycle, &winner, &loser);
            cycle.evict(
                &loser,
                "merged",
                format!("buffer duplicate of {winner} (cosine {sim:.3})"),
            );
            gone.insert(loser);
        }
        Ok(())
    }

    /// Over the cap (`BUFFER_CAP` unless configured), the weakest Buffer
    /// memories go to the trash (oldest first among equals).
    pub(super) fn cap_buffer(&self, cycle: &mut Cycle, ns: &str) {
        self.cap_buffer_at(cycle, ns, cycle.limits.cap);
    }

    /// The cap's rule at `cap`.
    fn cap_buffer_at(&self, cycle: &mut Cycle, ns: &str, cap: usize) {
        // Protected memories count towards the cap but are never evicted.
        let mut buffer: Vec<(f32, f32, Millis, String)> = cycle
            .ids_where(ns, |m| m.layer == Layer::Buffer && !m.is_protected())
            .into_iter()
            .filter_map(|id| {
                let m = cycle.memories.get(&id)?;
                Some((m.reinforcement_score(), m.importance, m.created_at, id))
            })
            .collect();
        let protected = cycle
            .ids_where(ns, |m| m.layer == Layer::Buffer && m.is_protected())
            .len();
        if buffer.len() + protected <= cap {
            return;
        }
        buffer.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        let excess = (buffer.len() + protected).saturating_sub(cap);
        for (_, _, _, id) in buffer.into_iter().take(excess) {
            cycle.evict(&id, "evicted", format!("buffer over its cap of {cap}"));
        }
    }
}
