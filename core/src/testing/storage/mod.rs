//! `MemStorage`: the storage port in memory. Naive (linear scans,
//! term-count "BM25") but held to the same contract as the SQLite store by
//! the suite in `contract/`: filters, soft deletes, namespaces, orders.
//! The search channels are in `search.rs`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::*;

mod search;

#[derive(Default)]
pub struct MemStorage {
    pub memories: RefCell<BTreeMap<String, Memory>>,
    pub episodes: RefCell<BTreeMap<String, Episode>>,
    pub sessions: RefCell<BTreeMap<(String, String), Session>>,
    pub entities: RefCell<BTreeMap<String, Entity>>,
    pub links: RefCell<Vec<(Target, String, String)>>,
    pub vectors: RefCell<BTreeMap<(Target, String), Vec<f32>>>,
    pub facts: RefCell<Vec<Fact>>,
    pub audit: RefCell<Vec<Decision>>,
    pub versions: RefCell<BTreeMap<(String, u32), MemoryVersion>>,
    pub meta: RefCell<BTreeMap<String, String>>,
    pub vectors_disabled: Cell<bool>,
}

fn filter_memory(m: &Memory, f: &SearchFilter) -> bool {
    crate::read::admits(f, m)
}

fn filter_episode(e: &Episode, f: &SearchFilter) -> bool {
    e.valid_until.is_none()
        && (f.namespaces.is_empty() || f.namespaces.contains(&e.namespace))
        && f.since.is_none_or(|s| e.event_time >= s)
        && f.until.is_none_or(|u| e.event_time <= u)
}

