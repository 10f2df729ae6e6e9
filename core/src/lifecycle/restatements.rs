//! Seed 004 §2.1's insert-time merge, moved off the request path: a
//! restatement close to its memory (cosine above `INSERT_MERGE_SIM`) is
//! kept on the memory as provenance and marked; the next cycle asks the
//! LLM (`merge` tier) to fold the latest restatement into the text. The
//! text it replaces becomes a version (apply keeps it), a merge that drops
//! too much is refused, and a failed call leaves the mark for the next
//! cycle. With the LLM off nothing is marked: the restatement stays as it is.

use super::plan::*;
use crate::engine::Engine;
use crate::model::*;
use crate::ports::{Llm, Ports};
use crate::prompts::{self, PairDecision};
use crate::validate;

/// The attribute that marks a restatement waiting to be merged.
const MERGE_PENDING: &str = "merge_pending";

/// The marker of a memory waiting for its insert-time merge: how the next
/// cycle finds it, however long ago it was written (`candidates.rs`).
pub(super) const TAG_MERGE_PENDING: &str = "_merge-pending";

/// Marks (or clears) a memory's pending insert-time merge.
pub(crate) fn set_merge_pending(m: &mut Memory, pending: bool) {
    set_attr(m, MERGE_PENDING, serde_json::json!(pending));
    m.tags.retain(|t| t != TAG_MERGE_PENDING);
    if pending {
        add_tag(m, TAG_MERGE_PENDING);
    }
}

fn latest_restatement(m: &Memory) -> Option<String> {
    let attrs: serde_json::Value = serde_json::from_str(&m.attributes).ok()?;
    attrs["restatements"].as_array()?.last()?["text"]
        .as_str()
        .map(String::from)
}

impl<P: Ports> Engine<P> {
    pub(super) fn insert_merges(&self, cycle: &mut Cycle, ns: &str) {
        if self.ports().llm().level() == LlmLevel::Off {
            return;
        }
        let pending = cycle.ids_where(ns, |m| {
            serde_json::from_str::<serde_json::Value>(&m.attributes)
                .is_ok_and(|a| a[MERGE_PENDING] == serde_json::json!(true))
        });
        for id in pending {
            let Some(m) = cycle.memories.get(&id).cloned() else {
                continue;
            };
            let Some(restated) = latest_restatement(&m) else {
                if let Some(w) = cycle.memories.get_mut(&id) {
                    set_merge_pending(w, false);
                }
                cycle.dirty.insert(id);
                continue;
            };
            let newer = Memory {
                content: restated.clone(),
                ..m.clone()
            };
            let shortest = m.content.chars().count().min(restated.chars().count());
            let request = prompts::merge::request(&m, &newer);
            let answer = self.ask_llm(ns, &request, prompts::merge::parse);
            let merged = match answer {
                Ok(PairDecision::Merge(text)) if text.chars().count() * 2 >= shortest => {
                    validate::content(&text).ok()
                }
                Ok(PairDecision::Merge(_)) => {
                    cycle.warnings.push(format!(
                        "insert-time merge of {id} refused: the merged text drops too much"
                    ));
                    None
                }
                Ok(_) => None,
                Err(e) => {
                    // The mark stays: the next cycle finds it by its
                    // marker and asks again.
                    cycle
                        .warnings
                        .push(format!("insert-time merge of {id} skipped: {e}"));
                    continue;
                }
            };
            let Some(w) = cycle.memories.get_mut(&id) else {
                continue;
            };
            set_merge_pending(w, false);
            cycle.dirty.insert(id.clone());
            if let Some(text) = merged.filter(|t| *t != w.content) {
                w.content = text;
                w.modified_at = cycle.now;
                cycle.reembed.insert(id.clone());
                cycle.act(
                    &id,
                    Action::Merge,
                    None,
                    format!("insert-time merge of a restatement: {restated}"),
                );
            }
        }
    }
}
