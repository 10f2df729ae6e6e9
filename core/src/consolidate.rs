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
//! (restorable from the trash); every decision is written to the audit log.

use std::collections::{BTreeMap, BTreeSet};

use crate::dedup;
use crate::engine::{Engine, META_EPOCH};
use crate::error::CoreResult;
use crate::extract;
use crate::model::*;
use crate::ports::{Clock, Llm, Ports, Storage};
use crate::prompts::{self, ExtractedFact, PairDecision, Verdict};
use crate::text;
use crate::thresholds::*;
use crate::validate;

/// Metadata key: when the last (non-dry) cycle finished.
pub const META_CONSOLIDATED_AT: &str = "consolidated_at";
/// Memories read per page.
const PAGE: u32 = 500;

const TAG_REJECTED: &str = "gate-rejected";
const TAG_REJECTED_2: &str = "gate-rejected-2";
const TAG_REJECTED_FINAL: &str = "gate-rejected-final";
const TAG_TRIAGED: &str = "_triaged";
/// Tags that keep a memory out of Core (seed 004 §2.5).
const NOT_FOR_CORE: [&str; 4] = ["session", "ephemeral", "distilled", "auto-distilled"];

fn has(m: &Memory, tag: &str) -> bool {
    m.tags.iter().any(|t| t == tag)
}

fn attr_u64(m: &Memory, key: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(&m.attributes).ok()?[key].as_u64()
}

fn set_attr(m: &mut Memory, key: &str, value: serde_json::Value) {
    let mut attrs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&m.attributes).unwrap_or_default();
    attrs.insert(key.into(), value);
    m.attributes = serde_json::Value::Object(attrs).to_string();
}

/// Adds a tag unless present or the memory is at the tag limit.
fn add_tag(m: &mut Memory, tag: &str) {
    if !has(m, tag) && m.tags.len() < MAX_TAGS {
        m.tags.push(tag.into());
    }
}

fn is_session_note(m: &Memory) -> bool {
    m.source.as_deref() == Some("session") || has(m, "session")
}

/// The cycle's working copies and the decisions taken on them.
struct Cycle {
    epoch: u64,
    now: Millis,
    memories: BTreeMap<String, Memory>,
    /// Ids whose row must be written back.
    dirty: BTreeSet<String>,
    actions: Vec<LifecycleAction>,
    decayed: u32,
    warnings: Vec<String>,
    /// New memories (distillations) to insert.
    inserts: Vec<Memory>,
    /// Memories whose content changed: their vectors are redone.
    reembed: BTreeSet<String>,
    /// Pairs judged distinct, never asked about again.
    judged: Vec<String>,
}

impl Cycle {
    fn act(&mut self, id: &str, action: &str, to: Option<Layer>, detail: String) {
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
            action: action.into(),
            memory_id: id.into(),
            namespace: m.namespace.clone(),
            from_layer: Some(from),
            to_layer: to,
            detail,
        });
    }

    fn evict(&mut self, id: &str, reason: &str, detail: String) {
        if let Some(m) = self.memories.get_mut(id) {
            m.valid_until = Some(self.now);
            m.invalid_reason = Some(reason.into());
        }
        self.act(id, "evict", None, detail);
    }

    fn ids_where(&self, namespace: &str, f: impl Fn(&Memory) -> bool) -> Vec<String> {
        self.memories
            .values()
            .filter(|m| m.namespace == namespace && m.is_active() && f(m))
            .map(|m| m.id.clone())
            .collect()
    }
}

