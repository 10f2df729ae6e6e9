//! Seed 003's context injection: the facts from earlier sessions relevant to
//! the prompt, plus the latest weekly reflection, as a markdown block.

use super::resume::REFLECTION_TAG;
use super::resume::date;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;
use crate::validate;
use crate::validate::readable_namespaces;

impl<P: Ports> Engine<P> {
    /// Seed 003 context injection: facts from earlier sessions relevant to
    /// `prompt` and the latest reflection. Each injection is logged.
    pub fn context(
        &self,
        namespace: &str,
        prompt: &str,
        session_id: Option<&str>,
        limit: u32,
    ) -> CoreResult<ContextBlock> {
        let namespace = validate::namespace(namespace)?;
        let limit = if limit == 0 { CONTEXT_LIMIT } else { limit };
        let response = self.recall(RecallRequest {
            query: prompt.to_string(),
            namespace: namespace.clone(),
            limit,
            exclude_session: session_id.map(String::from),
            // Injection is not a search by the agent: it renews what it
            // shows (below) but is no access for seed 004's promotion.
            dry: true,
            ..Default::default()
        })?;
        let memories: Vec<Memory> = response
            .hits
            .into_iter()
            .filter(|h| h.explanation.relevance >= CONTEXT_MIN_RELEVANCE)
            .filter_map(|h| match h.item {
                Item::Memory(m) if !m.tags.iter().any(|t| t == REFLECTION_TAG) => Some(m),
                _ => None,
            })
            .collect();
        let reflection = self.latest_reflection(&readable_namespaces(&namespace))?;
        let mut text = String::new();
        if !memories.is_empty() {
            text.push_str("## Relevant memory\n");
            for m in &memories {
                text.push_str(&format!("- {} ({})\n", m.content, date(m.event_time)));
                self.log_decision(
                    &m.namespace,
                    Action::Inject,
                    &m.id,
                    format!("context for session {}", session_id.unwrap_or("-")),
                )?;
            }
        }
        // Shown to the agent: their life renews (seed 003's decay counts
        // from here), without counting as an access for promotion.
        let shown: Vec<String> = memories.iter().map(|m| m.id.clone()).collect();
        if !shown.is_empty() {
            self.ports().storage().renew_memories(&shown, self.now())?;
        }
        if let Some(r) = &reflection {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str("## Weekly insight\n");
            text.push_str(&r.content);
            text.push('\n');
        }
        Ok(ContextBlock {
            text,
            memories,
            reflection,
        })
    }
}
