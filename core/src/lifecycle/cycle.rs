//! One consolidation cycle — the layer lifecycle of seed 004 §2–3 and the
//! session consolidation of seed 003 — as a plan of lifecycle actions that a
//! dry run reports and a real run applies:
//!
//! 1. sessions left open are distilled into facts (LLM `extract`, or the
//!    rule extractor of `extract.rs` when the LLM level is `off`);
//! 2. Core hygiene: session notes and `ephemeral` memories go back to Working;
//! 3. Working→Core candidates pass the gate (whitelist; LLM or heuristic),
//!    rejections escalate with epoch cooldowns (48, 144, never);
//! 4. Buffer→Working by reinforcement score or, for lessons and procedures,
//!    after a few epochs; then LLM triage of the rest (not with `off`);
//! 5. Buffer dedup by cosine (with the same guards as insert dedup);
//! 6. the Buffer capacity cap, importance decay by kind, and eviction of
//!    Buffer memories decayed to nothing;
//! 7. the epoch advances and the topic trees are rebuilt.
//!
//! Nothing is deleted: evictions and merges set `valid_until` and a reason
//! (restorable from the trash); every decision is written to the decision log.

use super::importance::decay;
use super::plan::*;
use std::collections::{BTreeMap, BTreeSet};

use crate::engine::{Engine, META_EPOCH, namespaced};
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};
use crate::thresholds::*;
use crate::validate;

/// Metadata key: when the last (non-dry) cycle finished.
pub const META_CONSOLIDATED_AT: &str = "consolidated_at";

impl<P: Ports> Engine<P> {
    /// One cycle: open sessions into facts, then the plan, then (unless dry)
    /// its application.
    pub fn consolidate(&self, req: ConsolidateRequest) -> CoreResult<ConsolidateReport> {
        let namespace = req
            .namespace
            .as_deref()
            .map(validate::namespace)
            .transpose()?;
        let storage = self.ports().storage();
        let now = self.ports().clock().now();
        // The report's epoch: the namespace's, or (every namespace) the
        // store-wide count of whole-store cycles.
        let epoch = match namespace.as_deref() {
            Some(ns) => self.epoch(ns)?,
            // The count of whole-store cycles (each namespace also counts its own).
            None => self.meta_number(META_EPOCH)?.unwrap_or(0),
        } + 1;
        self.begin_llm_work();
        let mut report = ConsolidateReport {
            epoch,
            dry: req.dry,
            ..Default::default()
        };
        if req.if_changed && !self.changed_since_last_cycle(namespace.as_deref())? {
            report.skipped = true;
            return Ok(report);
        }

        let pending = storage.pending_sessions(namespace.as_deref().unwrap_or(""), None)?;
        let idle_ms = i64::from(req.session_idle_minutes.unwrap_or(SESSION_IDLE_MINUTES)) * 60_000;
        let mut closed: Vec<Session> = pending
            .iter()
            .filter(|s| {
                now - s.last_seen_at >= idle_ms
                    || pending
                        .iter()
                        .any(|n| n.namespace == s.namespace && n.first_seen_at > s.first_seen_at)
            })
            .cloned()
            .collect();
        // The oldest first: when a budget runs out, the newer ones wait.
        closed.sort_by_key(|s| (s.first_seen_at, s.last_seen_at));
        self.distill_sessions(closed, req.dry, &mut report)?;

        let limits = BufferLimits {
            cap: match req.buffer_cap {
                Some(0) => return Err(CoreError::invalid("buffer_cap must be at least 1")),
                Some(n) => n as usize,
                None => BUFFER_CAP,
            },
            drop_below: validate::unit_interval("buffer_drop_below", req.buffer_drop_below)?
                .unwrap_or(DECAY_DROP_THRESHOLD),
        };
        let (cycle, namespaces) = self.plan(namespace.as_deref(), now, limits, &mut report)?;
        if !req.dry {
            report.topics = self.apply(&cycle, &namespaces, now, req.topics_by_worker)?;
            for ns in &namespaces {
                report.warnings.extend(self.summarise_core(ns)?);
            }
            if namespace.is_none() {
                // Only a whole-store cycle moves the store-wide marks: a
                // namespace's own cycle leaves the others' writes pending.
                let storage = self.ports().storage();
                storage.set_meta(META_EPOCH, &epoch.to_string())?;
                storage.set_meta(META_CONSOLIDATED_AT, &now.to_string())?;
            }
        }
        report.actions = cycle.actions;
        report.warnings.extend(self.llm_leftovers());
        Ok(report)
    }

