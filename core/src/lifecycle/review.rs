//! The LLM audit of Working and Core (seed 004 §5): the model proposes
//! operations with three powers — schedule (promote / demote one layer),
//! adjust (importance) and merge — and every proposal passes the sandbox's
//! rules before anything runs. Delete is not a power: a proposed delete is
//! refused. When fewer than `REVIEW_SAFETY_THRESHOLD` of the proposals pass,
//! none runs. Merges are soft (the absorbed memories go to the trash).

use std::collections::BTreeMap;

use super::review_rules::{judge, layer_down, layer_up, reviewable};
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Llm, Ports, Storage};
use crate::prompts;
use crate::thresholds::*;
use crate::validate::{self, DEFAULT_NAMESPACE};

impl<P: Ports> Engine<P> {
    /// Runs one audit over Working and Core (one namespace or all).
    pub fn review(&self, namespace: Option<&str>, dry: bool) -> CoreResult<ReviewReport> {
        self.begin_llm_work();
        if self.ports().llm().level() == LlmLevel::Off {
            return Err(CoreError::Unavailable(
                "the review needs an LLM (MNEMO_LLM_LEVEL is off)".into(),
            ));
        }
        let namespace = namespace.map(validate::namespace).transpose()?;
        let now = self.ports().clock().now();
        // What the rules let it act on (old enough, untouched lately), the
        // most recently changed first — not simply the latest changes, which
        // the rules would refuse.
        let mut list = Vec::new();
        let q = ListQuery {
            namespaces: namespace.iter().cloned().collect(),
            layers: vec![Layer::Working, Layer::Core],
            by_modified: true,
            ..Default::default()
        };
        self.walk_memories(q, |page| {
            list.extend(page.into_iter().filter(|m| reviewable(m, now)));
            Ok(list.len() < REVIEW_MAX_MEMORIES as usize)
        })?;
        list.truncate(REVIEW_MAX_MEMORIES as usize);
        // Shown to the LLM and adjusted: the importance now.
        self.settle_all(&mut list)?;
        let mut report = ReviewReport {
            dry,
            safety: 1.0,
            ..Default::default()
        };
        if list.is_empty() {
            return Ok(report);
        }
        let hints = self.merge_hints(&list)?;
        let request = prompts::review::request(&list, &hints, now);
        let mut ops = self.ask_llm(&namespace.clone().unwrap_or_default(), &request, |c| {
            prompts::review::parse(c, &list)
        })?;
        let mut memories: BTreeMap<String, Memory> =
            list.into_iter().map(|m| (m.id.clone(), m)).collect();
        let mut good = 0;
        for op in &mut ops {
            match judge(op, &memories, now, &self.sharing) {
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
        let run = !dry && report.safety >= REVIEW_SAFETY_THRESHOLD;
        if !run && !dry && !ops.is_empty() {
            for op in ops.iter_mut().filter(|o| o.allowed) {
                op.verdict = format!(
                    "not run: only {:.0}% of the proposals passed the review rules (needs {:.0}%)",
                    report.safety * 100.0,
                    REVIEW_SAFETY_THRESHOLD * 100.0
                );
            }
        }
        if run {
            for op in ops.iter().filter(|o| o.allowed) {
                self.apply_review_op(op, &mut memories, now)?;
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
                self.log_decision(
                    &ns,
                    Action::Review,
                    &op.ids.join(","),
                    if op.allowed && run {
                        format!("{} applied: {}", op.op, op.reason)
                    } else {
                        format!("{} refused: {}", op.op, op.verdict)
                    },
                )?;
            }
        }
        report.ops = ops;
        Ok(report)
    }

    /// Pairs in the review's merge-hint window, from each memory's nearest neighbours.
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
                // No hint the review rules would refuse.
                if !crate::sharing::may_combine(&self.sharing, &[&a.namespace, &b.namespace]) {
                    continue;
                }
                let (Some(va), Some(vb)) = (vectors.get(&a.id), vectors.get(&b.id)) else {
                    continue;
                };
                let sim = crate::vector::cosine(va, vb);
                if (REVIEW_MERGE_MIN_SIM..=REVIEW_MERGE_MAX_SIM).contains(&sim) {
                    hints.push((a.id.clone(), b.id.clone()));
                }
            }
        }
        Ok(hints)
    }

    fn apply_review_op(
        &self,
        op: &ReviewOp,
        memories: &mut BTreeMap<String, Memory>,
        now: Millis,
    ) -> CoreResult<()> {
        let storage = self.ports().storage();
        let write = |m: &mut Memory| {
            m.modified_at = now;
            storage.update_memory(m)
        };
        match op.op {
            ReviewAction::Promote | ReviewAction::Demote | ReviewAction::Adjust => {
                let Some(m) = op.ids.first().and_then(|id| memories.get_mut(id)) else {
                    return Ok(());
                };
                match op.op {
                    ReviewAction::Promote => m.layer = layer_up(m.layer).unwrap_or(m.layer),
                    ReviewAction::Demote => m.layer = layer_down(m.layer).unwrap_or(m.layer),
                    _ => m.importance = op.importance.unwrap_or(m.importance),
                }
                write(m)
            }
            ReviewAction::Merge => {
                let sources: Vec<Memory> = op
                    .ids
                    .iter()
                    .filter_map(|id| memories.get(id).cloned())
                    .collect();
                // Across the namespaces of one sharing group (the review
                // rules refuse any other) `default`'s memory wins first.
                let mixed = sources.iter().any(|m| m.namespace != sources[0].namespace);
                let key = |m: &Memory| {
                    (
                        mixed && m.namespace == DEFAULT_NAMESPACE,
                        m.layer,
                        m.importance,
                        m.access_count,
                    )
                };
                let Some(winner) = sources
                    .iter()
                    .max_by(|a, b| {
                        key(a)
                            .partial_cmp(&key(b))
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
                    for t in s.user_tags() {
                        if !w.tags.contains(t) && w.user_tags().count() < MAX_TAGS {
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
                if w.content != winner.content {
                    self.keep_version(&winner, Action::Merge, format!("review: {}", op.reason))?;
                }
                write(&mut w)?;
                self.revector(Target::Memories, &w.id, &w.content)?;
                memories.insert(w.id.clone(), w);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
