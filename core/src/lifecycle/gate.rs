//! Working→Core (seed 004 §2.5): Core hygiene, then the gate — the
//! whitelist, decided by the LLM or the heuristic — with escalating
//! rejection cooldowns.

use super::plan::*;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts::{self, Verdict};
use crate::thresholds::*;

impl<P: Ports> Engine<P> {
    /// Seed 004 §3 step 1, tag cleanup: a stale first `gate-rejected`
    /// marker leaves a Working memory (see `TAG_CLEANUP_EPOCHS`), and an
    /// orphaned `promotion` tag leaves Working and Core memories (they are
    /// promoted already; the tag only misleads the triage and the gate).
    pub(super) fn tag_cleanup(&self, cycle: &mut Cycle, ns: &str) {
        let epoch = cycle.epoch(ns);
        let stale = |m: &Memory| {
            let rejected_epoch = attr_u64(m, "gate_rejected_epoch").unwrap_or(0);
            let rejected_at = attr_u64(m, "gate_rejected_at").map_or(0, |t| t as Millis);
            m.layer == Layer::Working
                && has(m, TAG_REJECTED)
                && epoch.saturating_sub(rejected_epoch) >= TAG_CLEANUP_EPOCHS
                && m.last_accessed.is_none_or(|a| a < rejected_at)
        };
        let orphan = |m: &Memory| m.layer > Layer::Buffer && has(m, TAG_PROMOTION);
        for id in cycle.ids_where(ns, |m| stale(m) || orphan(m)) {
            let Some(m) = cycle.memories.get_mut(&id) else {
                continue;
            };
            let mut removed = Vec::new();
            if stale(m) {
                m.tags.retain(|t| t != TAG_REJECTED);
                removed.push(format!(
                    "{TAG_REJECTED} (no read in {TAG_CLEANUP_EPOCHS} epochs)"
                ));
            }
            if orphan(m) {
                m.tags.retain(|t| t != TAG_PROMOTION);
                removed.push(format!("{TAG_PROMOTION} (already in {})", m.layer));
            }
            m.modified_at = cycle.now;
            cycle.act(
                &id,
                Action::Cleanup,
                None,
                format!("removed {}", removed.join(", ")),
            );
        }
    }

    /// Seed 004 §3 step 5, the Core overlap scan: every pair of the
    /// namespace's Core memories above `CORE_OVERLAP_SIM` is flagged once (a
    /// decision `overlap` on the first of the two; the pair's metadata key
    /// keeps it from being flagged again until one of them changes).
    pub(super) fn core_overlap(&self, cycle: &mut Cycle, ns: &str) -> CoreResult<()> {
        let core = cycle.ids_where(ns, |m| m.layer == Layer::Core);
        if core.len() < 2 {
            return Ok(());
        }
        let storage = self.ports().storage();
        let vectors = storage.get_vectors(Target::Memories, &core)?;
        for (i, (a, va)) in vectors.iter().enumerate() {
            for (b, vb) in &vectors[i + 1..] {
                let sim = crate::vector::cosine(va, vb);
                if sim <= CORE_OVERLAP_SIM {
                    continue;
                }
                let key = overlap_key(a, b);
                let changed = |id: &str| cycle.memories.get(id).map_or(0, |m| m.modified_at);
                let flagged_at = storage
                    .get_meta(&key)?
                    .and_then(|v| v.parse::<Millis>().ok());
                if flagged_at.is_some_and(|at| at >= changed(a).max(changed(b))) {
                    continue;
                }
                cycle.judged.push(key);
                cycle.actions.push(LifecycleAction {
                    action: Action::Overlap,
                    memory_id: a.clone(),
                    namespace: ns.to_string(),
                    from_layer: Some(Layer::Core),
                    to_layer: None,
                    detail: format!("overlaps {b} in Core (cosine {sim:.3})"),
                });
            }
        }
        Ok(())
    }

    /// Session notes and ephemeral memories do not belong in Core.
    pub(super) fn core_hygiene(&self, cycle: &mut Cycle, ns: &str) {
        for id in cycle.ids_where(ns, |m| {
            m.layer == Layer::Core && (is_session_note(m) || has(m, "ephemeral"))
        }) {
            cycle.act(
                &id,
                Action::Demote,
                Some(Layer::Working),
                "session note or ephemeral in Core".into(),
            );
        }
    }

