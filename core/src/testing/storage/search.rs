//! `MemStorage`'s three search channels: term counts in place of BM25
//! (with the previous turn as an episode's weighted context, as the SQLite
//! index keeps it), dot products over every stored vector, and entity links.

use super::{MemStorage, filter_episode, filter_memory};
use crate::model::*;
use crate::text;

impl MemStorage {
    /// The turn before an episode in its session (what the SQLite index
    /// keeps in its `context` column).
    fn previous_turn(&self, e: &Episode) -> Option<String> {
        self.episodes
            .borrow()
            .values()
            .filter(|p| {
                p.namespace == e.namespace
                    && p.session_id == e.session_id
                    && (p.event_time, &p.id) < (e.event_time, &e.id)
            })
            .max_by(|a, b| (a.event_time, &a.id).cmp(&(b.event_time, &b.id)))
            .map(|p| p.content.clone())
    }

    pub(super) fn texts(&self, target: Target, f: &SearchFilter) -> Vec<(String, String)> {
        match target {
            Target::Memories => self
                .memories
                .borrow()
                .values()
                .filter(|m| filter_memory(m, f))
                .map(|m| (m.id.clone(), m.content.clone()))
                .collect(),
            Target::Episodes => self
                .episodes
                .borrow()
                .values()
                .filter(|e| filter_episode(e, f))
                .map(|e| (e.id.clone(), e.content.clone()))
                .collect(),
        }
    }
}

fn top(mut hits: Vec<ScoredId>, limit: u32) -> Vec<ScoredId> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    hits.truncate(limit as usize);
    hits
}

impl MemStorage {
    pub(super) fn search_fts(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> Vec<ScoredId> {
        let matched = |text: &str| {
            let toks = text::token_set(text);
            terms.iter().filter(|t| toks.contains(*t)).count() as f32
        };
        let hits = self
            .texts(target, f)
            .into_iter()
            .filter_map(|(id, content)| {
                let context = match target {
                    Target::Episodes => {
                        let e = self.episodes.borrow().get(&id).cloned();
                        e.and_then(|e| self.previous_turn(&e)).unwrap_or_default()
                    }
                    Target::Memories => String::new(),
                };
                let score = matched(&content) + context_weight * matched(&context);
                (score > 0.0).then_some(ScoredId { id, score })
            })
            .collect();
        top(hits, limit)
    }
    pub(super) fn search_vectors(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> Vec<ScoredId> {
        let vectors = self.vectors.borrow();
        let hits = self
            .texts(target, f)
            .into_iter()
            .filter_map(|(id, _)| {
                let w = vectors.get(&(target, id.clone()))?;
                Some(ScoredId {
                    id,
                    score: v.iter().zip(w).map(|(a, b)| a * b).sum(),
                })
            })
            .collect();
        top(hits, limit)
    }
    pub(super) fn search_entities(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> Vec<ScoredId> {
        let entities = self.entities.borrow();
        let matching: Vec<&String> = entities
            .values()
            .filter(|e| {
                names.contains(&e.canonical_name.to_lowercase())
                    || e.aliases.iter().any(|a| names.contains(&a.to_lowercase()))
            })
            .map(|e| &e.id)
            .collect();
        let allowed: Vec<String> = self
            .texts(target, f)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let hits = self
            .links
            .borrow()
            .iter()
            .filter(|(t, item, ent)| {
                *t == target && matching.contains(&ent) && allowed.contains(item)
            })
            .map(|(_, item, _)| ScoredId {
                id: item.clone(),
                score: 1.0,
            })
            .collect();
        top(hits, limit)
    }
}