impl<P: Ports> Engine<P> {
    pub fn consolidate(&self, req: ConsolidateRequest) -> CoreResult<ConsolidateReport> {
        let namespace = req
            .namespace
            .as_deref()
            .map(validate::namespace)
            .transpose()?;
        let storage = self.ports().storage();
        let now = self.ports().clock().now();
        let epoch = self.epoch()? + 1;
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
        self.distil(pending, req.dry, &mut report);

        let mut cycle = Cycle {
            epoch,
            now,
            memories: self
                .active_memories(namespace.as_deref())?
                .into_iter()
                .map(|m| (m.id.clone(), m))
                .collect(),
            dirty: BTreeSet::new(),
            actions: Vec::new(),
            decayed: 0,
            warnings: Vec::new(),
            inserts: Vec::new(),
            reembed: BTreeSet::new(),
            judged: Vec::new(),
        };
        let since = storage
            .get_meta(META_CONSOLIDATED_AT)?
            .and_then(|v| v.parse::<Millis>().ok())
            .unwrap_or(0);
        report.examined = cycle.memories.len() as u32;
        let namespaces: BTreeSet<String> = cycle
            .memories
            .values()
            .map(|m| m.namespace.clone())
            .collect();
        for ns in &namespaces {
            self.core_hygiene(&mut cycle, ns);
            self.gate(&mut cycle, ns);
            self.promote_buffer(&mut cycle, ns);
            self.triage(&mut cycle, ns);
            self.dedup_buffer(&mut cycle, ns)?;
            self.llm_pairs(&mut cycle, ns, since)?;
            self.distill_notes(&mut cycle, ns)?;
            self.cap_buffer(&mut cycle, ns);
        }
        decay(&mut cycle);

        report.decayed = cycle.decayed;
        report.warnings.append(&mut cycle.warnings);
        if !req.dry {
            for id in &cycle.dirty {
                if let Some(m) = cycle.memories.get(id) {
                    storage.update_memory(m)?;
                }
            }
            for m in &cycle.inserts {
                storage.insert_memory(m)?;
                cycle.reembed.insert(m.id.clone());
            }
            for id in &cycle.reembed {
                let content = match cycle.memories.get(id) {
                    Some(m) => m.content.clone(),
                    None => match cycle.inserts.iter().find(|m| &m.id == id) {
                        Some(m) => m.content.clone(),
                        None => continue,
                    },
                };
                // A provider failure leaves the row to the background backfill.
                if let Some(v) = self.embed_one(&content)? {
                    storage.put_vector(Target::Memories, id, &v)?;
                }
            }
            for key in &cycle.judged {
                storage.set_meta(key, "keep_both")?;
            }
            for a in &cycle.actions {
                self.audit(&a.namespace, &a.action, &a.memory_id, a.detail.clone())?;
            }
            storage.set_meta(META_EPOCH, &epoch.to_string())?;
            storage.set_meta(META_CONSOLIDATED_AT, &now.to_string())?;
            for ns in &namespaces {
                report.topics += self.rebuild_topics_in(ns)?;
            }
        }
        report.actions = cycle.actions;
        Ok(report)
    }

    /// Seed 003's session-switch trigger: the named open sessions become
    /// facts now; no lifecycle step runs and the epoch stays.
    pub fn consolidate_sessions(
        &self,
        namespace: &str,
        ids: &[String],
    ) -> CoreResult<ConsolidateReport> {
        let namespace = validate::namespace(namespace)?;
        let mut sessions = Vec::new();
        for id in ids {
            match self.ports().storage().get_session(&namespace, id)? {
                Some(s) if s.consolidated_at.is_none() => sessions.push(s),
                Some(_) => {}
                None => {
                    return Err(crate::CoreError::NotFound(format!(
                        "no session {id} in namespace {namespace}"
                    )));
                }
            }
        }
        let mut report = ConsolidateReport {
            epoch: self.epoch()?,
            ..Default::default()
        };
        self.distil(sessions, false, &mut report);
        Ok(report)
    }

    /// Session consolidation of `sessions` into the report; a session that
    /// fails stays pending for the next try.
    fn distil(&self, sessions: Vec<Session>, dry: bool, report: &mut ConsolidateReport) {
        for session in sessions {
            if dry {
                report.sessions.push(session.id);
                continue;
            }
            let id = session.id.clone();
            match self.consolidate_session(session) {
                Ok(added) => {
                    report.sessions.push(id);
                    report.facts_added += added;
                }
                Err(e) => report
                    .warnings
                    .push(format!("session {id} not consolidated: {e}")),
            }
        }
    }