    /// Working→Core: candidates by reinforcement and importance (or age),
    /// outside their rejection cooldown, through the gate.
    pub(super) fn gate(&self, cycle: &mut Cycle, ns: &str) {
        let (epoch, now) = (cycle.epoch(ns), cycle.now);
        let candidates: Vec<Memory> = cycle
            .ids_where(ns, |m| {
                if m.layer != Layer::Working
                    || is_session_note(m)
                    || NOT_FOR_CORE.iter().any(|t| has(m, t))
                    || has(m, TAG_REJECTED_FINAL)
                    || m.importance < PROMOTE_MIN_IMPORTANCE
                {
                    return false;
                }
                let rejected_at = attr_u64(m, "gate_rejected_epoch").unwrap_or(0);
                let cooldown = if has(m, TAG_REJECTED_2) {
                    GATE_RETRY2_EPOCHS
                } else if has(m, TAG_REJECTED) {
                    GATE_RETRY_EPOCHS
                } else {
                    0
                };
                if epoch.saturating_sub(rejected_at) < cooldown {
                    return false;
                }
                let score = m.reinforcement_score();
                score >= PROMOTE_THRESHOLD
                    || (now - m.created_at > WORKING_AGE_PROMOTE_MS && score > 0.0)
            })
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .collect();
        if candidates.is_empty() {
            return;
        }
        let level = self.ports().llm().level();
        let mut verdicts: Vec<Verdict> = Vec::new();
        let mut for_llm: Vec<Memory> = Vec::new();
        for m in &candidates {
            match (level, prompts::gate::heuristic(m)) {
                (LlmLevel::Full, _) => for_llm.push(m.clone()),
                (_, Some(category)) => verdicts.push(Verdict {
                    id: m.id.clone(),
                    promote: true,
                    kind: None,
                    reason: format!("heuristic: {category}"),
                }),
                (LlmLevel::Off, None) => verdicts.push(Verdict {
                    id: m.id.clone(),
                    promote: false,
                    kind: None,
                    reason: "heuristic: not a lesson, identity, constraint or decision".into(),
                }),
                (LlmLevel::Auto, None) => for_llm.push(m.clone()),
            }
        }
        // Candidates whose gate call failed wait out their backoff; the
        // strongest go first when a budget cuts the batch.
        for_llm.retain(|m| matches!(self.waits(ns, LlmComponent::Gate, &m.id), Ok(None)));
        for_llm.sort_by(|a, b| b.reinforcement_score().total_cmp(&a.reinforcement_score()));
        if !for_llm.is_empty() {
            let request = prompts::gate::request(&for_llm, now);
            let answer = self.ask_llm(ns, &request, |c| prompts::gate::parse(c, &for_llm));
            let recorded = match &answer {
                Ok(_) => for_llm
                    .iter()
                    .try_for_each(|m| self.item_done(ns, LlmComponent::Gate, &m.id)),
                Err(e) => for_llm
                    .iter()
                    .try_for_each(|m| self.item_failed(ns, LlmComponent::Gate, &m.id, e)),
            };
            if let Err(e) = recorded {
                cycle
                    .warnings
                    .push(format!("gate outcome not recorded: {e}"));
            }
            match answer {
                Ok(v) => verdicts.extend(v),
                Err(e) => cycle.warnings.push(format!("gate skipped: {e}")),
            }
        }
        for v in verdicts {
            if v.promote {
                if let Some(m) = cycle.memories.get_mut(&v.id) {
                    m.tags.retain(|t| !t.starts_with(TAG_REJECTED));
                    if let Some(kind) = v.kind {
                        m.kind = kind;
                    }
                }
                cycle.act(&v.id, Action::Promote, Some(Layer::Core), v.reason);
            } else if let Some(m) = cycle.memories.get_mut(&v.id) {
                let next = if has(m, TAG_REJECTED_2) {
                    TAG_REJECTED_FINAL
                } else if has(m, TAG_REJECTED) {
                    TAG_REJECTED_2
                } else {
                    TAG_REJECTED
                };
                m.tags.retain(|t| !t.starts_with(TAG_REJECTED));
                add_tag(m, next);
                set_attr(m, "gate_rejected_epoch", serde_json::json!(epoch));
                set_attr(m, "gate_rejected_at", serde_json::json!(now));
                cycle.act(
                    &v.id,
                    Action::GateReject,
                    None,
                    format!("{next}: {}", v.reason),
                );
            }
        }
    }
}

/// The metadata key of a flagged Core pair.
fn overlap_key(a: &str, b: &str) -> String {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    format!("core-overlap:{x}:{y}")
}
