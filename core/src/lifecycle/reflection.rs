//! Seed 003's weekly reflection: the week's facts and dialogue distilled
//! into a protected Core memory tagged `reflection` (LLM, or a heuristic
//! summary when the LLM level is `off`).

use std::collections::BTreeMap;

use crate::agent::resume::REFLECTION_TAG;
use crate::agent::resume::date;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::ids::new_id;
use crate::model::*;
use crate::ports::{Clock, Llm, Ports, Storage};
use crate::prompts;
use crate::text;
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Seed 003's weekly reflection: at most once in six days, from at
    /// least three memories of the past week. Written as a protected Core
    /// memory tagged `reflection` and `weekly`.
    pub fn reflect(&self, namespace: &str, force: bool) -> CoreResult<ReflectOutcome> {
        let namespace = validate::namespace(namespace)?;
        let storage = self.ports().storage();
        let now = self.ports().clock().now();
        let skipped = |why: String| {
            Ok(ReflectOutcome {
                memory: None,
                skipped: Some(why),
            })
        };
        if let Some(last) = self.latest_reflection(std::slice::from_ref(&namespace))?
            && !force
            && now - last.created_at < REFLECTION_MIN_SPACING_MS
        {
            return skipped(format!(
                "the last reflection ({}) is less than six days old",
                date(last.created_at)
            ));
        }
        let since = now - REFLECTION_WINDOW_MS;
        let facts: Vec<Memory> = storage
            .list_memories(&ListQuery {
                namespaces: vec![namespace.clone()],
                modified_since: Some(since),
                limit: REFLECTION_MAX_ITEMS,
                ..Default::default()
            })?
            .into_iter()
            .filter(|m| m.created_at >= since && !m.tags.iter().any(|t| t == REFLECTION_TAG))
            .collect();
        if facts.len() < REFLECTION_MIN_FACTS {
            return skipped(format!(
                "{} memories in the past seven days; a reflection needs {REFLECTION_MIN_FACTS}",
                facts.len()
            ));
        }
        let content = if self.ports().llm().level() == LlmLevel::Off {
            heuristic_reflection(&facts, now)
        } else {
            let answer = self
                .ports()
                .llm()
                .complete(&prompts::reflection::request(&facts, &[]))?;
            prompts::reflection::parse(&answer.content)?
        };
        let memory = Memory {
            layer: Layer::Core,
            decay_rate: 0.0,
            importance: 1.0,
            tags: vec![REFLECTION_TAG.into(), "weekly".into()],
            source: Some("reflection".into()),
            source_ids: facts.iter().map(|m| m.id.clone()).collect(),
            ..Memory::new(
                new_id("mem", self.ports().clock()),
                namespace.clone(),
                validate::content(&content)?,
                now,
                self.epoch(&namespace)?,
            )
        };
        storage.insert_memory(&memory)?;
        if let Some(v) = self.embed_one(&memory.content)? {
            storage.put_vector(Target::Memories, &memory.id, &v)?;
        }
        self.log_decision(
            &namespace,
            Action::Reflect,
            &memory.id,
            format!("weekly reflection over {} memories", facts.len()),
        )?;
        Ok(ReflectOutcome {
            memory: Some(memory),
            skipped: None,
        })
    }
}

/// Without an LLM: what was reinforced most and which words recur.
fn heuristic_reflection(facts: &[Memory], now: Millis) -> String {
    let mut strongest: Vec<&Memory> = facts.iter().collect();
    strongest.sort_by(|a, b| b.reinforcement_score().total_cmp(&a.reinforcement_score()));
    let mut words: BTreeMap<String, usize> = BTreeMap::new();
    for f in facts {
        for w in text::content_words(&f.content) {
            if w.chars().count() > 3 {
                *words.entry(w).or_default() += 1;
            }
        }
    }
    let mut recurring: Vec<(String, usize)> = words.into_iter().filter(|(_, n)| *n > 1).collect();
    recurring.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = format!("Week to {}: {} new memories.", date(now), facts.len());
    let top: Vec<String> = strongest
        .iter()
        .take(3)
        .map(|m| format!("\"{}\"", m.content.chars().take(120).collect::<String>()))
        .collect();
    out.push_str(&format!(" Most reinforced: {}.", top.join("; ")));
    if !recurring.is_empty() {
        let names: Vec<String> = recurring
            .iter()
            .take(5)
            .map(|(w, n)| format!("{w} ({n})"))
            .collect();
        out.push_str(&format!(" Recurring: {}.", names.join(", ")));
    }
    out
}
