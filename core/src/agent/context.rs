//! Seed 003's context injection: the memories from earlier sessions that
//! the prompt needs, plus the latest weekly reflection, as a markdown block.
//!
//! Recall first: its own ranking is where the candidates start, joined by
//! the memories nearest the prompt's vector (recall's vector channel drops
//! what is under seed 004's similarity floor) and by those nearest the
//! descriptions of the prompt's two best life domains (`domains.rs`), so
//! "suggest a dinner recipe" meets the food intolerance it shares no word
//! with. `gate.rs` decides which are injected; a prompt about the world,
//! not the user, injects nothing.

use std::collections::HashMap;

use super::domains::Prototypes;
use super::gate::{self, HashGate, Signals};
use super::resume::REFLECTION_TAG;
use super::resume::date;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Embedder, Ports, Storage};
use crate::read::admits;
use crate::thresholds::*;
use crate::validate;
use crate::vector;

/// What a context injection is asked: the engine export's arguments, and
/// the relevance mode its recall ranks in (the default's, unless a host or
/// the evaluation asks another).
#[derive(Debug, Clone)]
pub struct ContextQuery<'a> {
    pub namespace: &'a str,
    pub prompt: &'a str,
    pub session_id: Option<&'a str>,
    /// At most this many memories; 0: `CONTEXT_LIMIT`.
    pub limit: u32,
    pub relevance: Relevance,
}

