//! The engine: the write paths (remember, ingest), reads by id and listing,
//! updates, soft delete and restore. Recall lives in `recall.rs`.

use crate::dedup;
use crate::entities;
use crate::error::{CoreError, CoreResult};
use crate::ids::new_id;
use crate::model::*;
use crate::ports::{Clock, Embedder, Ner, Ports, Storage};
use crate::thresholds::*;
use crate::validate::{self, DEFAULT_NAMESPACE};

/// Metadata key of the current consolidation epoch.
pub const META_EPOCH: &str = "epoch";
/// NER strategy used on the write paths (seed 003: `fast` on ingest).
pub const WRITE_NER_STRATEGY: &str = "fast";
/// Restatements kept as provenance on a reinforced memory.
pub const MAX_RESTATEMENTS: usize = 20;

pub struct Engine<P: Ports> {
    ports: P,
}

impl<P: Ports> Engine<P> {
    pub fn new(ports: P) -> Self {
        Self { ports }
    }

    pub fn ports(&self) -> &P {
        &self.ports
    }

    pub(crate) fn now(&self) -> Millis {
        self.ports.clock().now()
    }

    pub(crate) fn epoch(&self) -> CoreResult<u64> {
        Ok(self
            .ports
            .storage()
            .get_meta(META_EPOCH)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    pub(crate) fn audit(
        &self,
        namespace: &str,
        action: &str,
        target_id: &str,
        detail: String,
    ) -> CoreResult<()> {
        self.ports.storage().append_audit(&AuditEntry {
            at: self.now(),
            namespace: namespace.to_string(),
            action: action.to_string(),
            target_id: target_id.to_string(),
            detail,
        })
    }

    /// The vector for `text`, or `None` when vectors are disabled or the
    /// provider failed (the host backfills missing vectors later).
    pub(crate) fn embed_one(&self, text: &str) -> CoreResult<Option<Vec<f32>>> {
        if !self.ports.storage().vectors_enabled()? {
            return Ok(None);
        }
        Ok(self
            .ports
            .embedder()
            .embed(&[text.to_string()])
            .ok()
            .and_then(|mut v| v.pop()))
    }

    fn link_entities(
        &self,
        namespace: &str,
        target: Target,
        id: &str,
        text: &str,
    ) -> CoreResult<u32> {
        // NER failure costs the links, never the write.
        let Ok(mentions) = self.ports.ner().extract(text, WRITE_NER_STRATEGY) else {
            return Ok(0);
        };
        entities::link_mentions(
            self.ports.storage(),
            self.ports.clock(),
            namespace,
            target,
            id,
            &mentions,
        )
    }

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
        let storage = self.ports.storage();
        let now = self.now();
        let vector = self.embed_one(&content)?;

        let duplicate = match req.skip_dedup {
            true => None,
            false => dedup::find_duplicate(storage, &namespace, &content, vector.as_deref())?,
        };
        if let Some(dup) = duplicate {
            {
                let memory = self.reinforce(dup.memory, &content, source.as_deref(), now)?;
                self.audit(
                    &namespace,
                    "reinforce",
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
                new_id("mem", self.ports.clock()),
                namespace.clone(),
                content,
                now,
                self.epoch()?,
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
            if let serde_json::Value::Array(items) = list {
                items.push(serde_json::json!({ "text": restated, "at": now, "source": source }));
                let excess = items.len().saturating_sub(MAX_RESTATEMENTS);
                items.drain(..excess);
            }
            m.attributes = serde_json::Value::Object(attrs).to_string();
        }
        self.ports.storage().update_memory(&m)?;
        Ok(m)
    }

    /// Store one dialogue turn as an episode (seed 003 hot path: no LLM, no
    /// embedding). A new session id reports the open sessions before it.
    pub fn ingest(&self, turn: Turn) -> CoreResult<IngestOutcome> {
        let namespace = validate::namespace(&turn.namespace)?;
        let session_id =
            validate::required_field("session_id", &turn.session_id, MAX_SESSION_CHARS)?;
        let role = validate::required_field("role", &turn.role, MAX_ROLE_CHARS)?;
        let content = validate::content(&turn.content)?;
        let attributes = validate::attributes(turn.attributes.as_deref())?;
        let storage = self.ports.storage();
        let now = self.now();

        let (session, new_session) = match storage.get_session(&namespace, &session_id)? {
            Some(mut s) => {
                s.last_seen_at = now;
                s.turn_count = s.turn_count.saturating_add(1);
                (s, false)
            }
            None => (
                Session {
                    id: session_id.clone(),
                    namespace: namespace.clone(),
                    first_seen_at: now,
                    last_seen_at: now,
                    turn_count: 1,
                    consolidated_at: None,
                },
                true,
            ),
        };
        let pending_sessions = if new_session {
            storage
                .pending_sessions(&namespace, Some(&session_id))?
                .into_iter()
                .map(|s| s.id)
                .collect()
        } else {
            Vec::new()
        };
        storage.put_session(&session)?;

        let episode = Episode {
            id: new_id("ep", self.ports.clock()),
            namespace: namespace.clone(),
            session_id,
            source_role: role,
            content,
            event_time: turn.event_time.unwrap_or(now),
            created_at: now,
            valid_until: None,
            invalid_reason: None,
            attributes,
        };
        storage.insert_episode(&episode)?;
        let entities =
            self.link_entities(&namespace, Target::Episodes, &episode.id, &episode.content)?;
        Ok(IngestOutcome {
            episode,
            new_session,
            pending_sessions,
            entities,
        })
    }

    /// A memory of `namespace` (or of `default`, which every namespace reads).
    pub fn get(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, true)
    }

    /// A memory that `namespace` may change: its own, never `default`'s from a project.
    fn get_owned(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, false)
    }

    fn find_memory(&self, namespace: &str, id: &str, read_default: bool) -> CoreResult<Memory> {
        let namespace = validate::namespace(namespace)?;
        self.ports
            .storage()
            .get_memories(&[id.to_string()])?
            .into_iter()
            .find(|m| {
                m.namespace == namespace || (read_default && m.namespace == DEFAULT_NAMESPACE)
            })
            .ok_or_else(|| {
                CoreError::NotFound(format!("no memory `{id}` in namespace `{namespace}`"))
            })
    }

    pub fn list(&self, req: ListRequest) -> CoreResult<Vec<Memory>> {
        let namespace = validate::namespace(&req.namespace)?;
        if req.limit > MAX_RECALL_LIMIT * 5 {
            return Err(CoreError::invalid(format!(
                "limit must be at most {}",
                MAX_RECALL_LIMIT * 5
            )));
        }
        self.ports.storage().list_memories(&ListQuery {
            namespaces: vec![namespace],
            layers: req.layers,
            kinds: req.kinds,
            tags: validate::tags(&req.tags)?,
            state: Some(if req.deleted {
                ListState::Deleted
            } else {
                ListState::Active
            }),
            limit: req.limit,
            offset: req.offset,
            ..Default::default()
        })
    }

    pub fn update(&self, namespace: &str, id: &str, patch: MemoryPatch) -> CoreResult<Memory> {
        let mut m = self.get_owned(namespace, id)?;
        if !m.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is deleted; restore it first"
            )));
        }
        let mut new_content = None;
        if let Some(c) = &patch.content {
            let c = validate::content(c)?;
            if c != m.content {
                new_content = Some(c);
            }
        }
        if let Some(tags) = &patch.tags {
            m.tags = validate::tags(tags)?;
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
        let vector = match &new_content {
            Some(c) => self.embed_one(c)?,
            None => None,
        };
        if let Some(c) = new_content {
            m.content = c;
        }
        m.modified_at = self.now();
        let storage = self.ports.storage();
        storage.update_memory(&m)?;
        if let Some(v) = vector {
            storage.put_vector(Target::Memories, &m.id, &v)?;
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
        self.ports.storage().update_memory(&m)?;
        self.audit(&m.namespace, "delete", &m.id, reason)?;
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
        self.ports.storage().update_memory(&m)?;
        self.audit(&m.namespace, "restore", &m.id, format!("was: {was}"))?;
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
        self.ports.storage().update_memory(&m)?;
        self.audit(
            &m.namespace,
            "confirm",
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
        self.ports.storage().update_memory(&new)?;
        old.valid_until = Some(self.now());
        old.invalid_reason = Some("corrected".into());
        old.superseded_by = Some(new.id.clone());
        self.ports.storage().update_memory(&old)?;
        self.audit(
            &old.namespace,
            "supersede",
            &old.id,
            format!("corrected by {}", new.id),
        )?;
        Ok(new)
    }

    /// Counts for one namespace, or for the whole store.
    pub fn stats(&self, namespace: Option<&str>) -> CoreResult<StoreStats> {
        let namespaces = match namespace {
            Some(ns) => vec![validate::namespace(ns)?],
            None => Vec::new(),
        };
        self.ports.storage().stats(&namespaces)
    }
}