    /// Whether anything was written since the last cycle: an open session,
    /// or a memory modified after the cycle's timestamp. The cycle stamps its
    /// own writes with that same millisecond, so a write landing in that very
    /// millisecond waits for the next write or the nightly cycle.
    fn changed_since_last_cycle(&self, namespace: Option<&str>) -> CoreResult<bool> {
        let storage = self.ports().storage();
        let Some(last) = storage
            .get_meta(META_CONSOLIDATED_AT)?
            .and_then(|v| v.parse::<Millis>().ok())
        else {
            return Ok(true);
        };
        if !storage
            .pending_sessions(namespace.unwrap_or(""), None)?
            .is_empty()
        {
            return Ok(true);
        }
        let touched = storage.list_memories(&ListQuery {
            namespaces: namespace.map(|n| vec![n.to_string()]).unwrap_or_default(),
            state: Some(ListState::All),
            modified_since: Some(last + 1),
            limit: 1,
            ..Default::default()
        })?;
        Ok(!touched.is_empty())
    }

    fn active_memories(&self, namespace: Option<&str>) -> CoreResult<Vec<Memory>> {
        let mut out = Vec::new();
        loop {
            let page = self.ports().storage().list_memories(&ListQuery {
                namespaces: namespace.map(|n| vec![n.to_string()]).unwrap_or_default(),
                state: Some(ListState::Active),
                limit: PAGE,
                offset: out.len() as u32,
                ..Default::default()
            })?;
            let done = page.len() < PAGE as usize;
            out.extend(page);
            if done {
                return Ok(out);
            }
        }
    }

    /// Session notes and ephemeral memories do not belong in Core.
    fn core_hygiene(&self, cycle: &mut Cycle, ns: &str) {
        for id in cycle.ids_where(ns, |m| {
            m.layer == Layer::Core && (is_session_note(m) || has(m, "ephemeral"))
        }) {
            cycle.act(
                &id,
                "demote",
                Some(Layer::Working),
                "session note or ephemeral in Core".into(),
            );
        }
    }

    /// Working→Core: candidates by reinforcement and importance (or age),
    /// outside their rejection cooldown, through the gate.
    fn gate(&self, cycle: &mut Cycle, ns: &str) {
        let (epoch, now) = (cycle.epoch, cycle.now);
        let candidates: Vec<Memory> = cycle
            .ids_where(ns, |m| {
                if m.layer != Layer::Working
                    || is_session_note(m)
                    || NOT_FOR_CORE.iter().any(|t| has(m, t))
                    || has(m, TAG_REJECTED_FINAL)
                    || m.importance < PROMOTE_MIN_IMPORTANCE
                {
                    return false;
                }
                let rejected_at = attr_u64(m, "gate_rejected_epoch").unwrap_or(0);
                let cooldown = if has(m, TAG_REJECTED_2) {
                    GATE_RETRY2_EPOCHS
                } else if has(m, TAG_REJECTED) {
                    GATE_RETRY_EPOCHS
                } else {
                    0
                };
                if epoch.saturating_sub(rejected_at) < cooldown {
                    return false;
                }
                let score = m.reinforcement_score();
                score >= PROMOTE_THRESHOLD
                    || (now - m.created_at > WORKING_AGE_PROMOTE_MS && score > 0.0)
            })
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .collect();
        if candidates.is_empty() {
            return;
        }
        let level = self.ports().llm().level();
        let mut verdicts: Vec<Verdict> = Vec::new();
        let mut for_llm: Vec<Memory> = Vec::new();
        for m in &candidates {
            match (level, prompts::gate_heuristic(m)) {
                (LlmLevel::Full, _) => for_llm.push(m.clone()),
                (_, Some(category)) => verdicts.push(Verdict {
                    id: m.id.clone(),
                    promote: true,
                    kind: None,
                    reason: format!("heuristic: {category}"),
                }),
                (LlmLevel::Off, None) => verdicts.push(Verdict {
                    id: m.id.clone(),
                    promote: false,
                    kind: None,
                    reason: "heuristic: not a lesson, identity, constraint or decision".into(),
                }),
                (LlmLevel::Auto, None) => for_llm.push(m.clone()),
            }
        }
        if !for_llm.is_empty() {
            let answer = self
                .ports()
                .llm()
                .complete(&prompts::gate_request(&for_llm, now))
                .and_then(|a| prompts::parse_gate(&a.content, &for_llm));
            match answer {
                Ok(v) => verdicts.extend(v),
                Err(e) => cycle.warnings.push(format!("gate skipped: {e}")),
            }
        }
        for v in verdicts {
            if v.promote {
                if let Some(m) = cycle.memories.get_mut(&v.id) {
                    m.tags.retain(|t| !t.starts_with(TAG_REJECTED));
                    if let Some(kind) = v.kind {
                        m.kind = kind;
                    }
                }
                cycle.act(&v.id, "promote", Some(Layer::Core), v.reason);
            } else if let Some(m) = cycle.memories.get_mut(&v.id) {
                let next = if has(m, TAG_REJECTED_2) {
                    TAG_REJECTED_FINAL
                } else if has(m, TAG_REJECTED) {
                    TAG_REJECTED_2
                } else {
                    TAG_REJECTED
                };
                m.tags.retain(|t| !t.starts_with(TAG_REJECTED));
                add_tag(m, next);
                set_attr(m, "gate_rejected_epoch", serde_json::json!(epoch));
                cycle.act(&v.id, "gate-reject", None, format!("{next}: {}", v.reason));
            }
        }
    }

