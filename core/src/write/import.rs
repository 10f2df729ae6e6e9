//! Import of exported items (`mnemo import`): lossless — ids, times, layers,
//! counts, validity and provenance are kept — and deduplicating: an id
//! already stored is left alone, and a memory whose exact text is already
//! active in its namespace reinforces that memory instead of doubling it; a
//! fact whose triple is already current in its namespace is not stored twice.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Embedder, Ports, Storage};
use crate::thresholds::MAX_TAGS;
use crate::validate;

impl<P: Ports> Engine<P> {
    pub fn import(&self, item: ImportItem) -> CoreResult<ImportOutcome> {
        let storage = self.ports().storage();
        match item {
            ImportItem::Memory(MemoryLine { mut memory, vector }) => {
                validate::stored_memory(&mut memory)?;
                if !storage
                    .get_memories(std::slice::from_ref(&memory.id))?
                    .is_empty()
                {
                    return Ok(ImportOutcome::Exists);
                }
                if memory.is_active()
                    && let Some(mut existing) = storage
                        .find_exact(std::slice::from_ref(&memory.namespace), &memory.content)?
                {
                    // Both importances as of now (the line's is its export's).
                    self.settle_all(std::slice::from_mut(&mut existing))?;
                    existing.repetition_count = existing
                        .repetition_count
                        .saturating_add(memory.repetition_count.saturating_add(1));
                    existing.access_count =
                        existing.access_count.saturating_add(memory.access_count);
                    existing.importance = existing.importance.max(memory.importance);
                    fold_import(&mut existing, &memory);
                    storage.update_memory(&existing)?;
                    self.log_decision(
                        &existing.namespace,
                        Action::Reinforce,
                        &existing.id,
                        format!("import of {} (same text)", memory.id),
                    )?;
                    return Ok(ImportOutcome::Merged);
                }
                storage.insert_memory(&memory)?;
                self.store_vector(Target::Memories, &memory.id, vector)?;
                Ok(ImportOutcome::Created)
            }
            ImportItem::Episode(EpisodeLine {
                mut episode,
                vector,
            }) => {
                episode.namespace = validate::namespace(&episode.namespace)?;
                validate::content(&episode.content)?;
                episode.attributes = validate::attributes(Some(&episode.attributes))?;
                if !storage
                    .get_episodes(std::slice::from_ref(&episode.id))?
                    .is_empty()
                {
                    return Ok(ImportOutcome::Exists);
                }
                storage.insert_episode(&episode)?;
                self.store_vector(Target::Episodes, &episode.id, vector)?;
                Ok(ImportOutcome::Created)
            }
            ImportItem::Session(SessionLine { session }) => {
                let namespace = validate::namespace(&session.namespace)?;
                match storage.get_session(&namespace, &session.id)? {
                    Some(mut s) => {
                        s.first_seen_at = s.first_seen_at.min(session.first_seen_at);
                        s.last_seen_at = s.last_seen_at.max(session.last_seen_at);
                        s.turn_count = s.turn_count.max(session.turn_count);
                        s.consolidated_at = s.consolidated_at.or(session.consolidated_at);
                        s.consolidated_turns = s.consolidated_turns.max(session.consolidated_turns);
                        storage.put_session(&s)?;
                        Ok(ImportOutcome::Exists)
                    }
                    None => {
                        storage.put_session(&Session {
                            namespace,
                            ..session
                        })?;
                        Ok(ImportOutcome::Created)
                    }
                }
            }
            ImportItem::Entity(EntityLine {
                entity,
                memories,
                episodes,
            }) => {
                let namespace = validate::namespace(&entity.namespace)?;
                let (stored, outcome) = match storage.find_entity(
                    &namespace,
                    &entity.canonical_name,
                    entity.entity_type,
                )? {
                    Some(mut e) => {
                        e.mention_count = e.mention_count.max(entity.mention_count);
                        for a in entity.aliases {
                            if !e.aliases.iter().any(|x| x.eq_ignore_ascii_case(&a)) {
                                e.aliases.push(a);
                            }
                        }
                        e.summary = e.summary.or(entity.summary);
                        (e, ImportOutcome::Merged)
                    }
                    None => (
                        Entity {
                            namespace,
                            ..entity
                        },
                        ImportOutcome::Created,
                    ),
                };
                storage.put_entity(&stored)?;
                for id in memories {
                    storage.link_entity(Target::Memories, &id, &stored.id)?;
                }
                for id in episodes {
                    storage.link_entity(Target::Episodes, &id, &stored.id)?;
                }
                Ok(outcome)
            }
            ImportItem::Fact(FactLine { mut fact }) => {
                fact.namespace = validate::namespace(&fact.namespace)?;
                for part in [&fact.subject, &fact.predicate, &fact.object] {
                    validate::content(part)?;
                }
                validate::unit_interval("confidence", Some(fact.confidence))?;
                let query = |q: FactQuery| storage.query_facts(&q);
                let by_id = query(FactQuery {
                    id: Some(fact.id.clone()),
                    include_invalid: true,
                    limit: 1,
                    ..Default::default()
                })?;
                if !by_id.is_empty() {
                    return Ok(ImportOutcome::Exists);
                }
                if fact.valid_until.is_none() && fact.superseded_by.is_none() {
                    let same = query(FactQuery {
                        namespaces: vec![fact.namespace.clone()],
                        subject: Some(fact.subject.clone()),
                        predicate: Some(fact.predicate.clone()),
                        object: Some(fact.object.clone()),
                        limit: 1,
                        ..Default::default()
                    })?;
                    if let Some(mut kept) = same.into_iter().next() {
                        kept.confidence = kept.confidence.max(fact.confidence);
                        storage.put_fact(&kept)?;
                        return Ok(ImportOutcome::Merged);
                    }
                }
                storage.put_fact(&fact)?;
                Ok(ImportOutcome::Created)
            }
            ImportItem::Version(VersionLine { mut version }) => {
                version.namespace = validate::namespace(&version.namespace)?;
                validate::stored_memory(&mut version.memory)?;
                if version.memory.id != version.memory_id {
                    return Err(crate::CoreError::InvalidInput(format!(
                        "version {} of `{}` holds memory `{}`",
                        version.seq, version.memory_id, version.memory.id
                    )));
                }
                if storage
                    .memory_versions(&version.memory_id)?
                    .iter()
                    .any(|v| v.seq == version.seq)
                {
                    return Ok(ImportOutcome::Exists);
                }
                storage.put_version(&version)?;
                Ok(ImportOutcome::Created)
            }
        }
    }

