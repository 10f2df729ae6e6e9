//! The review rules (seed 004 §5, its "sandbox"): what an LLM review may
//! do to a memory. A proposal that names a memory changed in the last
//! hours, a too-young memory, a layer jump, an out-of-range importance, a
//! merge that loses text, or a delete is refused with the reason.

use std::collections::BTreeMap;

use crate::model::*;
use crate::thresholds::*;
use crate::validate;

const MS_PER_HOUR: f32 = 3_600_000.0;

pub(super) fn layer_up(l: Layer) -> Option<Layer> {
    match l {
        Layer::Buffer => Some(Layer::Working),
        Layer::Working => Some(Layer::Core),
        Layer::Core => None,
    }
}

pub(super) fn layer_down(l: Layer) -> Option<Layer> {
    match l {
        Layer::Core => Some(Layer::Working),
        Layer::Working => Some(Layer::Buffer),
        Layer::Buffer => None,
    }
}

/// Why the review rules refuse `op`, or `None` when it passes.
/// Hours since a memory was last modified, and since it was created.
fn hours_since(m: &Memory, now: Millis) -> (f32, f32) {
    (
        (now - m.modified_at).max(0) as f32 / MS_PER_HOUR,
        (now - m.created_at).max(0) as f32 / MS_PER_HOUR,
    )
}

/// Whether the rules let the review act on `m` at all: old enough, and not
/// modified lately. The review shows the model only these.
pub(super) fn reviewable(m: &Memory, now: Millis) -> bool {
    let (modified_h, age_h) = hours_since(m, now);
    modified_h >= REVIEW_RECENT_MOD_HOURS && age_h >= REVIEW_NEW_AGE_HOURS
}

