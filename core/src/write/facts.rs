//! Adding a fact: (subject, predicate, object) with validity; an
//! `exclusive` predicate supersedes the subject's other objects, and the
//! superseded rows stay as history (seed 003 `resolve_conflict`).

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::ids::new_id;
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};
use crate::read::facts::{FACT_QUERY_LIMIT, field};
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Stores a triple. The same valid triple is returned as it is; with
    /// `exclusive`, the subject's other valid objects for the predicate are
    /// superseded by the new fact.
    pub fn add_fact(&self, input: FactInput) -> CoreResult<FactOutcome> {
        let namespace = validate::namespace(&input.namespace)?;
        let subject = field("subject", &input.subject)?;
        let predicate = field("predicate", &input.predicate)?;
        let object = field("object", &input.object)?;
        let confidence = validate::unit_interval("confidence", input.confidence)?.unwrap_or(1.0);
        let storage = self.ports().storage();
        let same_predicate = storage.query_facts(&FactQuery {
            namespaces: vec![namespace.clone()],
            subject: Some(subject.clone()),
            predicate: Some(predicate.clone()),
            limit: FACT_QUERY_LIMIT,
            ..Default::default()
        })?;
        if let Some(existing) = same_predicate
            .iter()
            .find(|f| f.object.eq_ignore_ascii_case(&object))
        {
            return Ok(FactOutcome {
                fact: existing.clone(),
                superseded: Vec::new(),
            });
        }
        let now = self.ports().clock().now();
        let fact = Fact {
            id: new_id("fact", self.ports().clock()),
            namespace: namespace.clone(),
            subject,
            predicate,
            object,
            confidence,
            valid_from: now,
            valid_until: None,
            superseded_by: None,
            memory_id: input.memory_id,
        };
        storage.put_fact(&fact)?;
        let mut superseded = Vec::new();
        if input.exclusive {
            for mut old in same_predicate {
                old.valid_until = Some(now);
                old.superseded_by = Some(fact.id.clone());
                storage.put_fact(&old)?;
                self.log_decision(
                    &namespace,
                    Action::Supersede,
                    &old.id,
                    format!(
                        "fact '{} {} {}' superseded by '{}' ({})",
                        old.subject, old.predicate, old.object, fact.object, fact.id
                    ),
                )?;
                self.supersede_memory(&old, &fact)?;
                superseded.push(old);
            }
        }
        Ok(FactOutcome { fact, superseded })
    }

    /// Seed 003 `resolve_conflict`: the old fact's memory keeps its row with
    /// confidence lowered; the new one records what it supersedes.
    fn supersede_memory(&self, old: &Fact, new: &Fact) -> CoreResult<()> {
        let storage = self.ports().storage();
        let (Some(old_id), Some(new_id)) = (&old.memory_id, &new.memory_id) else {
            return Ok(());
        };
        let now = self.ports().clock().now();
        for mut m in storage.get_memories(&[old_id.clone(), new_id.clone()])? {
            if &m.id == old_id {
                m.confidence = m.confidence.min(CONFLICT_OLD_CONFIDENCE);
                m.superseded_by = Some(new_id.clone());
            } else {
                m.supersedes = Some(old_id.clone());
            }
            m.modified_at = now;
            storage.update_memory(&m)?;
        }
        Ok(())
    }
}