    /// Keeps an exported vector when it fits this database's embedder; any
    /// other row gets its vector from the background backfill.
    fn store_vector(&self, target: Target, id: &str, vector: Option<Vec<f32>>) -> CoreResult<()> {
        let storage = self.ports().storage();
        if let Some(v) = vector
            && storage.vectors_enabled()?
            && v.len() == self.ports().embedder().info().dimension as usize
        {
            storage.put_vector(target, id, &v)?;
        }
        Ok(())
    }
}

/// What a folded import keeps of the line it folds: its tags (as many as
/// fit), the higher layer and the kind that came with it, attributes the
/// stored memory lacks, its protection and confidence, and its id as
/// provenance. Nothing the line said is dropped silently.
fn fold_import(existing: &mut Memory, line: &Memory) {
    for tag in &line.tags {
        if !existing.tags.contains(tag)
            && (is_marker(tag) || existing.user_tags().count() < MAX_TAGS)
        {
            existing.tags.push(tag.clone());
        }
    }
    if line.layer > existing.layer {
        existing.layer = line.layer;
        existing.kind = line.kind;
    }
    existing.confidence = existing.confidence.max(line.confidence);
    existing.decay_rate = existing.decay_rate.min(line.decay_rate);
    let mut attrs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&existing.attributes).unwrap_or_default();
    let incoming: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&line.attributes).unwrap_or_default();
    for (key, value) in incoming {
        attrs.entry(key).or_insert(value);
    }
    existing.attributes = serde_json::Value::Object(attrs).to_string();
    existing.source_ids.push(line.id.clone());
}