    /// Buffer→Working, mechanically: reinforcement score, or lessons and
    /// procedures after `KIND_PROMOTE_EPOCHS` in Buffer.
    fn promote_buffer(&self, cycle: &mut Cycle, ns: &str) {
        let epoch = cycle.epoch;
        let mut promote = Vec::new();
        for id in cycle.ids_where(ns, |m| m.layer == Layer::Buffer && !has(m, "distilled")) {
            let Some(m) = cycle.memories.get(&id) else {
                continue;
            };
            let score = m.reinforcement_score();
            if score >= BUFFER_PROMOTE_SCORE {
                promote.push((id, format!("reinforcement score {score:.1}")));
            } else if (has(m, "lesson") || m.kind == Kind::Procedural)
                && epoch.saturating_sub(m.created_epoch) >= KIND_PROMOTE_EPOCHS
            {
                promote.push((id, format!("{} after {KIND_PROMOTE_EPOCHS} epochs", m.kind)));
            }
        }
        for (id, why) in promote {
            cycle.act(&id, "promote", Some(Layer::Working), why);
        }
    }

    /// LLM triage of the Buffer (not with the LLM level `off`).
    fn triage(&self, cycle: &mut Cycle, ns: &str) {
        if self.ports().llm().level() == LlmLevel::Off {
            return;
        }
        let now = cycle.now;
        let mut batch: Vec<Memory> = cycle
            .ids_where(ns, |m| {
                m.layer == Layer::Buffer
                    && now - m.created_at > TRIAGE_MIN_AGE_MS
                    && ![TAG_TRIAGED, "distilled", "ephemeral"]
                        .iter()
                        .any(|t| has(m, t))
            })
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .collect();
        batch.sort_by_key(|m| std::cmp::Reverse(m.created_at));
        batch.truncate(TRIAGE_BATCH);
        if batch.is_empty() {
            return;
        }
        let answer = self
            .ports()
            .llm()
            .complete(&prompts::triage_request(&batch, now))
            .and_then(|a| prompts::parse_triage(&a.content, &batch));
        let verdicts = match answer {
            Ok(v) => v,
            Err(e) => {
                cycle.warnings.push(format!("triage skipped: {e}"));
                return;
            }
        };
        for v in verdicts {
            if v.promote {
                if let (Some(kind), Some(m)) = (v.kind, cycle.memories.get_mut(&v.id)) {
                    m.kind = kind;
                }
                cycle.act(
                    &v.id,
                    "promote",
                    Some(Layer::Working),
                    format!("triage: {}", v.reason),
                );
            } else if let Some(m) = cycle.memories.get_mut(&v.id) {
                add_tag(m, TAG_TRIAGED);
                cycle.act(&v.id, "triage-keep", None, v.reason);
            }
        }
    }

