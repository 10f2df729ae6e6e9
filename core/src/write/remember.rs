//! The write paths on memories: remember (with insert dedup and
//! reinforcement), update, soft delete and restore, confirm and correct.

use super::dedup;
use crate::engine::Engine;
use crate::engine::MAX_RESTATEMENTS;
use crate::error::{CoreError, CoreResult};
use crate::ids::new_id;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::thresholds::*;
use crate::validate;

impl<P: Ports> Engine<P> {
    /// Store a memory in Buffer, or reinforce the memory it duplicates.
    pub fn remember(&self, req: RememberRequest) -> CoreResult<RememberOutcome> {
        let namespace = validate::namespace(&req.namespace)?;
        let content = validate::content(&req.content)?;
        let tags = validate::tags(&req.tags)?;
        let source = validate::short_field("source", req.source.as_deref(), MAX_SOURCE_CHARS)?;
        let session_id =
            validate::short_field("session_id", req.session_id.as_deref(), MAX_SESSION_CHARS)?;
        let importance = validate::unit_interval("importance", req.importance)?;
        let attributes = validate::attributes(req.attributes.as_deref())?;
        let storage = self.ports().storage();
        let now = self.now();
        let vector = self.embed_one(&content)?;

        let duplicate = match req.skip_dedup {
            true => None,
            false => dedup::find_duplicate(storage, &namespace, &content, vector.as_deref())?,
        };
        if let Some(dup) = duplicate {
            {
                let mut memory = self.reinforce(dup.memory, &content, source.as_deref(), now)?;
                if dup.similarity > INSERT_MERGE_SIM
                    && content != memory.content
                    && self.ports().llm().level() != LlmLevel::Off
                {
                    // Seed 004's insert-time merge, off the request path.
                    crate::lifecycle::set_merge_pending(&mut memory, true);
                    self.ports().storage().update_memory(&memory)?;
                }
                self.log_decision(
                    &namespace,
                    Action::Reinforce,
                    &memory.id,
                    format!(
                        "{} duplicate (similarity {:.3}); repetition {}",
                        dup.reason, dup.similarity, memory.repetition_count
                    ),
                )?;
                return Ok(RememberOutcome {
                    memory,
                    created: false,
                    dedup_reason: Some(dup.reason.to_string()),
                    similarity: Some(dup.similarity),
                });
            }
        }

        let memory = Memory {
            kind: req.kind.unwrap_or(Kind::Semantic),
            importance: importance.unwrap_or(DEFAULT_IMPORTANCE),
            event_time: req.event_time.unwrap_or(now),
            session_id,
            source,
            tags,
            attributes,
            ..Memory::new(
                new_id("mem", self.ports().clock()),
                namespace.clone(),
                content,
                now,
                self.epoch(&namespace)?,
            )
        };
        storage.insert_memory(&memory)?;
        if let Some(v) = &vector {
            storage.put_vector(Target::Memories, &memory.id, v)?;
        }
        self.link_entities(&namespace, Target::Memories, &memory.id, &memory.content)?;
        Ok(RememberOutcome {
            memory,
            created: true,
            dedup_reason: None,
            similarity: None,
        })
    }

