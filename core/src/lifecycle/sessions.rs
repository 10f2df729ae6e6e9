//! Seed 003's session consolidation: the dialogue of a session becomes
//! facts (LLM `extract`, or the rule extractor when the LLM level is `off`),
//! saved through `remember` so insert dedup, vectors and entity links apply.

use super::extract;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Clock, Llm, Ports, Storage};
use crate::prompts::{self, ExtractedFact};
use crate::text;
use crate::thresholds::*;
use crate::validate;
use crate::write::dedup;

impl<P: Ports> Engine<P> {
    /// Seed 003's session-switch trigger: the named open sessions become
    /// facts now; no lifecycle step runs and the epoch stays.
    pub fn consolidate_sessions(
        &self,
        namespace: &str,
        ids: &[String],
    ) -> CoreResult<ConsolidateReport> {
        let namespace = validate::namespace(namespace)?;
        let mut sessions = Vec::new();
        for id in ids {
            match self.ports().storage().get_session(&namespace, id)? {
                Some(s) if s.consolidated_at.is_none() => sessions.push(s),
                Some(_) => {}
                None => {
                    return Err(crate::CoreError::NotFound(format!(
                        "no session {id} in namespace {namespace}"
                    )));
                }
            }
        }
        self.begin_llm_work();
        let mut report = ConsolidateReport {
            epoch: self.epoch(&namespace)?,
            ..Default::default()
        };
        self.distill_sessions(sessions, false, &mut report)?;
        report.warnings.extend(self.llm_leftovers());
        Ok(report)
    }

    /// Session consolidation of `sessions` into the report. A session whose
    /// extraction failed stays pending and waits (`guard/waiting.rs`): a
    /// later cycle tries it once its backoff has passed, not every trigger.
    pub(super) fn distill_sessions(
        &self,
        sessions: Vec<Session>,
        dry: bool,
        report: &mut ConsolidateReport,
    ) -> CoreResult<()> {
        let mut waiting = 0;
        for session in sessions {
            let (ns, id) = (session.namespace.clone(), session.id.clone());
            if self.waits(&ns, LlmComponent::Extract, &id)?.is_some() {
                waiting += 1;
                continue;
            }
            if dry {
                report.sessions.push(id);
                continue;
            }
            let mut added = 0;
            let outcome = self.consolidate_session_counting(session, &mut added);
            // Facts of the chunks that went through count even when a later
            // chunk failed (they are kept; the watermark is past them).
            report.facts_added += added;
            match outcome {
                Ok(()) => {
                    self.item_done(&ns, LlmComponent::Extract, &id)?;
                    report.sessions.push(id);
                }
                Err(e) => {
                    self.item_failed(&ns, LlmComponent::Extract, &id, &e)?;
                    report
                        .warnings
                        .push(format!("session {id} not consolidated: {e}"));
                }
            }
        }
        if waiting > 0 {
            report.warnings.push(format!(
                "{waiting} session(s) wait for a retry after failed extractions (`mnemo llm-waiting`)"
            ));
        }
        Ok(())
    }

    /// Seed 003 session consolidation: the dialogue of one session becomes
    /// facts; returns how many were added. Idempotent: a session is marked
    /// consolidated only once every chunk went through, and saving dedups.
    pub fn consolidate_session(&self, session: Session) -> CoreResult<u32> {
        let mut added = 0;
        self.consolidate_session_counting(session, &mut added)?;
        Ok(added)
    }