pub(super) fn judge(
    op: &ReviewOp,
    memories: &BTreeMap<String, Memory>,
    now: Millis,
    sharing: &Sharing,
) -> Option<String> {
    let mut targets = Vec::new();
    for id in &op.ids {
        match memories.get(id) {
            Some(m) => targets.push(m),
            None => return Some(format!("no memory {id} under audit")),
        }
    }
    if targets.is_empty() {
        return Some("names no memory".into());
    }
    for m in &targets {
        let (modified_h, age_h) = hours_since(m, now);
        if modified_h < REVIEW_RECENT_MOD_HOURS {
            return Some(format!(
                "{} was modified in the last {REVIEW_RECENT_MOD_HOURS}h",
                m.id
            ));
        }
        if age_h < REVIEW_NEW_AGE_HOURS {
            return Some(format!("{} is younger than {REVIEW_NEW_AGE_HOURS}h", m.id));
        }
    }
    let single = |what: &str| -> Result<&Memory, String> {
        match targets.as_slice() {
            [m] => Ok(*m),
            _ => Err(format!("{what} takes exactly one memory")),
        }
    };
    let verdict: Result<(), String> = match op.op {
        ReviewAction::Delete => Err("the review has no delete power".into()),
        ReviewAction::Promote => {
            single("promote").and_then(|m| match (layer_up(m.layer), op.target_layer) {
                (None, _) => Err("already in Core".into()),
                (Some(up), Some(t)) if t != up => Err("promotion is one layer at a time".into()),
                _ => Ok(()),
            })
        }
        ReviewAction::Demote => {
            single("demote").and_then(|m| match (layer_down(m.layer), op.target_layer) {
                (None, _) => Err("already in Buffer".into()),
                (Some(_), Some(t)) if t >= m.layer => {
                    Err("a demotion must go to a lower layer".into())
                }
                (Some(down), Some(t)) if t != down => Err("demotion is one layer at a time".into()),
                _ => Ok(()),
            })
        }
        ReviewAction::Adjust => single("adjust").and_then(|_| match op.importance {
            Some(x) if (0.0..=1.0).contains(&x) => Ok(()),
            Some(x) => Err(format!("importance {x} is outside 0–1")),
            None => Err("adjust needs an importance".into()),
        }),
        ReviewAction::Merge => {
            let namespaces: Vec<&str> = targets.iter().map(|m| m.namespace.as_str()).collect();
            if targets.len() < 2 {
                Err("a merge needs at least two memories".into())
            } else if !crate::sharing::may_combine(sharing, &namespaces) {
                Err(format!(
                    "a merge across namespaces ({}) needs them in one sharing group",
                    namespaces.join(", ")
                ))
            } else {
                let top = targets
                    .iter()
                    .map(|m| m.layer)
                    .max()
                    .unwrap_or(Layer::Buffer);
                let shortest = targets
                    .iter()
                    .map(|m| m.content.chars().count())
                    .min()
                    .unwrap_or(0);
                match (&op.content, op.target_layer) {
                    (None, _) => Err("a merge needs the merged content".into()),
                    (_, Some(t)) if t < top => {
                        Err("a merge must land in the highest source layer".into())
                    }
                    (Some(c), _) if c.chars().count() < shortest / 2 => {
                        Err("the merged text drops too much of its sources".into())
                    }
                    (Some(c), _) => validate::content(c).map(|_| ()).map_err(|e| e.to_string()),
                }
            }
        }
    };
    verdict.err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(id: &str, layer: Layer, content: &str) -> Memory {
        Memory {
            layer,
            ..Memory::new(id.into(), "default".into(), content.into(), 0, 0)
        }
    }

    fn op(kind: &str, ids: &[&str]) -> ReviewOp {
        ReviewOp {
            op: kind.parse().unwrap_or(ReviewAction::Delete),
            ids: ids.iter().map(|s| s.to_string()).collect(),
            target_layer: None,
            importance: None,
            content: None,
            reason: String::new(),
            allowed: false,
            verdict: String::new(),
        }
    }

    #[test]
    fn the_review_rules_enforce_seed_004s_sandbox() {
        let now = 10 * 86_400_000;
        let mut ms = BTreeMap::new();
        for (id, layer, text) in [
            ("a", Layer::Core, "Always write tests first"),
            ("b", Layer::Working, "Tests first, always, for every change"),
            ("c", Layer::Working, "fresh"),
        ] {
            ms.insert(id.to_string(), memory(id, layer, text));
        }
        if let Some(c) = ms.get_mut("c") {
            c.created_at = now - 3_600_000;
            c.modified_at = now - 3_600_000;
        }
        let refused = |o: &ReviewOp| judge(o, &ms, now, &Sharing::default());
        assert!(refused(&op("delete", &["a"])).is_some_and(|w| w.contains("no delete")));
        assert!(refused(&op("promote", &["a"])).is_some_and(|w| w.contains("already in Core")));
        assert!(refused(&op("promote", &["b"])).is_none());
        let mut skip = op("demote", &["a"]);
        skip.target_layer = Some(Layer::Buffer);
        assert!(refused(&skip).is_some_and(|w| w.contains("one layer")));
        let mut adjust = op("adjust", &["b"]);
        adjust.importance = Some(1.5);
        assert!(refused(&adjust).is_some());
        assert!(refused(&op("merge", &["a"])).is_some());
        let mut merge = op("merge", &["a", "b"]);
        merge.content = Some("Tests".into());
        assert!(refused(&merge).is_some_and(|w| w.contains("drops")));
        merge.content = Some("Always write tests first, for every change".into());
        merge.target_layer = Some(Layer::Working);
        assert!(refused(&merge).is_some_and(|w| w.contains("highest")));
        merge.target_layer = None;
        assert!(refused(&merge).is_none());
        assert!(refused(&op("promote", &["c"])).is_some_and(|w| w.contains("modified")));
        assert!(refused(&op("promote", &["zz"])).is_some());
        assert!(refused(&op("rename", &["b"])).is_some());
    }
}