    /// The plan: every step of the cycle decides on working copies of the
    /// memories it can act on (`candidates.rs`) and records its actions;
    /// nothing is written.
    fn plan(
        &self,
        namespace: Option<&str>,
        now: Millis,
        limits: BufferLimits,
        report: &mut ConsolidateReport,
    ) -> CoreResult<(Cycle, BTreeSet<String>)> {
        // Every copy as of the epoch before this one (lazy decay,
        // `importance.rs`): a copy written back carries its settled value.
        let active = self.cycle_memories(namespace, self.watermark(namespace)?)?;
        let mut cycle = Cycle {
            now,
            limits,
            memories: active.into_iter().map(|m| (m.id.clone(), m)).collect(),
            dirty: BTreeSet::new(),
            actions: Vec::new(),
            decayed: 0,
            warnings: Vec::new(),
            inserts: Vec::new(),
            reembed: BTreeSet::new(),
            judged: Vec::new(),
            epochs: BTreeMap::new(),
            changed: BTreeSet::new(),
        };
        report.examined = cycle.memories.len() as u32;
        // Every namespace with an active memory counts an epoch, whether or
        // not one of its memories is a candidate.
        let namespaces: BTreeSet<String> = self
            .ports()
            .storage()
            .active_namespaces()?
            .into_iter()
            .filter(|ns| namespace.is_none_or(|n| n == ns))
            .collect();
        let mut watermarks = BTreeMap::new();
        for ns in &namespaces {
            // Each namespace counts its own epochs and keeps its own
            // watermark (a whole-store cycle's, or its own, the later).
            cycle.epochs.insert(ns.clone(), self.epoch(ns)? + 1);
            let since = self.watermark(Some(ns))?.unwrap_or(0);
            watermarks.insert(ns.clone(), since);
            self.tag_cleanup(&mut cycle, ns);
            self.core_hygiene(&mut cycle, ns);
            self.core_overlap(&mut cycle, ns)?;
            self.gate(&mut cycle, ns);
            self.promote_buffer(&mut cycle, ns);
            self.triage(&mut cycle, ns);
            self.dedup_buffer(&mut cycle, ns)?;
            self.insert_merges(&mut cycle, ns);
            self.llm_pairs(&mut cycle, ns, since)?;
            self.distill_notes(&mut cycle, ns)?;
            self.cap_buffer(&mut cycle, ns);
        }
        decay(&mut cycle);
        // The last cycle rebuilt the trees after its own writes (stamped
        // with its time): only later writes, or this cycle's, change them.
        let written = cycle
            .memories
            .values()
            .filter(|m| {
                watermarks
                    .get(&m.namespace)
                    .is_none_or(|s| m.modified_at > *s)
            })
            .map(|m| m.namespace.clone());
        let acted = cycle.actions.iter().map(|a| a.namespace.clone());
        let inserted = cycle.inserts.iter().map(|m| m.namespace.clone());
        cycle.changed = written.chain(acted).chain(inserted).collect();

        report.decayed = cycle.decayed;
        report.warnings.append(&mut cycle.warnings);
        Ok((cycle, namespaces))
    }