    /// Cosine duplicates inside the Buffer fold into the stronger memory.
    fn dedup_buffer(&self, cycle: &mut Cycle, ns: &str) -> CoreResult<()> {
        let ids = cycle.ids_where(ns, |m| m.layer == Layer::Buffer);
        if ids.len() < 2 {
            return Ok(());
        }
        let vectors: BTreeMap<String, Vec<f32>> = self
            .ports()
            .storage()
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let mut gone: BTreeSet<String> = BTreeSet::new();
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                if gone.contains(a) || gone.contains(b) {
                    continue;
                }
                let (Some(va), Some(vb)) = (vectors.get(a), vectors.get(b)) else {
                    continue;
                };
                let sim = crate::vector::cosine(va, vb);
                let (Some(ma), Some(mb)) = (cycle.memories.get(a), cycle.memories.get(b)) else {
                    continue;
                };
                let jaccard =
                    text::jaccard(&text::token_set(&ma.content), &text::token_set(&mb.content));
                if sim < TRIAGE_DEDUP_SIM
                    || jaccard <= DEDUP_JACCARD_PREFILTER
                    || dedup::is_substitution(&ma.content, &mb.content)
                {
                    continue;
                }
                let strength = |m: &Memory| (m.reinforcement_score(), m.importance, -m.created_at);
                let (winner, loser) = if strength(ma) >= strength(mb) {
                    (a.clone(), b.clone())
                } else {
                    (b.clone(), a.clone())
                };
                fold(cycle, &winner, &loser);
                cycle.evict(
                    &loser,
                    "merged",
                    format!("buffer duplicate of {winner} (cosine {sim:.3})"),
                );
                gone.insert(loser);
            }
        }
        Ok(())
    }

    /// Seed 004 §3.1–3.2 with an LLM: near-duplicates merge, same-topic
    /// updates reconcile. Pairs come from the nearest neighbours of the
    /// memories changed since the last cycle; a pair judged distinct is
    /// remembered and not asked about again.
    fn llm_pairs(&self, cycle: &mut Cycle, ns: &str, since: Millis) -> CoreResult<()> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Ok(());
        }
        let storage = self.ports().storage();
        let mut changed: Vec<(Millis, String)> = cycle
            .ids_where(ns, |m| m.modified_at >= since)
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).map(|m| (m.modified_at, id)))
            .collect();
        changed.sort_by(|a, b| b.cmp(a));
        changed.truncate(PAIR_SCAN_MAX);
        let ids: Vec<String> = changed.into_iter().map(|(_, id)| id).collect();
        let vectors: BTreeMap<String, Vec<f32>> = storage
            .get_vectors(Target::Memories, &ids)?
            .into_iter()
            .collect();
        let filter = SearchFilter {
            namespaces: vec![ns.to_string()],
            ..Default::default()
        };
        let mut asked = 0;
        for id in ids {
            if asked >= LLM_PAIRS_PER_CYCLE {
                break;
            }
            let Some(v) = vectors.get(&id) else {
                continue;
            };
            let near = storage.vector_search(Target::Memories, v, &filter, PAIR_NEIGHBOURS + 1)?;
            for hit in near.into_iter().filter(|h| h.id != id) {
                let (Some(a), Some(b)) = (cycle.memories.get(&id), cycle.memories.get(&hit.id))
                else {
                    continue;
                };
                if !a.is_active() || !b.is_active() {
                    continue;
                }
                let key = pair_key(&a.id, &b.id);
                if cycle.judged.contains(&key) || storage.get_meta(&key)?.is_some() {
                    continue;
                }
                let (older, newer) = if a.created_at <= b.created_at {
                    (a, b)
                } else {
                    (b, a)
                };
                let upper = |m: &Memory| m.layer != Layer::Buffer;
                let request = if hit.score >= MERGE_SIM {
                    prompts::merge_request(older, newer)
                } else if hit.score > RECONCILE_MIN_SIM
                    && hit.score < RECONCILE_MAX_SIM
                    && upper(older)
                    && upper(newer)
                    && newer.created_at - older.created_at >= RECONCILE_MIN_GAP_MS
                {
                    prompts::reconcile_request(older, newer)
                } else {
                    continue;
                };
                let (older, newer) = (older.clone(), newer.clone());
                asked += 1;
                let decision = self.ports().llm().complete(&request).and_then(|answer| {
                    if request.component == "merge" {
                        prompts::parse_merge(&answer.content)
                    } else {
                        prompts::parse_reconcile(&answer.content, &newer)
                    }
                });
                let sim = hit.score;
                // Seed 004's sandbox rule for merges: the result must keep at
                // least half of the shorter input, and fit a memory.
                let shortest = older
                    .content
                    .chars()
                    .count()
                    .min(newer.content.chars().count());
                let decision = decision.and_then(|d| match d {
                    PairDecision::Merge(c) | PairDecision::Update(c)
                        if c.chars().count() < shortest / 2 =>
                    {
                        Err(crate::CoreError::Llm(format!(
                            "the merged text ({} chars) drops too much of the inputs",
                            c.chars().count()
                        )))
                    }
                    PairDecision::Merge(c) => validate::content(&c).map(PairDecision::Merge),
                    PairDecision::Update(c) => validate::content(&c).map(PairDecision::Update),
                    keep => Ok(keep),
                });
                match decision {
                    Ok(PairDecision::Merge(content)) => {
                        let strength = |m: &Memory| (m.importance, m.access_count);
                        let (winner, loser) = if strength(&older) > strength(&newer) {
                            (older, newer)
                        } else {
                            (newer, older)
                        };
                        combine(cycle, &winner, &loser, content);
                        cycle.evict(
                            &loser.id,
                            "merged",
                            format!("{} into {} (cosine {sim:.3})", request.component, winner.id),
                        );
                    }
                    Ok(PairDecision::Update(content)) => {
                        combine(cycle, &newer, &older, content);
                        if let Some(n) = cycle.memories.get_mut(&newer.id) {
                            n.supersedes = Some(older.id.clone());
                        }
                        cycle.evict(
                            &older.id,
                            "superseded",
                            format!("updated by {} (cosine {sim:.3})", newer.id),
                        );
                        cycle.act(
                            &newer.id,
                            "supersede",
                            None,
                            format!("supersedes {}", older.id),
                        );
                    }
                    Ok(PairDecision::KeepBoth) => cycle.judged.push(key),
                    Err(e) => cycle
                        .warnings
                        .push(format!("{} skipped: {e}", request.component)),
                }
                break;
            }
        }
        Ok(())
    }

    /// Seed 004 §3.3: three or more undistilled session notes become one
    /// project-status snapshot in Working (unless a near-identical one exists).
    fn distill_notes(&self, cycle: &mut Cycle, ns: &str) -> CoreResult<()> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Ok(());
        }
        let mut notes: Vec<Memory> = cycle
            .ids_where(ns, |m| {
                is_session_note(m) && !has(m, "distilled") && !has(m, "auto-distilled")
            })
            .into_iter()
            .filter_map(|id| cycle.memories.get(&id).cloned())
            .collect();
        if notes.len() < DISTILL_MIN_NOTES {
            return Ok(());
        }
        notes.sort_by_key(|m| std::cmp::Reverse(m.created_at));
        notes.truncate(DISTILL_MAX_NOTES);
        let snapshot = match self
            .ports()
            .llm()
            .complete(&prompts::distill_request(&notes))
            .and_then(|a| prompts::parse_distill(&a.content))
        {
            Ok(s) => s,
            Err(e) => {
                cycle.warnings.push(format!("distill skipped: {e}"));
                return Ok(());
            }
        };
        for n in &notes {
            if let Some(m) = cycle.memories.get_mut(&n.id) {
                add_tag(m, "distilled");
            }
            cycle.dirty.insert(n.id.clone());
        }
        let existing = cycle.ids_where(ns, |m| has(m, "project-status"));
        if let Some(v) = self.embed_one(&snapshot)? {
            let stored = self
                .ports()
                .storage()
                .get_vectors(Target::Memories, &existing)?;
            if let Some((id, _)) = stored
                .iter()
                .find(|(_, w)| crate::vector::cosine(&v, w) >= TRIAGE_DEDUP_SIM)
            {
                cycle
                    .warnings
                    .push(format!("distillation matches {id}; not stored again"));
                return Ok(());
            }
        }
        let memory = Memory {
            layer: Layer::Working,
            tags: vec!["project-status".into(), "auto-distilled".into()],
            source: Some("distill".into()),
            source_ids: notes.iter().map(|n| n.id.clone()).collect(),
            ..Memory::new(
                crate::ids::new_id("mem", self.ports().clock()),
                ns.to_string(),
                validate::content(&snapshot)?,
                cycle.now,
                cycle.epoch,
            )
        };
        cycle.actions.push(LifecycleAction {
            action: "distill".into(),
            memory_id: memory.id.clone(),
            namespace: ns.to_string(),
            from_layer: None,
            to_layer: Some(Layer::Working),
            detail: format!("{} session notes", notes.len()),
        });
        cycle.inserts.push(memory);
        Ok(())
    }

    /// Over `BUFFER_CAP`, the weakest Buffer memories leave (oldest first
    /// among equals).
    fn cap_buffer(&self, cycle: &mut Cycle, ns: &str) {
        let mut buffer: Vec<(f32, f32, Millis, String)> = cycle
            .ids_where(ns, |m| m.layer == Layer::Buffer)
            .into_iter()
            .filter_map(|id| {
                let m = cycle.memories.get(&id)?;
                Some((m.reinforcement_score(), m.importance, m.created_at, id))
            })
            .collect();
        if buffer.len() <= BUFFER_CAP {
            return;
        }
        buffer.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        let excess = buffer.len() - BUFFER_CAP;
        for (_, _, _, id) in buffer.into_iter().take(excess) {
            cycle.evict(
                &id,
                "evicted",
                format!("buffer over its cap of {BUFFER_CAP}"),
            );
        }
    }

    /// Seed 003 session consolidation: the dialogue of one session becomes
    /// facts; returns how many were added. Idempotent: a session is marked
    /// consolidated only once every chunk went through, and saving dedups.
    pub fn consolidate_session(&self, mut session: Session) -> CoreResult<u32> {
        let storage = self.ports().storage();
        let llm = self.ports().llm().level() != LlmLevel::Off;
        let mut added = 0;
        let mut offset = 0;
        loop {
            let chunk = storage.session_episodes(
                &session.namespace,
                &session.id,
                offset,
                CONSOLIDATION_CHUNK,
            )?;
            if chunk.is_empty() {
                break;
            }
            offset += chunk.len() as u32;
            let facts = if llm {
                let turns: Vec<(String, String)> = chunk
                    .iter()
                    .map(|e| (e.source_role.clone(), e.content.clone()))
                    .collect();
                let answer = self
                    .ports()
                    .llm()
                    .complete(&prompts::extract_request(&turns))?;
                prompts::parse_extract(&answer.content, turns.len())?
            } else {
                chunk
                    .iter()
                    .enumerate()
                    .flat_map(|(i, e)| extract::facts_in_turn(&e.source_role, &e.content, i))
                    .collect()
            };
            for fact in facts {
                added += u32::from(self.save_fact(&session, &chunk, fact)?);
            }
        }
        session.consolidated_at = Some(self.ports().clock().now());
        storage.put_session(&session)?;
        self.audit(
            &session.namespace,
            "consolidate-session",
            &session.id,
            format!("{offset} turns, {added} new facts"),
        )?;
        Ok(added)
    }

    /// Seed 003 `save_facts_batch` for one fact: a Jaccard-similar stored
    /// memory is reinforced; otherwise the fact is remembered (Buffer) with
    /// its provenance, and its triple is added (superseding the old value of
    /// a single-valued predicate). Returns whether a memory was created.
    fn save_fact(
        &self,
        session: &Session,
        chunk: &[Episode],
        fact: ExtractedFact,
    ) -> CoreResult<bool> {
        let storage = self.ports().storage();
        let namespace = &session.namespace;
        let sources: Vec<&Episode> = fact.turns.iter().filter_map(|i| chunk.get(*i)).collect();
        let tokens = text::token_set(&fact.content);
        let terms = text::fts_terms(&fact.content);
        let filter = SearchFilter {
            namespaces: vec![namespace.clone()],
            ..Default::default()
        };
        let near = storage.fts_search(Target::Memories, &terms, &filter, DEDUP_CANDIDATES, 0.0)?;
        let ids: Vec<String> = near.into_iter().map(|h| h.id).collect();
        if let Some(existing) = storage.get_memories(&ids)?.into_iter().find(|m| {
            m.is_active()
                && text::jaccard(&tokens, &text::token_set(&m.content)) >= FACT_BATCH_JACCARD
                && !dedup::is_substitution(&fact.content, &m.content)
        }) {
            self.reinforce(existing, &fact.content, Some("consolidation"), self.now())?;
            return Ok(false);
        }
        let outcome = self.remember(RememberRequest {
            namespace: namespace.clone(),
            content: fact.content.clone(),
            kind: Some(fact.kind),
            tags: vec!["fact".into()],
            source: Some("consolidation".into()),
            session_id: Some(session.id.clone()),
            importance: fact.importance,
            attributes: None,
            event_time: sources.first().map(|e| e.event_time),
            skip_dedup: false,
        })?;
        let mut memory = outcome.memory;
        if outcome.created {
            memory.source_ids = sources.iter().map(|e| e.id.clone()).collect();
            memory.source_role = sources.first().map(|e| e.source_role.clone());
            storage.update_memory(&memory)?;
        }
        if let Some((subject, predicate, object)) = fact.triple {
            self.add_fact(FactInput {
                namespace: namespace.clone(),
                subject,
                predicate,
                object,
                confidence: None,
                memory_id: Some(memory.id.clone()),
                exclusive: fact.exclusive,
            })?;
        }
        Ok(outcome.created)
    }
}