impl Storage for MemStorage {
    fn insert_memory(&self, m: &Memory) -> CoreResult<()> {
        let mut all = self.memories.borrow_mut();
        if all.contains_key(&m.id) {
            return Err(CoreError::Conflict(m.id.clone()));
        }
        all.insert(m.id.clone(), m.clone());
        Ok(())
    }
    fn update_memory(&self, m: &Memory) -> CoreResult<()> {
        match self.memories.borrow_mut().get_mut(&m.id) {
            Some(slot) => {
                *slot = m.clone();
                Ok(())
            }
            None => Err(CoreError::NotFound(m.id.clone())),
        }
    }
    fn get_memories(&self, ids: &[String]) -> CoreResult<Vec<Memory>> {
        let all = self.memories.borrow();
        Ok(ids.iter().filter_map(|id| all.get(id).cloned()).collect())
    }
    fn find_exact(&self, namespaces: &[String], content: &str) -> CoreResult<Option<Memory>> {
        Ok(self
            .memories
            .borrow()
            .values()
            .find(|m| m.is_active() && namespaces.contains(&m.namespace) && m.content == content)
            .cloned())
    }
    fn list_memories(&self, q: &ListQuery) -> CoreResult<Vec<Memory>> {
        let state = q.state;
        let mut out: Vec<Memory> = self
            .memories
            .borrow()
            .values()
            .filter(|m| match state {
                ListState::Active => m.is_active(),
                ListState::Deleted => !m.is_active(),
                ListState::All => true,
            })
            .filter(|m| q.namespaces.is_empty() || q.namespaces.contains(&m.namespace))
            .filter(|m| q.layers.is_empty() || q.layers.contains(&m.layer))
            .filter(|m| q.kinds.is_empty() || q.kinds.contains(&m.kind))
            .filter(|m| q.tags.iter().all(|t| m.tags.contains(t)))
            .filter(|m| q.modified_since.is_none_or(|t| m.modified_at >= t))
            .filter(|m| q.min_importance.is_none_or(|i| m.importance >= i))
            .filter(|m| q.any_tags.is_empty() || q.any_tags.iter().any(|t| m.tags.contains(t)))
            .filter(|m| q.source.is_none() || m.source == q.source)
            .filter(|m| {
                let time = if q.by_modified {
                    m.modified_at
                } else {
                    m.created_at
                };
                match (q.after_time, &q.after_id) {
                    (Some(t), Some(id)) => time < t || (time == t && m.id < *id),
                    _ => true,
                }
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            let (x, y) = if q.by_modified {
                (b.modified_at, a.modified_at)
            } else {
                (b.created_at, a.created_at)
            };
            x.cmp(&y).then_with(|| b.id.cmp(&a.id))
        });
        Ok(out
            .into_iter()
            .skip(q.offset as usize)
            .take(q.limit as usize)
            .collect())
    }
    fn touch_memories(&self, ids: &[String], at: Millis) -> CoreResult<()> {
        for id in ids {
            if let Some(m) = self.memories.borrow_mut().get_mut(id) {
                m.access_count += 1;
                m.last_accessed = Some(at);
            }
        }
        Ok(())
    }
    fn renew_memories(&self, ids: &[String], at: Millis) -> CoreResult<()> {
        for id in ids {
            if let Some(m) = self.memories.borrow_mut().get_mut(id) {
                let mut attrs: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&m.attributes).unwrap_or_default();
                attrs.insert("renewed_at".into(), serde_json::json!(at));
                m.attributes = serde_json::Value::Object(attrs).to_string();
            }
        }
        Ok(())
    }
    fn insert_episode(&self, e: &Episode) -> CoreResult<()> {
        self.episodes.borrow_mut().insert(e.id.clone(), e.clone());
        Ok(())
    }
    fn get_episodes(&self, ids: &[String]) -> CoreResult<Vec<Episode>> {
        let all = self.episodes.borrow();
        Ok(ids.iter().filter_map(|id| all.get(id).cloned()).collect())
    }
    fn get_session(&self, namespace: &str, id: &str) -> CoreResult<Option<Session>> {
        Ok(self
            .sessions
            .borrow()
            .get(&(namespace.to_string(), id.to_string()))
            .cloned())
    }
    fn put_session(&self, s: &Session) -> CoreResult<()> {
        self.sessions
            .borrow_mut()
            .insert((s.namespace.clone(), s.id.clone()), s.clone());
        Ok(())
    }
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> CoreResult<Vec<Session>> {
        Ok(self
            .sessions
            .borrow()
            .values()
            .filter(|s| {
                (namespace.is_empty() || s.namespace == namespace)
                    && s.consolidated_at.is_none()
                    && Some(s.id.as_str()) != exclude
            })
            .cloned()
            .collect())
    }
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<Vec<ScoredId>> {
        Ok(self.search_fts(target, terms, f, limit, context_weight))
    }
    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        Ok(self.search_vectors(target, v, f, limit))
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        Ok(self.search_entities(target, names, f, limit))
    }
    fn put_vector(&self, target: Target, id: &str, vector: &[f32]) -> CoreResult<()> {
        self.vectors
            .borrow_mut()
            .insert((target, id.to_string()), vector.to_vec());
        Ok(())
    }
    fn delete_vector(&self, target: Target, id: &str) -> CoreResult<()> {
        self.vectors.borrow_mut().remove(&(target, id.to_string()));
        Ok(())
    }
    fn get_vectors(&self, target: Target, ids: &[String]) -> CoreResult<Vec<(String, Vec<f32>)>> {
        let v = self.vectors.borrow();
        Ok(ids
            .iter()
            .filter_map(|id| {
                v.get(&(target, id.clone()))
                    .map(|x| (id.clone(), x.clone()))
            })
            .collect())
    }
    fn vectors_enabled(&self) -> CoreResult<bool> {
        Ok(!self.vectors_disabled.get())
    }
    fn find_entity(
        &self,
        namespace: &str,
        name: &str,
        t: EntityType,
    ) -> CoreResult<Option<Entity>> {
        let all = self.entities.borrow();
        let lower = name.to_lowercase();
        let in_ns = || {
            all.values()
                .filter(|e| e.namespace == namespace && e.entity_type == t)
        };
        Ok(in_ns()
            .find(|e| e.canonical_name.to_lowercase() == lower)
            .or_else(|| in_ns().find(|e| e.aliases.iter().any(|a| a.to_lowercase() == lower)))
            .cloned())
    }
    fn put_entity(&self, e: &Entity) -> CoreResult<()> {
        self.entities.borrow_mut().insert(e.id.clone(), e.clone());
        Ok(())
    }
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> CoreResult<()> {
        let link = (target, item_id.to_string(), entity_id.to_string());
        let mut links = self.links.borrow_mut();
        if !links.contains(&link) {
            links.push(link);
        }
        Ok(())
    }
    fn find_entities(&self, namespaces: &[String], name: &str) -> CoreResult<Vec<Entity>> {
        let lower = name.to_lowercase();
        Ok(self
            .entities
            .borrow()
            .values()
            .filter(|e| namespaces.contains(&e.namespace))
            .filter(|e| {
                e.canonical_name.to_lowercase() == lower
                    || e.aliases.iter().any(|a| a.to_lowercase() == lower)
            })
            .cloned()
            .collect())
    }
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> CoreResult<Vec<String>> {
        // Active items only, newest event first, ties by id (as SQLite does).
        let active = |id: &str| -> Option<Millis> {
            match target {
                Target::Memories => self
                    .memories
                    .borrow()
                    .get(id)
                    .filter(|m| m.is_active())
                    .map(|m| m.event_time),
                Target::Episodes => self
                    .episodes
                    .borrow()
                    .get(id)
                    .filter(|e| e.valid_until.is_none())
                    .map(|e| e.event_time),
            }
        };
        let mut items: Vec<(Millis, String)> = self
            .links
            .borrow()
            .iter()
            .filter(|(t, _, e)| *t == target && e == entity_id)
            .filter_map(|(_, item, _)| active(item).map(|at| (at, item.clone())))
            .collect();
        items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(items
            .into_iter()
            .map(|(_, id)| id)
            .take(limit as usize)
            .collect())
    }
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> CoreResult<Vec<EnrichmentCandidate>> {
        let links = self.links.borrow();
        let count = |id: &str| {
            links
                .iter()
                .filter(|(t, i, _)| *t == target && i == id)
                .count() as u32
        };
        let rows: Vec<(String, String, String, String)> = match target {
            Target::Memories => self
                .memories
                .borrow()
                .values()
                .filter(|m| m.is_active())
                .map(|m| {
                    (
                        m.id.clone(),
                        m.namespace.clone(),
                        m.content.clone(),
                        m.attributes.clone(),
                    )
                })
                .collect(),
            Target::Episodes => self
                .episodes
                .borrow()
                .values()
                .map(|e| {
                    (
                        e.id.clone(),
                        e.namespace.clone(),
                        e.content.clone(),
                        e.attributes.clone(),
                    )
                })
                .collect(),
        };
        Ok(rows
            .into_iter()
            .filter(|(id, _, _, attrs)| !attrs.contains("enriched_at") && count(id) <= max_entities)
            .map(|(id, namespace, content, _)| EnrichmentCandidate {
                id,
                namespace,
                content,
            })
            .take(limit as usize)
            .collect())
    }
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> CoreResult<()> {
        let stamp = |attrs: &mut String| *attrs = format!("{{\"enriched_at\":{at}}}");
        match target {
            Target::Memories => self
                .memories
                .borrow_mut()
                .get_mut(id)
                .map(|m| stamp(&mut m.attributes)),
            Target::Episodes => self
                .episodes
                .borrow_mut()
                .get_mut(id)
                .map(|e| stamp(&mut e.attributes)),
        };
        Ok(())
    }
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> CoreResult<Vec<Episode>> {
        let mut out: Vec<Episode> = self
            .episodes
            .borrow()
            .values()
            .filter(|e| {
                e.namespace == namespace && e.session_id == session_id && e.valid_until.is_none()
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            (a.event_time, a.created_at, &a.id).cmp(&(b.event_time, b.created_at, &b.id))
        });
        Ok(out
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect())
    }
    fn put_fact(&self, f: &Fact) -> CoreResult<()> {
        let mut facts = self.facts.borrow_mut();
        match facts.iter_mut().find(|x| x.id == f.id) {
            Some(x) => *x = f.clone(),
            None => facts.push(f.clone()),
        }
        Ok(())
    }
    fn query_facts(&self, q: &FactQuery) -> CoreResult<Vec<Fact>> {
        let eq = |a: &str, b: &Option<String>| b.as_ref().is_none_or(|b| a.eq_ignore_ascii_case(b));
        let mut out: Vec<Fact> = self
            .facts
            .borrow()
            .iter()
            .filter(|f| q.namespaces.is_empty() || q.namespaces.contains(&f.namespace))
            .filter(|f| q.id.as_ref().is_none_or(|id| &f.id == id))
            .filter(|f| eq(&f.subject, &q.subject) && eq(&f.predicate, &q.predicate))
            .filter(|f| eq(&f.object, &q.object))
            .filter(|f| {
                q.entity.as_ref().is_none_or(|e| {
                    f.subject.eq_ignore_ascii_case(e) || f.object.eq_ignore_ascii_case(e)
                })
            })
            .filter(|f| q.include_invalid || (f.valid_until.is_none() && f.superseded_by.is_none()))
            .cloned()
            .collect();
        out.sort_by(|a, b| (b.valid_from, &b.id).cmp(&(a.valid_from, &a.id)));
        out.truncate(q.limit as usize);
        Ok(out)
    }
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> CoreResult<Vec<(String, u64)>> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for m in self.memories.borrow().values() {
            if !m.is_active() || (!namespaces.is_empty() && !namespaces.contains(&m.namespace)) {
                continue;
            }
            for t in m.tags.iter().filter(|t| t.starts_with(prefix)) {
                *counts.entry(t.clone()).or_default() += u64::from(m.access_count);
            }
        }
        let mut out: Vec<(String, u64)> = counts.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }
    fn active_namespaces(&self) -> CoreResult<Vec<String>> {
        let all: std::collections::BTreeSet<String> = self
            .memories
            .borrow()
            .values()
            .filter(|m| m.is_active())
            .map(|m| m.namespace.clone())
            .collect();
        Ok(all.into_iter().collect())
    }
    fn stats(&self, namespaces: &[String]) -> CoreResult<StoreStats> {
        let mine = |ns: &String| namespaces.is_empty() || namespaces.contains(ns);
        let mut s = StoreStats::default();
        for m in self
            .memories
            .borrow()
            .values()
            .filter(|m| mine(&m.namespace))
        {
            if !m.is_active() {
                s.deleted += 1;
                continue;
            }
            s.active += 1;
            s.newest = s.newest.max(Some(m.created_at));
            match m.layer {
                Layer::Buffer => s.buffer += 1,
                Layer::Working => s.working += 1,
                Layer::Core => s.core += 1,
            }
            match m.kind {
                Kind::Episodic => s.episodic += 1,
                Kind::Semantic => s.semantic += 1,
                Kind::Procedural => s.procedural += 1,
            }
        }
        let episodes = self.episodes.borrow();
        s.episodes = episodes
            .values()
            .filter(|e| mine(&e.namespace) && e.valid_until.is_none())
            .count() as u64;
        s.sessions = self
            .sessions
            .borrow()
            .values()
            .filter(|x| mine(&x.namespace))
            .count() as u64;
        s.entities = self
            .entities
            .borrow()
            .values()
            .filter(|e| mine(&e.namespace))
            .count() as u64;
        s.facts = self
            .facts
            .borrow()
            .iter()
            .filter(|f| mine(&f.namespace) && f.valid_until.is_none() && f.superseded_by.is_none())
            .count() as u64;
        let memories = self.memories.borrow();
        for ((target, id), _) in self.vectors.borrow().iter() {
            match target {
                Target::Memories if memories.get(id).is_some_and(|m| mine(&m.namespace)) => {
                    s.memory_vectors += 1
                }
                Target::Episodes if episodes.get(id).is_some_and(|e| mine(&e.namespace)) => {
                    s.episode_vectors += 1
                }
                _ => {}
            }
        }
        Ok(s)
    }
    fn log_decision(&self, entry: &Decision) -> CoreResult<()> {
        self.audit.borrow_mut().push(entry.clone());
        Ok(())
    }
    fn put_version(&self, v: &MemoryVersion) -> CoreResult<()> {
        self.versions
            .borrow_mut()
            .entry((v.memory_id.clone(), v.seq))
            .or_insert_with(|| v.clone());
        Ok(())
    }
    fn memory_versions(&self, memory_id: &str) -> CoreResult<Vec<MemoryVersion>> {
        Ok(self
            .versions
            .borrow()
            .values()
            .filter(|v| v.memory_id == memory_id)
            .cloned()
            .collect())
    }
    fn get_meta(&self, key: &str) -> CoreResult<Option<String>> {
        Ok(self.meta.borrow().get(key).cloned())
    }
    fn set_meta(&self, key: &str, value: &str) -> CoreResult<()> {
        self.meta
            .borrow_mut()
            .insert(key.to_string(), value.to_string());
        Ok(())
    }
}
