//! Seed 004 §3.3: undistilled session notes become one project-status
//! snapshot in Working.

use super::plan::*;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts;
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Seed 004 §3.3: three or more undistilled session notes become one
    /// project-status snapshot in Working (unless a near-identical one exists).
    pub(super) fn distill_notes(&self, cycle: &mut Cycle, ns: &str) -> CoreResult<()> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Ok(());
        }
        let mut notes: Vec<Memory> = cycle
            .ids_where(ns, |m| {
                is_session_note(m) && !has(m, "distilled") && !has(m, "auto-distilled")
            })
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .collect();
        if notes.len() < DISTILL_MIN_NOTES {
            return Ok(());
        }
        notes.sort_by_key(|m| std::cmp::Reverse(m.created_at));
        notes.truncate(DISTILL_MAX_NOTES);
        let request = prompts::distill::request(&notes);
        let snapshot = match self.ask_llm(ns, &request, prompts::distill::parse) {
            Ok(s) => s,
            Err(e) => {
                cycle.warnings.push(format!("distill skipped: {e}"));
                return Ok(());
            }
        };
        for n in &notes {
            if let Some(m) = cycle.memories.get_mut(&n.id) {
                add_tag(m, "distilled");
            }
            cycle.dirty.insert(n.id.clone());
        }
        let existing = cycle.ids_where(ns, |m| has(m, "project-status"));
        if let Some(v) = self.embed_one(&snapshot)? {
            let stored = self
                .ports()
                .storage()
                .get_vectors(Target::Memories, &existing)?;
            if let Some((id, _)) = stored
                .iter()
                .find(|(_, w)| crate::vector::cosine(&v, w) >= TRIAGE_DEDUP_SIM)
            {
                cycle
                    .warnings
                    .push(format!("distillation matches {id}; not stored again"));
                return Ok(());
            }
        }
        let memory = Memory {
            layer: Layer::Working,
            tags: vec!["project-status".into(), "auto-distilled".into()],
            source: Some("distill".into()),
            source_ids: notes.iter().map(|n| n.id.clone()).collect(),
            ..Memory::new(
                crate::ids::new_id("mem", self.ports().clock()),
                ns.to_string(),
                validate::content(&snapshot)?,
                cycle.now,
                cycle.epoch(ns),
            )
        };
        cycle.actions.push(LifecycleAction {
            action: Action::Distill,
            memory_id: memory.id.clone(),
            namespace: ns.to_string(),
            from_layer: None,
            to_layer: Some(Layer::Working),
            detail: format!("{} session notes", notes.len()),
        });
        cycle.inserts.push(memory);
        Ok(())
    }
}