/// A stable metadata key for a pair of memories.
fn pair_key(a: &str, b: &str) -> String {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    format!("pair:{x}:{y}")
}

/// An LLM merge or update: the winner takes the merged content, the higher
/// layer of the two, and the loser's counts, tags and provenance.
fn combine(cycle: &mut Cycle, winner: &Memory, loser: &Memory, content: String) {
    fold(cycle, &winner.id, &loser.id);
    if let Some(w) = cycle.memories.get_mut(&winner.id) {
        w.content = content;
        w.layer = w.layer.max(loser.layer);
        cycle.reembed.insert(w.id.clone());
    }
}

/// The winner absorbs the loser's counts, tags and provenance.
fn fold(cycle: &mut Cycle, winner: &str, loser: &str) {
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
    cycle.act(winner, "merge", None, format!("absorbed {loser}"));
}

/// Epoch decay of importance by kind (protected memories keep theirs), then
/// eviction of Buffer memories decayed below the drop threshold.
fn decay(cycle: &mut Cycle) {
    let mut drop = Vec::new();
    for m in cycle.memories.values_mut() {
        if !m.is_active() || m.decay_rate <= 0.0 || m.importance <= 0.0 {
            continue;
        }
        let share = match m.kind {
            Kind::Episodic => DECAY_SHARE_EPISODIC,
            Kind::Semantic => DECAY_SHARE_SEMANTIC,
            Kind::Procedural => DECAY_SHARE_PROCEDURAL,
        };
        m.importance = (m.importance - IMPORTANCE_DECAY * share).max(0.0);
        cycle.decayed += 1;
        cycle.dirty.insert(m.id.clone());
        if m.layer == Layer::Buffer && m.importance < DECAY_DROP_THRESHOLD {
            drop.push((m.id.clone(), m.importance));
        }
    }
    for (id, importance) in drop {
        cycle.evict(
            &id,
            "decayed",
            format!("importance {importance:.3} under {DECAY_DROP_THRESHOLD}"),
        );
    }
}
