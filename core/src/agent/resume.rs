//! What an agent reads at the start of a turn or a session:
//! - `resume` (seed 004 §7): Core, Recent, Topics and Triggers within fixed
//!   token budgets; reads only, never touches a memory;
//! - `context` (seed 003): the facts from earlier sessions relevant to the
//!   prompt, plus the latest weekly reflection, as a markdown block;
//! - `reflect` (seed 003): the weekly reflection, a protected Core memory;
//! - `recent` and `triggers`.

use std::collections::BTreeMap;

use super::core_order::core_weight;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};
use crate::text;
use crate::thresholds::*;
use crate::validate;

/// Tag prefix of trigger memories (`trigger:deploy`).
pub const TRIGGER_PREFIX: &str = "trigger:";
pub const REFLECTION_TAG: &str = "reflection";
/// Most memories a resume section reads before cutting to its budget.
const SECTION_READ: u32 = 500;
/// Recent's rows read at a time when no context filters them: a page holds
/// the section's 1,000 tokens for texts of 16 tokens or more.
const RECENT_PAGE: u32 = 64;
const MS_PER_HOUR: i64 = 3_600_000;

/// The longest prefix of `items` whose texts fit in `budget` tokens.
fn within_budget(items: Vec<Memory>, budget: usize) -> Vec<Memory> {
    let mut used = 0;
    items
        .into_iter()
        .take_while(|m| {
            used += text::estimate_tokens(&m.content);
            used <= budget
        })
        .collect()
}

/// The relevance boost of a Core memory in a resume with context.
fn resume_boost(m: &Memory) -> f32 {
    match crate::prompts::gate::heuristic(m) {
        Some("identity" | "constraint") => RESUME_HIGH_RELEVANCE,
        Some("lesson" | "procedure") => RESUME_LOW_RELEVANCE,
        _ => 0.0,
    }
}

pub(crate) fn date(ms: Millis) -> String {
    let (y, m, d) = crate::calendar::civil_from_millis(ms);
    format!("{y:04}-{m:02}-{d:02}")
}

impl<P: Ports> Engine<P> {
    /// Recent's candidates, newest change first. With a context every one
    /// `query` admits (the context picks among them); without, pages of
    /// `RECENT_PAGE` until their texts pass the section's budget, which is
    /// all `within_budget` keeps of them: the same prefix as one read of
    /// `SECTION_READ` rows, without reading hundreds to show a few dozen.
    fn recent_section(&self, query: ListQuery, context: bool) -> CoreResult<Vec<Memory>> {
        let storage = self.ports().storage();
        if context {
            return storage.list_memories(&query);
        }
        let mut out: Vec<Memory> = Vec::new();
        let mut tokens = 0;
        while out.len() < SECTION_READ as usize && tokens <= RESUME_RECENT_TOKENS {
            let page = storage.list_memories(&ListQuery {
                limit: RECENT_PAGE.min(SECTION_READ - out.len() as u32),
                after_time: out.last().map(|m| m.modified_at),
                after_id: out.last().map(|m| m.id.clone()),
                ..query.clone()
            })?;
            let full = page.len() == RECENT_PAGE as usize;
            tokens += page
                .iter()
                .map(|m| text::estimate_tokens(&m.content))
                .sum::<usize>();
            out.extend(page);
            if !full {
                break;
            }
        }
        Ok(out)
    }