    /// A restatement: touch, count the repetition, keep the new wording as provenance.
    pub(crate) fn reinforce(
        &self,
        mut m: Memory,
        restated: &str,
        source: Option<&str>,
        now: Millis,
    ) -> CoreResult<Memory> {
        m.repetition_count = m.repetition_count.saturating_add(1);
        m.access_count = m.access_count.saturating_add(1);
        m.last_accessed = Some(now);
        if restated != m.content {
            let mut attrs: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&m.attributes).unwrap_or_default();
            let list = attrs
                .entry("restatements")
                .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            let mut archived = None;
            if let serde_json::Value::Array(items) = list {
                // The same wording again is one entry, counted and moved to
                // the end (the newest), not another copy pushing older
                // wordings out.
                let mut entry = match items.iter().position(|r| r["text"] == restated) {
                    Some(i) => items.remove(i),
                    None => serde_json::json!({ "text": restated }),
                };
                // An entry from before counts were kept stands for once.
                let said = match (entry["count"].as_u64(), entry["at"].is_null()) {
                    (Some(n), _) => n,
                    (None, true) => 0,
                    (None, false) => 1,
                };
                entry["count"] = (said + 1).into();
                entry["at"] = now.into();
                entry["source"] = source.into();
                items.push(entry);
                let excess = items.len().saturating_sub(MAX_RESTATEMENTS);
                if excess > 0 {
                    // Over the cap, the oldest wordings leave the memory for
                    // its history, where they stay listed and restorable.
                    archived = Some(items.drain(..excess).count());
                }
            }
            if let Some(n) = archived {
                // The version is the memory as it was, every wording in it.
                self.keep_version(
                    &m,
                    Action::Reinforce,
                    format!(
                        "{n} oldest restatement(s) moved here: a memory keeps its last {MAX_RESTATEMENTS} wordings"
                    ),
                )?;
            }
            m.attributes = serde_json::Value::Object(attrs).to_string();
        }
        self.ports().storage().update_memory(&m)?;
        Ok(m)
    }

    pub fn update(&self, namespace: &str, id: &str, patch: MemoryPatch) -> CoreResult<Memory> {
        let mut m = self.get_owned(namespace, id)?;
        if !m.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is deleted; restore it first"
            )));
        }
        let before = m.clone();
        let mut new_content = None;
        if let Some(c) = &patch.content {
            let c = validate::content(c)?;
            if c != m.content {
                new_content = Some(c);
            }
        }
        if let Some(tags) = &patch.tags {
            // New user tags; the lifecycle's markers stay (they are state,
            // not labels: dropping one would re-run the gate or the triage).
            let mut new = validate::tags(tags)?;
            for marker in m.tags.iter().filter(|t| is_marker(t)) {
                if !new.contains(marker) {
                    new.push(marker.clone());
                }
            }
            m.tags = new;
        }
        if let Some(i) = validate::unit_interval("importance", patch.importance)? {
            m.importance = i;
        }
        if let Some(k) = patch.kind {
            m.kind = k;
        }
        if patch.attributes.is_some() {
            m.attributes = validate::attributes(patch.attributes.as_deref())?;
        }
        let changed = new_content.is_some();
        if let Some(c) = new_content {
            m.content = c;
        }
        if m == before {
            return Ok(m);
        }
        m.modified_at = self.now();
        let seq = self.keep_version(&before, Action::Edit, "edited".into())?;
        self.log_decision(
            &m.namespace,
            Action::Edit,
            &m.id,
            format!("edited; the earlier state is version {seq}"),
        )?;
        self.ports().storage().update_memory(&m)?;
        if changed {
            self.revector(Target::Memories, &m.id, &m.content)?;
        }
        Ok(m)
    }

    /// Soft delete: the row stays, with `valid_until` and the reason, and can be restored.
    pub fn delete(&self, namespace: &str, id: &str, reason: &str) -> CoreResult<Memory> {
        let mut m = self.get_owned(namespace, id)?;
        if !m.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is already in the trash"
            )));
        }
        let reason = match reason.trim() {
            "" => "deleted".to_string(),
            r => r.chars().take(MAX_SOURCE_CHARS * 4).collect(),
        };
        m.valid_until = Some(self.now());
        m.invalid_reason = Some(reason.clone());
        self.ports().storage().update_memory(&m)?;
        self.log_decision(&m.namespace, Action::Delete, &m.id, reason)?;
        Ok(m)
    }

    pub fn restore(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        let mut m = self.get_owned(namespace, id)?;
        if m.is_active() {
            return Err(CoreError::Conflict(format!("memory `{id}` is not deleted")));
        }
        let was = m.invalid_reason.take().unwrap_or_default();
        m.valid_until = None;
        m.modified_at = self.now();
        self.ports().storage().update_memory(&m)?;
        self.log_decision(&m.namespace, Action::Restore, &m.id, format!("was: {was}"))?;
        Ok(m)
    }

    /// `confirm_fact` (seed 003): protected from decay, full confidence.
    pub fn confirm(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        let mut m = self.get_owned(namespace, id)?;
        if !m.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is deleted; restore it first"
            )));
        }
        m.decay_rate = 0.0;
        m.confidence = 1.0;
        m.modified_at = self.now();
        self.ports().storage().update_memory(&m)?;
        self.log_decision(
            &m.namespace,
            Action::Confirm,
            &m.id,
            "protected: decay_rate 0, confidence 1".into(),
        )?;
        Ok(m)
    }

    /// `correct_fact` (seed 003): the old memory is superseded (soft-deleted,
    /// linked to its replacement) and the corrected text stored in its place.
    pub fn correct(&self, namespace: &str, id: &str, content: &str) -> CoreResult<Memory> {
        let mut old = self.get_owned(namespace, id)?;
        if !old.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is deleted; restore it first"
            )));
        }
        let attributes = serde_json::json!({ "corrects": old.id }).to_string();
        let new = self
            .remember(RememberRequest {
                namespace: old.namespace.clone(),
                content: content.to_string(),
                kind: Some(old.kind),
                tags: old.tags.clone(),
                source: old.source.clone(),
                session_id: old.session_id.clone(),
                importance: Some(old.importance),
                attributes: Some(attributes),
                event_time: None,
                skip_dedup: true,
            })?
            .memory;
        let mut new = new;
        new.supersedes = Some(old.id.clone());
        new.source_ids = vec![old.id.clone()];
        self.ports().storage().update_memory(&new)?;
        old.valid_until = Some(self.now());
        old.invalid_reason = Some("corrected".into());
        old.superseded_by = Some(new.id.clone());
        self.ports().storage().update_memory(&old)?;
        self.log_decision(
            &old.namespace,
            Action::Supersede,
            &old.id,
            format!("corrected by {}", new.id),
        )?;
        Ok(new)
    }
}