    /// Applying a plan: the changed rows, new memories and their vectors,
    /// the pairs judged distinct, one decision per action, the new epoch and
    /// watermark, then the topic trees of the namespaces that changed (the
    /// others keep theirs; with `by_worker` the host's topic worker
    /// rebuilds them, after the cycle, with no write waiting). Returns the
    /// number of topics. The host runs the whole call in one transaction.
    fn apply(
        &self,
        cycle: &Cycle,
        namespaces: &BTreeSet<String>,
        now: Millis,
        by_worker: bool,
    ) -> CoreResult<u32> {
        let storage = self.ports().storage();
        let mut reembed = cycle.reembed.clone();
        let mut topics = 0;
        // A merge or an update rewrote these texts: the states they replace
        // become versions first.
        let rewritten: Vec<String> = cycle.reembed.iter().cloned().collect();
        for before in storage.get_memories(&rewritten)? {
            let Some(after) = cycle.memories.get(&before.id) else {
                continue;
            };
            if after.content == before.content {
                continue;
            }
            let (action, reason) = cycle
                .actions
                .iter()
                .rev()
                .find(|a| {
                    a.memory_id == before.id
                        && matches!(a.action, Action::Merge | Action::Supersede)
                })
                .map_or((Action::Merge, "merged".to_string()), |a| {
                    (a.action, a.detail.clone())
                });
            self.keep_version(&before, action, reason)?;
        }
        for id in &cycle.dirty {
            if let Some(m) = cycle.memories.get(id) {
                storage.update_memory(m)?;
            }
        }
        for m in &cycle.inserts {
            storage.insert_memory(m)?;
            reembed.insert(m.id.clone());
        }
        for id in &reembed {
            let content = match cycle.memories.get(id) {
                Some(m) => m.content.clone(),
                None => match cycle.inserts.iter().find(|m| &m.id == id) {
                    Some(m) => m.content.clone(),
                    None => continue,
                },
            };
            // A provider failure leaves the row to the background backfill.
            self.revector(Target::Memories, id, &content)?;
        }
        for key in &cycle.judged {
            // When the pair was judged distinct: a later change re-asks.
            storage.set_meta(key, &now.to_string())?;
        }
        for a in &cycle.actions {
            self.log_decision(&a.namespace, a.action, &a.memory_id, a.detail.clone())?;
        }
        for (ns, epoch) in &cycle.epochs {
            self.mark_lazy_decay(ns, epoch.saturating_sub(1))?;
            storage.set_meta(&namespaced(META_EPOCH, ns), &epoch.to_string())?;
            storage.set_meta(&namespaced(META_CONSOLIDATED_AT, ns), &now.to_string())?;
        }
        for ns in namespaces {
            topics += match self.cached_topic_count(ns)? {
                Some(n) if by_worker || !cycle.changed.contains(ns) => n,
                None if by_worker => 0,
                _ => self.rebuild_topics_in(ns)?,
            };
        }
        Ok(topics)
    }

    /// Whether anything was written since the last cycle: an open session,
    /// or a memory modified after the cycle's timestamp. The cycle stamps its
    /// own writes with that same millisecond, so a write landing in that very
    /// millisecond waits for the next write or the nightly cycle.
    fn changed_since_last_cycle(&self, namespace: Option<&str>) -> CoreResult<bool> {
        let storage = self.ports().storage();
        let Some(last) = self.watermark(namespace)? else {
            return Ok(true);
        };
        if !storage
            .pending_sessions(namespace.unwrap_or(""), None)?
            .is_empty()
        {
            return Ok(true);
        }
        for ns in self.covered(namespace)? {
            if self.modified_since(&ns, last + 1)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether a memory of `namespace`, in any layer or state, was modified
    /// at or after `at`: one namespace and every layer named, newest change
    /// first, so a seek per layer in the (namespace, layer, modified_at)
    /// index, not a walk of the store.
    pub(crate) fn modified_since(&self, namespace: &str, at: Millis) -> CoreResult<bool> {
        let touched = self.ports().storage().list_memories(&ListQuery {
            namespaces: vec![namespace.to_string()],
            layers: Layer::ALL.to_vec(),
            state: ListState::All,
            modified_since: Some(at),
            by_modified: true,
            limit: 1,
            ..Default::default()
        })?;
        Ok(!touched.is_empty())
    }

    /// The namespaces a cycle over `namespace` covers: that one, or (`None`)
    /// every namespace with an active memory.
    pub(super) fn covered(&self, namespace: Option<&str>) -> CoreResult<Vec<String>> {
        match namespace {
            Some(ns) => Ok(vec![ns.to_string()]),
            None => self.ports().storage().active_namespaces(),
        }
    }

    /// When the last cycle covering `namespace` finished: for one namespace
    /// the later of its own cycle and the last whole-store one; for every
    /// namespace (`None`), the last whole-store cycle only.
    pub(super) fn watermark(&self, namespace: Option<&str>) -> CoreResult<Option<Millis>> {
        let global = self.meta_number(META_CONSOLIDATED_AT)?;
        Ok(match namespace {
            Some(ns) => global.max(self.meta_number(&namespaced(META_CONSOLIDATED_AT, ns))?),
            None => global,
        })
    }
}
