//! A consolidation cycle's working state: the copies of the memories it
//! reads, the decisions taken on them and what is written back, plus the
//! tag and attribute helpers every step of the cycle shares. `cycle.rs`
//! runs the steps in order; each step's file works on this state.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::*;
use crate::thresholds::*;

pub(super) const TAG_REJECTED: &str = "gate-rejected";
pub(super) const TAG_REJECTED_2: &str = "gate-rejected-2";
pub(super) const TAG_REJECTED_FINAL: &str = "gate-rejected-final";
pub(super) const TAG_TRIAGED: &str = "_triaged";
/// A tag some writers put on memories meant for promotion; orphaned once
/// the memory is in Working or Core (seed 004 §3 step 1).
pub(super) const TAG_PROMOTION: &str = "promotion";
/// Tags that keep a memory out of Core (seed 004 §2.5).
pub(super) const NOT_FOR_CORE: [&str; 4] = ["session", "ephemeral", "distilled", "auto-distilled"];

pub(super) fn has(m: &Memory, tag: &str) -> bool {
    m.tags.iter().any(|t| t == tag)
}

pub(super) fn attr_u64(m: &Memory, key: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(&m.attributes).ok()?[key].as_u64()
}

pub(super) fn set_attr(m: &mut Memory, key: &str, value: serde_json::Value) {
    let mut attrs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&m.attributes).unwrap_or_default();
    attrs.insert(key.into(), value);
    m.attributes = serde_json::Value::Object(attrs).to_string();
}

/// Adds a tag unless present or, for a user tag, the memory is at the tag
/// limit; the lifecycle's markers are always added (they are not user tags).
pub(super) fn add_tag(m: &mut Memory, tag: &str) {
    if !has(m, tag) && (is_marker(tag) || m.user_tags().count() < MAX_TAGS) {
        m.tags.push(tag.into());
    }
}

pub(super) fn is_session_note(m: &Memory) -> bool {
    m.source.as_deref() == Some("session") || has(m, "session")
}

/// How much the Buffer holds: the cap and the importance under which a
/// Buffer memory goes to the trash (configurable; seed 004 §2.4).
#[derive(Debug, Clone, Copy)]
pub(super) struct BufferLimits {
    pub(super) cap: usize,
    pub(super) drop_below: f32,
}

/// The cycle's working copies and the decisions taken on them.
pub(super) struct Cycle {
    pub(super) now: Millis,
    pub(super) limits: BufferLimits,
    pub(super) memories: BTreeMap<String, Memory>,
    /// Ids whose row must be written back.
    pub(super) dirty: BTreeSet<String>,
    pub(super) actions: Vec<LifecycleAction>,
    pub(super) decayed: u32,
    pub(super) warnings: Vec<String>,
    /// New memories (distillations) to insert.
    pub(super) inserts: Vec<Memory>,
    /// Memories whose content changed: their vectors are redone.
    pub(super) reembed: BTreeSet<String>,
    /// Metadata keys stamped with the cycle's time: pairs judged distinct
    /// and Core overlaps flagged, not raised again until one changes.
    pub(super) judged: Vec<String>,
    /// The epoch this cycle gives each namespace it processes.
    pub(super) epochs: BTreeMap<String, u64>,
    /// Namespaces written since the last cycle or changed by this one:
    /// their topic trees are rebuilt; the others' cached trees still hold.
    pub(super) changed: BTreeSet<String>,
}

impl Cycle {
    pub(super) fn act(&mut self, id: &str, action: Action, to: Option<Layer>, detail: String) {
        let Some(m) = self.memories.get_mut(id) else {
            return;
        };
        let from = m.layer;
        if let Some(layer) = to {
            m.layer = layer;
            m.modified_at = self.now;
        }
        self.dirty.insert(id.to_string());
        self.actions.push(LifecycleAction {
            action,
            memory_id: id.into(),
            namespace: m.namespace.clone(),
            from_layer: Some(from),
            to_layer: to,
            detail,
        });
    }

    pub(super) fn evict(&mut self, id: &str, reason: &str, detail: String) {
        if let Some(m) = self.memories.get_mut(id) {
            m.valid_until = Some(self.now);
            m.invalid_reason = Some(reason.into());
        }
        self.act(id, Action::Evict, None, detail);
    }

    /// The epoch this cycle gives namespace `ns`.
    pub(super) fn epoch(&self, ns: &str) -> u64 {
        self.epochs.get(ns).copied().unwrap_or_default()
    }

    pub(super) fn ids_where(&self, namespace: &str, f: impl Fn(&Memory) -> bool) -> Vec<String> {
        self.memories
            .values()
            .filter(|m| m.namespace == namespace && m.is_active() && f(m))
            .map(|m| m.id.clone())
            .collect()
    }
}

/// A stable metadata key for a pair of memories.
pub(super) fn pair_key(a: &str, b: &str) -> String {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    format!("pair:{x}:{y}")
}

/// An LLM merge or update: the winner takes the merged content, the higher
/// layer of the two, and the loser's counts, tags and provenance.
pub(super) fn combine(cycle: &mut Cycle, winner: &Memory, loser: &Memory, content: String) {
    fold(cycle, &winner.id, &loser.id);
    if let Some(w) = cycle.memories.get_mut(&winner.id) {
        w.content = content;
        w.layer = w.layer.max(loser.layer);
        cycle.reembed.insert(w.id.clone());
    }
}

/// The winner absorbs the loser's counts, tags and provenance.
pub(super) fn fold(cycle: &mut Cycle, winner: &str, loser: &str) {
    let Some(l) = cycle.memories.get(loser).cloned() else {
        return;
    };
    if let Some(w) = cycle.memories.get_mut(winner) {
        w.repetition_count = w
            .repetition_count
            .saturating_add(l.repetition_count)
            .saturating_add(1);
        w.access_count = w.access_count.saturating_add(l.access_count);
        w.importance = w.importance.max(l.importance);
        for t in &l.tags {
            add_tag(w, t);
        }
        if !w.source_ids.contains(&l.id) {
            w.source_ids.push(l.id.clone());
        }
        w.modified_at = cycle.now;
    }
    if let Some(l) = cycle.memories.get_mut(loser) {
        l.superseded_by = Some(winner.to_string());
    }
    cycle.act(winner, Action::Merge, None, format!("absorbed {loser}"));
}