    pub fn resume(&self, req: ResumeRequest) -> CoreResult<ResumeBlock> {
        let namespace = validate::namespace(&req.namespace)?;
        let namespaces = self.readable_namespaces(&namespace)?;
        let storage = self.ports().storage();
        let now = self.ports().clock().now();
        let hours = if req.hours == 0 {
            RESUME_DEFAULT_HOURS
        } else {
            req.hours
        };

        let mut core = storage.list_memories(&ListQuery {
            namespaces: namespaces.clone(),
            layers: vec![Layer::Core],
            limit: SECTION_READ,
            ..Default::default()
        })?;
        self.settle_all(&mut core)?;
        core.sort_by(|a, b| core_weight(b).total_cmp(&core_weight(a)));
        let core_all_ids = super::summary::fingerprint(&core);
        let core_total = core.len();

        let context = req
            .context
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        let mut recent = self.recent_section(
            ListQuery {
                namespaces: namespaces.clone(),
                layers: vec![Layer::Buffer, Layer::Working],
                modified_since: Some(now - i64::from(hours) * MS_PER_HOUR),
                by_modified: true,
                limit: SECTION_READ,
                ..Default::default()
            },
            context.is_some(),
        )?;
        if let Some(context) = context {
            self.keep_relevant(context, &mut core, &mut recent)?;
        }
        let core_all = core.len();
        // Only an unfiltered Core can be shown as its summary.
        let core_all_ids = match core_all == core_total {
            true => core_all_ids,
            false => String::new(),
        };
        let core = within_budget(core, RESUME_CORE_TOKENS);
        let recent = within_budget(recent, RESUME_RECENT_TOKENS);

        let mut topics: Vec<TopicSummary> = self
            .stored_topics(&namespace)?
            .into_iter()
            .filter(|t| t.is_leaf())
            .map(|t| TopicSummary {
                id: t.id,
                name: t.name,
                size: t.members.len() as u32,
            })
            .collect();
        topics.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.id.cmp(&b.id)));
        let mut used = 0;
        topics.retain(|t| {
            used += text::estimate_tokens(&t.name) + 4;
            used <= RESUME_TOPIC_TOKENS
        });

        let mut triggers = self.triggers(&namespace)?;
        let mut used = 0;
        triggers.retain(|(t, _)| {
            used += text::estimate_tokens(t) + 1;
            used <= RESUME_TRIGGER_TOKENS
        });
        let triggers: Vec<String> = triggers.into_iter().map(|(t, _)| t).collect();

        let mut out = format!("=== Core ({}) ===\n", core.len());
        match (
            core_all > core.len(),
            self.core_summary(&namespace, &core_all_ids)?,
        ) {
            // Over its budget, with a summary of exactly this Core: the summary.
            (true, Some(summary)) => {
                out.push_str(&summary);
                out.push('\n');
            }
            (over, _) => {
                for m in &core {
                    out.push_str(&m.content);
                    out.push('\n');
                }
                if over {
                    out.push_str(&format!(
                        "(+{} more in Core, over its budget)\n",
                        core_all - core.len()
                    ));
                }
            }
        }
        out.push_str(&format!("\n=== Recent ({hours}h) ===\n"));
        for m in &recent {
            out.push_str(&format!("[{}] {}\n", date(m.modified_at), m.content));
        }
        if !topics.is_empty() {
            // The layers' sizes head the topics (counted only to show them).
            let stats = storage.stats(&namespaces)?;
            out.push_str(&format!(
                "\n=== Topics (Working: {}, Buffer: {}) ===\n",
                stats.working, stats.buffer
            ));
            for t in &topics {
                out.push_str(&format!("{}: \"{}\" [{}]\n", t.id, t.name, t.size));
            }
        }
        if !triggers.is_empty() {
            out.push_str(&format!("\nTriggers: {}\n", triggers.join(", ")));
        }
        // What the agent is shown renews its life, without counting as an
        // access for promotion (resume touches nothing else); a shared
        // namespace's memories are not this namespace's to renew.
        let shown: Vec<String> = core
            .iter()
            .chain(&recent)
            .filter(|m| m.namespace == namespace)
            .map(|m| m.id.clone())
            .collect();
        if !shown.is_empty() {
            storage.renew_memories(&shown, self.ports().clock().now())?;
        }
        Ok(ResumeBlock {
            text: out,
            core,
            recent,
            topics,
            triggers,
        })
    }

    /// Seed 004's resume thresholds: Core memories whose relevance to the
    /// context (cosine, boosted for identity and constraints or lessons and
    /// procedures) reaches `RESUME_CORE_THRESHOLD`, Recent ones whose
    /// cosine reaches `RESUME_WORKING_THRESHOLD`. A memory without a vector
    /// (or a context the embedder cannot embed) is kept: nothing is hidden
    /// for want of a measurement.
    fn keep_relevant(
        &self,
        context: &str,
        core: &mut Vec<Memory>,
        recent: &mut Vec<Memory>,
    ) -> CoreResult<()> {
        let Some(query) = self.embed_one(context)? else {
            return Ok(());
        };
        let ids: Vec<String> = core
            .iter()
            .chain(recent.iter())
            .map(|m| m.id.clone())
            .collect();
        let vectors: std::collections::BTreeMap<String, Vec<f32>> = self
            .ports()
            .storage()
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let cosine = |m: &Memory| vectors.get(&m.id).map(|v| crate::vector::cosine(&query, v));
        core.retain(|m| cosine(m).is_none_or(|c| c + resume_boost(m) >= RESUME_CORE_THRESHOLD));
        recent.retain(|m| cosine(m).is_none_or(|c| c >= RESUME_WORKING_THRESHOLD));
        Ok(())
    }

    /// Memories modified in the last `hours`, newest first.
    pub fn recent(&self, namespace: &str, hours: u32, limit: u32) -> CoreResult<Vec<Memory>> {
        let namespace = validate::namespace(namespace)?;
        let now = self.ports().clock().now();
        self.ports().storage().list_memories(&ListQuery {
            namespaces: self.readable_namespaces(&namespace)?,
            modified_since: Some(now - i64::from(hours.max(1)) * MS_PER_HOUR),
            by_modified: true,
            limit: limit.clamp(1, MAX_RECALL_LIMIT),
            ..Default::default()
        })
    }

    /// `trigger:*` tags (without the prefix) by summed access count.
    pub fn triggers(&self, namespace: &str) -> CoreResult<Vec<(String, u64)>> {
        let namespace = validate::namespace(namespace)?;
        let counts = self
            .ports()
            .storage()
            .tag_counts(&self.readable_namespaces(&namespace)?, TRIGGER_PREFIX)?;
        let mut merged: BTreeMap<String, u64> = BTreeMap::new();
        for (tag, n) in counts {
            if let Some(name) = tag.strip_prefix(TRIGGER_PREFIX) {
                *merged.entry(name.to_string()).or_default() += n;
            }
        }
        let mut out: Vec<(String, u64)> = merged.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }

    pub(crate) fn latest_reflection(&self, namespaces: &[String]) -> CoreResult<Option<Memory>> {
        Ok(self
            .ports()
            .storage()
            .list_memories(&ListQuery {
                namespaces: namespaces.to_vec(),
                tags: vec![REFLECTION_TAG.into()],
                limit: 1,
                ..Default::default()
            })?
            .pop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_700_000_000_000), "2023-11-14");
    }
}
