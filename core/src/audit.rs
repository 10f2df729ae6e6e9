//! The LLM audit of Working and Core (seed 004 §5): the model proposes
//! operations with three powers — schedule (promote / demote one layer),
//! adjust (importance) and merge — and every proposal passes the sandbox's
//! rules before anything runs. Delete is not a power: a proposed delete is
//! refused. When fewer than `SANDBOX_SAFETY_THRESHOLD` of the proposals pass,
//! none runs. Merges are soft (the absorbed memories go to the trash).

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Llm, Ports, Storage};
use crate::prompts;
use crate::thresholds::*;
use crate::validate;

const MS_PER_HOUR: f32 = 3_600_000.0;

fn layer_up(l: Layer) -> Option<Layer> {
    match l {
        Layer::Buffer => Some(Layer::Working),
        Layer::Working => Some(Layer::Core),
        Layer::Core => None,
    }
}

fn layer_down(l: Layer) -> Option<Layer> {
    match l {
        Layer::Core => Some(Layer::Working),
        Layer::Working => Some(Layer::Buffer),
        Layer::Buffer => None,
    }
}

/// Why the sandbox refuses `op`, or `None` when it passes.
pub fn sandbox(op: &AuditOp, memories: &BTreeMap<String, Memory>, now: Millis) -> Option<String> {
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
        let modified_h = (now - m.modified_at).max(0) as f32 / MS_PER_HOUR;
        let age_h = (now - m.created_at).max(0) as f32 / MS_PER_HOUR;
        if modified_h < SANDBOX_RECENT_MOD_HOURS {
            return Some(format!(
                "{} was modified in the last {SANDBOX_RECENT_MOD_HOURS}h",
                m.id
            ));
        }
        if age_h < SANDBOX_NEW_AGE_HOURS {
            return Some(format!("{} is younger than {SANDBOX_NEW_AGE_HOURS}h", m.id));
        }
    }
    let single = |what: &str| -> Result<&Memory, String> {
        match targets.as_slice() {
            [m] => Ok(*m),
            _ => Err(format!("{what} takes exactly one memory")),
        }
    };
    let verdict: Result<(), String> = match op.op.as_str() {
        "delete" => Err("the audit has no delete power".into()),
        "promote" => single("promote").and_then(|m| match (layer_up(m.layer), op.target_layer) {
            (None, _) => Err("already in Core".into()),
            (Some(up), Some(t)) if t != up => Err("promotion is one layer at a time".into()),
            _ => Ok(()),
        }),
        "demote" => single("demote").and_then(|m| match (layer_down(m.layer), op.target_layer) {
            (None, _) => Err("already in Buffer".into()),
            (Some(_), Some(t)) if t >= m.layer => Err("a demotion must go to a lower layer".into()),
            (Some(down), Some(t)) if t != down => Err("demotion is one layer at a time".into()),
            _ => Ok(()),
        }),
        "adjust" => single("adjust").and_then(|_| match op.importance {
            Some(x) if (0.0..=1.0).contains(&x) => Ok(()),
            Some(x) => Err(format!("importance {x} is outside 0–1")),
            None => Err("adjust needs an importance".into()),
        }),
        "merge" => {
            if targets.len() < 2 {
                Err("a merge needs at least two memories".into())
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
        other => Err(format!("`{other}` is not an audit power")),
    };
    verdict.err()
}

impl<P: Ports> Engine<P> {
    /// Runs one audit over Working and Core (one namespace or all).
    pub fn audit_memories(&self, namespace: Option<&str>, dry: bool) -> CoreResult<AuditReport> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Err(CoreError::Unavailable(
                "the audit needs an LLM (MNEMO_LLM_LEVEL is off)".into(),
            ));
        }
        let namespace = namespace.map(validate::namespace).transpose()?;
        let storage = self.ports().storage();
        let now = self.ports().clock().now();
        let list = storage.list_memories(&ListQuery {
            namespaces: namespace.iter().cloned().collect(),
            layers: vec![Layer::Working, Layer::Core],
            by_modified: true,
            limit: AUDIT_MAX_MEMORIES,
            ..Default::default()
        })?;
        let mut report = AuditReport {
            dry,
            safety: 1.0,
            ..Default::default()
        };
        if list.is_empty() {
            return Ok(report);
        }
        let hints = self.merge_hints(&list)?;
        let answer = self
            .ports()
            .llm()
            .complete(&prompts::audit_request(&list, &hints, now))?;
        let mut ops = prompts::parse_audit(&answer.content, &list)?;
        let mut memories: BTreeMap<String, Memory> =
            list.into_iter().map(|m| (m.id.clone(), m)).collect();
        let mut good = 0;
        for op in &mut ops {
            match sandbox(op, &memories, now) {
                None => {
                    op.allowed = true;
                    good += 1;
                }
                Some(why) => op.verdict = why,
            }
        }
        report.safety = if ops.is_empty() {
            1.0
        } else {
            good as f32 / ops.len() as f32
        };
        let run = !dry && report.safety >= SANDBOX_SAFETY_THRESHOLD;
        if !run && !dry && !ops.is_empty() {
            for op in ops.iter_mut().filter(|o| o.allowed) {
                op.verdict = format!(
                    "not run: only {:.0}% of the proposals passed the sandbox (needs {:.0}%)",
                    report.safety * 100.0,
                    SANDBOX_SAFETY_THRESHOLD * 100.0
                );
            }
        }
        if run {
            for op in ops.iter().filter(|o| o.allowed) {
                self.apply_audit_op(op, &mut memories, now)?;
                report.executed += 1;
            }
        }
        for op in &ops {
            let ns = op
                .ids
                .first()
                .and_then(|id| memories.get(id))
                .map_or_else(|| "*".to_string(), |m| m.namespace.clone());
            if !dry {
                self.audit(
                    &ns,
                    &format!("audit-{}", op.op),
                    &op.ids.join(","),
                    if op.allowed && run {
                        format!("applied: {}", op.reason)
                    } else {
                        format!("refused: {}", op.verdict)
                    },
                )?;
            }
        }
        report.ops = ops;
        Ok(report)
    }

    /// Pairs in the audit's merge-hint window, from each memory's nearest neighbours.
    fn merge_hints(&self, list: &[Memory]) -> CoreResult<Vec<(String, String)>> {
        let storage = self.ports().storage();
        let ids: Vec<String> = list.iter().map(|m| m.id.clone()).collect();
        let vectors: BTreeMap<String, Vec<f32>> = storage
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let mut hints = Vec::new();
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let (Some(va), Some(vb)) = (vectors.get(&a.id), vectors.get(&b.id)) else {
                    continue;
                };
                let sim = crate::vector::cosine(va, vb);
                if (AUDIT_MERGE_MIN_SIM..=AUDIT_MERGE_MAX_SIM).contains(&sim) {
                    hints.push((a.id.clone(), b.id.clone()));
                }
            }
        }
        Ok(hints)
    }

    fn apply_audit_op(
        &self,
        op: &AuditOp,
        memories: &mut BTreeMap<String, Memory>,
        now: Millis,
    ) -> CoreResult<()> {
        let storage = self.ports().storage();
        let write = |m: &mut Memory| {
            m.modified_at = now;
            storage.update_memory(m)
        };
        match op.op.as_str() {
            "promote" | "demote" | "adjust" => {
                let Some(m) = op.ids.first().and_then(|id| memories.get_mut(id)) else {
                    return Ok(());
                };
                match op.op.as_str() {
                    "promote" => m.layer = layer_up(m.layer).unwrap_or(m.layer),
                    "demote" => m.layer = layer_down(m.layer).unwrap_or(m.layer),
                    _ => m.importance = op.importance.unwrap_or(m.importance),
                }
                write(m)
            }
            "merge" => {
                let sources: Vec<Memory> = op
                    .ids
                    .iter()
                    .filter_map(|id| memories.get(id).cloned())
                    .collect();
                let Some(winner) = sources
                    .iter()
                    .max_by(|a, b| {
                        (a.layer, a.importance, a.access_count)
                            .partial_cmp(&(b.layer, b.importance, b.access_count))
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .cloned()
                else {
                    return Ok(());
                };
                let mut w = winner.clone();
                w.content = op.content.clone().unwrap_or(w.content);
                for s in sources.iter().filter(|s| s.id != winner.id) {
                    w.importance = w.importance.max(s.importance);
                    w.access_count = w.access_count.saturating_add(s.access_count);
                    w.repetition_count = w.repetition_count.saturating_add(s.repetition_count);
                    for t in &s.tags {
                        if !w.tags.contains(t) && w.tags.len() < MAX_TAGS {
                            w.tags.push(t.clone());
                        }
                    }
                    w.source_ids.push(s.id.clone());
                    let mut gone = s.clone();
                    gone.valid_until = Some(now);
                    gone.invalid_reason = Some("merged".into());
                    gone.superseded_by = Some(w.id.clone());
                    write(&mut gone)?;
                }
                write(&mut w)?;
                if let Some(v) = self.embed_one(&w.content)? {
                    storage.put_vector(Target::Memories, &w.id, &v)?;
                }
                memories.insert(w.id.clone(), w);
                Ok(())
            }
            _ => Ok(()),
        }
    }
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

    fn op(kind: &str, ids: &[&str]) -> AuditOp {
        AuditOp {
            op: kind.into(),
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
    fn the_sandbox_enforces_seed_004s_rules() {
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
        let refused = |o: &AuditOp| sandbox(o, &ms, now);
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