impl Default for ContextQuery<'_> {
    fn default() -> Self {
        Self {
            namespace: "",
            prompt: "",
            session_id: None,
            limit: 0,
            relevance: RecallRequest::default().relevance,
        }
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
        self.context_for(&ContextQuery {
            namespace,
            prompt,
            session_id,
            limit,
            ..Default::default()
        })
    }

    /// `context`, in the relevance mode `q` names.
    pub fn context_for(&self, q: &ContextQuery) -> CoreResult<ContextBlock> {
        let namespace = validate::namespace(q.namespace)?;
        let limit = if q.limit == 0 { CONTEXT_LIMIT } else { q.limit };
        let session_id = q.session_id;
        let hash = self
            .ports()
            .embedder()
            .info()
            .model
            .starts_with(HASH_EMBEDDER_PREFIX)
            || !self.ports().storage().vectors_enabled()?;
        let request = RecallRequest {
            query: q.prompt.to_string(),
            namespace: namespace.clone(),
            // The hash gate reads recall's page; the model's gate weighs more.
            limit: if hash {
                limit
            } else {
                limit.max(CONTEXT_CANDIDATES)
            },
            exclude_session: session_id.map(String::from),
            // Injection is not a search by the agent: it renews what it
            // shows (below) but is no access for seed 004's promotion.
            dry: true,
            relevance: q.relevance,
            ..Default::default()
        };
        let mode = request.relevance;
        let response = self.recall(request)?;
        let memories = if hash {
            let gate = HashGate::for_mode(mode);
            shown(response.hits)
                .filter(|h| gate.passes(h))
                .filter_map(|h| memory(h.item))
                .take(limit as usize)
                .collect()
        } else {
            let filter = SearchFilter {
                namespaces: self.readable_namespaces(&namespace)?,
                exclude_session: session_id.map(String::from),
                ..Default::default()
            };
            self.weigh(q.prompt.trim(), &filter, response.hits, limit)?
        };
        let reflection = self.latest_reflection(&self.readable_namespaces(&namespace)?)?;
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
        // from here), without counting as an access for promotion; a
        // shared namespace's memories are not this namespace's to renew.
        let renewed: Vec<String> = memories
            .iter()
            .filter(|m| m.namespace == namespace)
            .map(|m| m.id.clone())
            .collect();
        if !renewed.is_empty() {
            self.ports()
                .storage()
                .renew_memories(&renewed, self.now())?;
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

/// Recall's hits a context may show: memories, not reflections (the block
/// has a section of its own for the latest).
fn shown(hits: Vec<Hit>) -> impl Iterator<Item = Hit> {
    hits.into_iter().filter(|h| match &h.item {
        Item::Memory(m) => !m.tags.iter().any(|t| t == REFLECTION_TAG),
        Item::Episode(_) => false,
    })
}

fn memory(item: Item) -> Option<Memory> {
    match item {
        Item::Memory(m) => Some(m),
        Item::Episode(_) => None,
    }
}

/// One candidate: the memory and what recall said of it.
struct Candidate {
    memory: Memory,
    keywords: f32,
    first: bool,
    /// Recall's first hit found by both the keyword and the vector channel.
    dual_first: bool,
}

impl<P: Ports> Engine<P> {
    /// The model embedder's gate: recall's hits, the prompt's nearest
    /// memories and its domains' memories, weighed by `gate::Signals`.
    fn weigh(
        &self,
        prompt: &str,
        filter: &SearchFilter,
        hits: Vec<Hit>,
        limit: u32,
    ) -> CoreResult<Vec<Memory>> {
        let storage = self.ports().storage();
        let embedder = self.ports().embedder();
        // The vector recall made (a host's cache serves it again).
        let Some(query) = embedder.embed(&[prompt.to_string()])?.pop() else {
            return Ok(Vec::new());
        };
        let prototypes = Prototypes::of(embedder)?;
        let prompt_domains = prototypes.affinities(&query);
        let mut order: Vec<usize> = (0..prompt_domains.len()).collect();
        order.sort_by(|a, b| prompt_domains[*b].total_cmp(&prompt_domains[*a]));
        let domains = &order[..order.len().min(2)];

        let best_bm25 = hits
            .iter()
            .filter_map(|h| channel(h, Channel::Fts))
            .fold(0.0f32, f32::max);
        let mut candidates: Vec<Candidate> = Vec::new();
        for (rank, h) in shown(hits).enumerate() {
            let keywords = match channel(&h, Channel::Fts) {
                Some(s) if best_bm25 > 0.0 => s / best_bm25,
                _ => 0.0,
            };
            let dual =
                channel(&h, Channel::Fts).is_some() && channel(&h, Channel::Vector).is_some();
            if let Item::Memory(m) = h.item {
                candidates.push(Candidate {
                    memory: m,
                    keywords,
                    first: rank == 0,
                    dual_first: rank == 0 && dual,
                });
            }
        }
        let mut more: Vec<String> = storage
            .vector_search(Target::Memories, &query, filter, CONTEXT_CANDIDATES)?
            .into_iter()
            .map(|h| h.id)
            .collect();
        for &d in domains {
            more.extend(prototypes.nearest(storage, d, filter, CONTEXT_DOMAIN_K)?);
        }
        more.retain(|id| !candidates.iter().any(|c| &c.memory.id == id));
        more.sort();
        more.dedup();
        for m in storage.get_memories(&more)? {
            if admits(filter, &m) && !m.tags.iter().any(|t| t == REFLECTION_TAG) {
                candidates.push(Candidate {
                    memory: m,
                    keywords: 0.0,
                    first: false,
                    dual_first: false,
                });
            }
        }
        let ids: Vec<String> = candidates.iter().map(|c| c.memory.id.clone()).collect();
        let vectors: HashMap<String, Vec<f32>> = storage
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let cosine = |c: &Candidate| {
            vectors
                .get(&c.memory.id)
                .map_or(0.0, |v| vector::cosine(&query, v))
        };
        let best_cosine = candidates.iter().map(cosine).fold(0.0f32, f32::max);
        // A prompt about the world injects nothing, unless recall's first
        // hit, found by two channels, is the thing the prompt names ("the
        // dog"): then it is about the user after all.
        let named = candidates
            .iter()
            .any(|c| c.dual_first && gate::refers_to(prompt, &c.memory.content));
        if !gate::personal(prompt) && !named && best_cosine < CONTEXT_OFF_TOPIC_COSINE {
            return Ok(Vec::new());
        }
        let domain_strength = domains.first().map_or(0.0, |d| prompt_domains[*d]);
        let mut scored: Vec<(bool, f32, Candidate)> = candidates
            .into_iter()
            .map(|c| {
                let cos = cosine(&c);
                let affinity = vectors
                    .get(&c.memory.id)
                    .map(|v| prototypes.affinities(v))
                    .unwrap_or_else(|| vec![0.0; prompt_domains.len()]);
                let hard = gate::hard_constraint(&c.memory.content);
                let signals = Signals {
                    cosine: cos,
                    cosine_gap: cos - best_cosine,
                    keywords: c.keywords,
                    first: f32::from(u8::from(c.first)),
                    domain_link: domains
                        .iter()
                        .map(|&d| prompt_domains[d].min(affinity[d]))
                        .fold(f32::MIN, f32::max),
                    best_cosine,
                    domain_strength,
                    hard: f32::from(u8::from(hard)),
                    hard_in_domain: if hard {
                        domains.first().map_or(0.0, |&d| affinity[d]) * domain_strength
                    } else {
                        0.0
                    },
                };
                (c.dual_first, signals.score(), c)
            })
            .collect();
        // Recall's first hit, found by two channels, is never dropped.
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| b.1.total_cmp(&a.1))
                .then_with(|| a.2.memory.id.cmp(&b.2.memory.id))
        });
        Ok(scored
            .into_iter()
            .filter(|(dual, score, _)| *dual || *score >= CONTEXT_MIN_SCORE)
            .take(limit as usize)
            .map(|(_, _, c)| c.memory)
            .collect())
    }
}

/// A hit's raw score in `channel`, where that channel found it.
fn channel(hit: &Hit, channel: Channel) -> Option<Score> {
    hit.explanation
        .channels
        .iter()
        .find(|c| c.channel == channel)
        .map(|c| c.raw_score)
}
