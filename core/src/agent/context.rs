//! Seed 003's context injection: the facts from earlier sessions relevant to
//! the prompt, plus the latest weekly reflection, as a markdown block.

use super::resume::REFLECTION_TAG;
use super::resume::date;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Embedder, Ports, Storage};
use crate::thresholds::*;
use crate::validate;
use crate::validate::readable_namespaces;

/// The query's cosine to a hit, where the vector channel found it.
fn cosine(hit: &Hit) -> Option<Score> {
    hit.explanation
        .channels
        .iter()
        .find(|c| c.channel == Channel::Vector)
        .map(|c| c.raw_score)
}

/// When context injection shows a hit (`thresholds.rs`,
/// `CONTEXT_MIN_COSINE`): close enough in meaning — above the cosine floor
/// and near the best hit's cosine — or relevant enough for the relevance
/// mode recall ran with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextGate {
    /// None: no hit passes by its cosine alone (the hash embedder's).
    pub min_cosine: Option<Score>,
    pub top_cosine_share: Score,
    pub min_relevance: Score,
    /// The prompt's best keyword match (BM25's first) passes too.
    pub best_keyword_match: bool,
}

impl ContextGate {
    /// The gate the product uses for hits ranked in `mode`, with vectors
    /// of the embedder named `model`.
    pub fn for_mode(mode: Relevance, model: &str) -> Self {
        let hash = model.starts_with(HASH_EMBEDDER_PREFIX);
        let min_relevance = match (mode, hash) {
            (Relevance::Blend, false) => CONTEXT_MIN_RELEVANCE_BLEND,
            (Relevance::Semantic, false) => CONTEXT_MIN_RELEVANCE_SEMANTIC,
            (Relevance::Blend, true) => CONTEXT_MIN_RELEVANCE_HASH_BLEND,
            (Relevance::Semantic, true) => CONTEXT_MIN_RELEVANCE_HASH_SEMANTIC,
        };
        Self {
            min_cosine: (!hash).then_some(CONTEXT_MIN_COSINE),
            top_cosine_share: CONTEXT_TOP_COSINE_SHARE,
            min_relevance,
            best_keyword_match: hash && mode == Relevance::Blend,
        }
    }

    /// Which of recall's hits (best first) pass.
    pub fn injected(&self, hits: &[Hit]) -> Vec<bool> {
        let best = hits.iter().filter_map(cosine).fold(0.0, f32::max);
        hits.iter()
            .map(|h| {
                let close = cosine(h)
                    .zip(self.min_cosine)
                    .is_some_and(|(c, floor)| c >= floor && c >= self.top_cosine_share * best);
                let first_by_keywords = self.best_keyword_match
                    && h.explanation
                        .channels
                        .iter()
                        .any(|c| c.channel == Channel::Fts && c.rank == 1);
                close || first_by_keywords || h.explanation.relevance >= self.min_relevance
            })
            .collect()
    }
}

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
        let request = RecallRequest {
            query: prompt.to_string(),
            namespace: namespace.clone(),
            limit,
            exclude_session: session_id.map(String::from),
            // Injection is not a search by the agent: it renews what it
            // shows (below) but is no access for seed 004's promotion.
            dry: true,
            ..Default::default()
        };
        let mode = request.relevance;
        let response = self.recall(request)?;
        let model = self.ports().embedder().info().model;
        let gate = ContextGate::for_mode(mode, &model).injected(&response.hits);
        let memories: Vec<Memory> = response
            .hits
            .into_iter()
            .zip(gate)
            .filter(|(_, inject)| *inject)
            .filter_map(|(h, _)| match h.item {
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