    /// [`Self::consolidate_session`], counting into `added` as it goes, so a
    /// failure after some chunks still reports their facts.
    fn consolidate_session_counting(
        &self,
        mut session: Session,
        added: &mut u32,
    ) -> CoreResult<()> {
        let storage = self.ports().storage();
        let llm = self.ports().llm().level() != LlmLevel::Off;
        // From the watermark: turns consolidated before are not read again,
        // so a retried session never reinforces its facts twice.
        let mut offset = session.consolidated_turns;
        let from = offset;
        loop {
            let chunk = storage.session_episodes(
                &session.namespace,
                &session.id,
                offset,
                CONSOLIDATION_CHUNK,
            )?;
            if chunk.is_empty() {
                break;
            }
            offset += chunk.len() as u32;
            let facts = if llm {
                let turns: Vec<(String, String)> = chunk
                    .iter()
                    .map(|e| (e.source_role.clone(), e.content.clone()))
                    .collect();
                let request = prompts::extract::request(&turns);
                self.ask_llm(&session.namespace, &request, |c| {
                    prompts::extract::parse(c, turns.len())
                })?
            } else {
                chunk
                    .iter()
                    .enumerate()
                    .flat_map(|(i, e)| extract::facts_in_turn(&e.source_role, &e.content, i))
                    .collect()
            };
            for fact in facts {
                *added += u32::from(self.save_fact(&session, &chunk, fact)?);
            }
            // The chunk is done: a later failure resumes after it.
            session.consolidated_turns = offset;
            storage.put_session(&session)?;
        }
        session.consolidated_at = Some(self.ports().clock().now());
        storage.put_session(&session)?;
        self.log_decision(
            &session.namespace,
            Action::ConsolidateSession,
            &session.id,
            format!("turns {from}..{offset}, {added} new facts"),
        )?;
        Ok(())
    }

    /// Seed 003 `save_facts_batch` for one fact: a Jaccard-similar stored
    /// memory is reinforced; otherwise the fact is remembered (Buffer) with
    /// its provenance, and its triple is added (superseding the old value of
    /// a single-valued predicate). Returns whether a memory was created.
    pub(super) fn save_fact(
        &self,
        session: &Session,
        chunk: &[Episode],
        fact: ExtractedFact,
    ) -> CoreResult<bool> {
        let storage = self.ports().storage();
        let namespace = &session.namespace;
        let sources: Vec<&Episode> = fact.turns.iter().filter_map(|i| chunk.get(*i)).collect();
        let tokens = text::token_set(&fact.content);
        let terms = text::fts_terms(&fact.content);
        let filter = SearchFilter {
            namespaces: vec![namespace.clone()],
            ..Default::default()
        };
        let near = storage.fts_search(Target::Memories, &terms, &filter, DEDUP_CANDIDATES, 0.0)?;
        let ids: Vec<String> = near.into_iter().map(|h| h.id).collect();
        if let Some(existing) = storage.get_memories(&ids)?.into_iter().find(|m| {
            m.is_active()
                && text::jaccard(&tokens, &text::token_set(&m.content)) >= FACT_BATCH_JACCARD
                && !dedup::is_substitution(&fact.content, &m.content)
        }) {
            self.reinforce(existing, &fact.content, Some("consolidation"), self.now())?;
            return Ok(false);
        }
        let outcome = self.remember(RememberRequest {
            namespace: namespace.clone(),
            content: fact.content.clone(),
            kind: Some(fact.kind),
            tags: vec!["fact".into()],
            source: Some("consolidation".into()),
            session_id: Some(session.id.clone()),
            importance: fact.importance,
            attributes: None,
            event_time: sources.first().map(|e| e.event_time),
            skip_dedup: false,
        })?;
        let mut memory = outcome.memory;
        if outcome.created {
            memory.source_ids = sources.iter().map(|e| e.id.clone()).collect();
            memory.source_role = sources.first().map(|e| e.source_role.clone());
            storage.update_memory(&memory)?;
        }
        if let Some((subject, predicate, object)) = fact.triple {
            self.add_fact(FactInput {
                namespace: namespace.clone(),
                subject,
                predicate,
                object,
                confidence: None,
                memory_id: Some(memory.id.clone()),
                exclusive: fact.exclusive,
            })?;
        }
        Ok(outcome.created)
    }
}
