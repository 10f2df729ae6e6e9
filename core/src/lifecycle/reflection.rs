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
        self.begin_llm_work();
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
            // What the week's corrections replaced, for the heuristic.
            let old_ids: Vec<String> = facts.iter().filter_map(|m| m.supersedes.clone()).collect();
            let replaced: BTreeMap<String, String> = storage
                .get_memories(&old_ids)?
                .into_iter()
                .map(|m| (m.id, m.content))
                .collect();
            heuristic_reflection(&facts, &replaced, now)
        } else {
            let request = prompts::reflection::request(&facts, &[]);
            self.ask_llm(&namespace, &request, prompts::reflection::parse)?
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

/// Without an LLM: the week in numbers, what was corrected (and from
/// what), what reached Core, what was reinforced most, and the names that
/// came up most (capitalised words inside sentences; recurring words when
/// there are none).
fn heuristic_reflection(
    facts: &[Memory],
    replaced: &BTreeMap<String, String>,
    now: Millis,
) -> String {
    let short = |t: &str| t.chars().take(120).collect::<String>();
    let from_dialogue = facts
        .iter()
        .filter(|m| m.source.as_deref() == Some("consolidation"))
        .count();
    let corrections: Vec<String> = facts
        .iter()
        .filter_map(|m| {
            let old = replaced.get(m.supersedes.as_deref()?)?;
            Some(format!(
                "\"{}\" (was \"{}\")",
                short(&m.content),
                short(old)
            ))
        })
        .collect();
    let mut out = format!(
        "Week to {}: {} new memories, {from_dialogue} of them facts from dialogue, {} corrections.",
        date(now),
        facts.len(),
        corrections.len()
    );
    if !corrections.is_empty() {
        out.push_str(&format!(
            " Corrected: {}.",
            corrections
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let core: Vec<String> = facts
        .iter()
        .filter(|m| m.layer == Layer::Core)
        .take(3)
        .map(|m| format!("\"{}\"", short(&m.content)))
        .collect();
    if !core.is_empty() {
        out.push_str(&format!(" Now in Core: {}.", core.join("; ")));
    }
    let mut strongest: Vec<&Memory> = facts
        .iter()
        .filter(|m| m.reinforcement_score() > 0.0)
        .collect();
    strongest.sort_by(|a, b| b.reinforcement_score().total_cmp(&a.reinforcement_score()));
    if !strongest.is_empty() {
        let top: Vec<String> = strongest
            .iter()
            .take(3)
            .map(|m| format!("\"{}\"", short(&m.content)))
            .collect();
        out.push_str(&format!(" Most reinforced: {}.", top.join("; ")));
    }
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut words: BTreeMap<String, usize> = BTreeMap::new();
    for f in facts {
        for w in f.content.split_whitespace().skip(1) {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            if w.len() > 1 && w != "I" && w.chars().next().is_some_and(char::is_uppercase) {
                *names.entry(w.to_string()).or_default() += 1;
            }
        }
        for w in text::content_words(&f.content) {
            if w.chars().count() > 3 {
                *words.entry(w).or_default() += 1;
            }
        }
    }
    let mut often: Vec<(String, usize)> = match names.values().any(|n| *n > 1) {
        true => names.into_iter().filter(|(_, n)| *n > 1).collect(),
        false => words.into_iter().filter(|(_, n)| *n > 1).collect(),
    };
    often.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !often.is_empty() {
        let listed: Vec<String> = often
            .iter()
            .take(5)
            .map(|(w, n)| format!("{w} ({n})"))
            .collect();
        out.push_str(&format!(" Came up most: {}.", listed.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(id: &str, text: &str) -> Memory {
        Memory::new(id.into(), "default".into(), text.into(), 0, 0)
    }

    #[test]
    fn the_heuristic_reflection_says_what_changed_and_who_came_up() {
        let mut moved = fact("mem_2", "The user lives in Porto now");
        moved.supersedes = Some("mem_1".into());
        let mut rule = fact("mem_3", "Never deploy on Fridays");
        rule.layer = Layer::Core;
        rule.repetition_count = 2;
        let mut from_dialogue = fact("mem_4", "The user's sister Anna visits in May");
        from_dialogue.source = Some("consolidation".into());
        let facts = vec![
            moved,
            rule,
            from_dialogue,
            fact("mem_5", "The user met Anna by the Porto riverside"),
        ];
        let replaced =
            BTreeMap::from([("mem_1".to_string(), "The user lives in Lisbon".to_string())]);
        let text = heuristic_reflection(&facts, &replaced, 0);
        assert!(
            text.contains("4 new memories, 1 of them facts from dialogue, 1 corrections"),
            "{text}"
        );
        assert!(
            text.contains(
                r#"Corrected: "The user lives in Porto now" (was "The user lives in Lisbon")"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"Now in Core: "Never deploy on Fridays""#),
            "{text}"
        );
        assert!(
            text.contains(r#"Most reinforced: "Never deploy on Fridays""#),
            "{text}"
        );
        assert!(text.contains("Came up most: Anna (2), Porto (2)"), "{text}");
    }
}
