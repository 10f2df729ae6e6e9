//! The topic tree of a namespace (seed 004 §6, "Topiary"): memories with
//! vectors are assigned to the closest leaf (or start one), then split and
//! merge passes run until stable, small leaves are absorbed, and the leaf
//! count is held to a budget. Leaves are named by the LLM (`naming`) or,
//! with the LLM level `off` or when naming fails, by their most distinctive
//! words, so a tree is never left unnamed. Only dirty leaves are named
//! (seed 004 §6.3): a leaf whose members are exactly those of a leaf of the
//! previous tree keeps that leaf's name, so a rebuild that changed little
//! costs few LLM calls and names do not churn. The tree is an index cached in
//! metadata (`topics:<namespace>`); resume reads it and `topics` drills in.
//!
//! Above the leaves, one level of parents (`hierarchy.rs`: close leaves
//! share a parent, a parent of one leaf is pruned). Resume lists the
//! leaves; drill-down takes a leaf or a parent id.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts;
use crate::text;
use crate::thresholds::*;
use crate::validate;
use crate::vector::centroid;

mod cluster;
mod hierarchy;

pub use cluster::cluster;

/// Samples per topic shown to the naming LLM.
const NAMING_SAMPLES: usize = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTopic {
    pub id: String,
    pub name: String,
    /// A leaf's memories (a parent's are its leaves').
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// The parent topic of a leaf (seed 004 §6.3's hierarchy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The leaves of a parent topic; empty for a leaf.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
}

impl StoredTopic {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }
}

/// The waiting item a namespace's topic naming is recorded as.
const NAMING_ITEM: &str = "topic-names";

fn meta_key(namespace: &str) -> String {
    format!("topics:{namespace}")
}

/// A tree in its stored form.
fn encode(topics: &[StoredTopic]) -> CoreResult<String> {
    serde_json::to_string(topics)
        .map_err(|e| crate::CoreError::Storage(format!("cannot encode topics: {e}")))
}

/// When a namespace's cached tree was planned (`plan_topics` skips a
/// namespace whose memories did not change since).
fn topics_at_key(namespace: &str) -> String {
    format!("topics_at:{namespace}")
}

/// In how many leaves each content word occurs.
fn document_frequency(leaves: &[Vec<&str>]) -> BTreeMap<String, usize> {
    let mut df: BTreeMap<String, usize> = BTreeMap::new();
    for leaf in leaves {
        let words: std::collections::BTreeSet<String> =
            leaf.iter().flat_map(|t| text::content_words(t)).collect();
        for w in words {
            *df.entry(w).or_default() += 1;
        }
    }
    df
}

/// A name from the leaf's most distinctive content words: frequent in the
/// leaf, rare in the others.
pub fn heuristic_name(
    leaf: &[&str],
    document_frequency: &BTreeMap<String, usize>,
    leaves: usize,
) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in leaf {
        for w in text::content_words(t) {
            if w.chars().count() > 2 && !w.chars().all(|c| c.is_ascii_digit()) {
                *counts.entry(w).or_default() += 1;
            }
        }
    }
    let mut ranked: Vec<(f32, String)> = counts
        .into_iter()
        .map(|(w, n)| {
            let df = document_frequency.get(&w).copied().unwrap_or(1).max(1);
            let idf = ((leaves as f32 + 1.0) / df as f32).ln() + 1.0;
            (n as f32 * idf, w)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let words: Vec<String> = ranked.into_iter().take(3).map(|(_, w)| w).collect();
    if words.is_empty() {
        "misc".into()
    } else {
        words.join(" / ")
    }
}

impl<P: Ports> Engine<P> {
    /// Rebuilds the trees of one namespace or of every namespace with memories.
    pub fn rebuild_topics(&self, namespace: Option<&str>) -> CoreResult<u32> {
        self.begin_llm_work();
        let namespaces: Vec<String> = match namespace {
            Some(ns) => vec![validate::namespace(ns)?],
            None => self.ports().storage().active_namespaces()?,
        };
        let mut total = 0;
        for ns in namespaces {
            total += self.rebuild_topics_in(&ns)?;
        }
        Ok(total)
    }

    /// Rebuilds one namespace's tree now: its plan, applied.
    pub(crate) fn rebuild_topics_in(&self, namespace: &str) -> CoreResult<u32> {
        let plan = self.plan_topics_in(namespace)?;
        self.store_plan(plan)
    }

    /// A namespace's new tree, computed without writing, for a host's topic
    /// worker: `None` when its cached tree was planned after the last change
    /// of its memories (a seek in the `(namespace, layer, modified_at)`
    /// index per layer, not a walk).
    pub fn plan_topics(&self, namespace: &str) -> CoreResult<Option<TopicPlan>> {
        let namespace = validate::namespace(namespace)?;
        if let Some(at) = self.meta_number::<Millis>(&topics_at_key(&namespace))?
            && self
                .ports()
                .storage()
                .get_meta(&meta_key(&namespace))?
                .is_some()
            && !self.modified_since(&namespace, at)?
        {
            return Ok(None);
        }
        self.plan_topics_in(&namespace).map(Some)
    }

    /// Names a plan's unnamed leaves and stores its tree (the write half of
    /// a rebuild); returns its number of topics.
    pub fn apply_topics(&self, plan: TopicPlan) -> CoreResult<u32> {
        self.begin_llm_work();
        validate::namespace(&plan.namespace)?;
        self.store_plan(plan)
    }

    fn plan_topics_in(&self, namespace: &str) -> CoreResult<TopicPlan> {
        let storage = self.ports().storage();
        let at = self.now();
        let memories = storage.list_memories(&ListQuery {
            namespaces: vec![namespace.to_string()],
            limit: TOPIC_MAX_ENTRIES,
            ..Default::default()
        })?;
        let ids: Vec<String> = memories.iter().map(|m| m.id.clone()).collect();
        let mut vectors: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        for chunk in ids.chunks(500) {
            vectors.extend(storage.get_vectors(Target::Memories, chunk)?);
        }
        // Oldest first, so ids stay stable as memories are added.
        let entries: Vec<(&Memory, Vec<f32>)> = memories
            .iter()
            .rev()
            .filter_map(|m| vectors.remove(&m.id).map(|v| (m, v)))
            .collect();
        let (items, vecs): (Vec<&Memory>, Vec<Vec<f32>>) = entries.into_iter().unzip();
        let leaves = cluster(&vecs);
        let texts: Vec<Vec<&str>> = leaves
            .iter()
            .map(|l| l.iter().map(|i| items[*i].content.as_str()).collect())
            .collect();
        // Unchanged leaves (the same members as before) keep their names.
        let previous: BTreeMap<Vec<String>, String> = storage
            .get_meta(&meta_key(namespace))?
            .and_then(|json| serde_json::from_str::<Vec<StoredTopic>>(&json).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(StoredTopic::is_leaf)
            .map(|t| {
                let mut members = t.members;
                members.sort();
                (members, t.name)
            })
            .collect();
        let df = document_frequency(&texts);
        let mut unnamed = Vec::new();
        let mut topics: Vec<StoredTopic> = Vec::with_capacity(leaves.len());
        for (k, leaf) in leaves.iter().enumerate() {
            let id = format!("kb{}", k + 1);
            let members: Vec<String> = leaf.iter().map(|i| items[*i].id.clone()).collect();
            let mut sorted = members.clone();
            sorted.sort();
            let name = match previous.get(&sorted) {
                Some(kept) => kept.clone(),
                None => {
                    let samples = texts[k].iter().take(NAMING_SAMPLES);
                    unnamed.push((id.clone(), samples.map(|s| s.to_string()).collect()));
                    heuristic_name(&texts[k], &df, leaves.len())
                }
            };
            topics.push(StoredTopic {
                id,
                name,
                members,
                parent: None,
                children: Vec::new(),
            });
        }
        let dim = vecs.first().map_or(0, Vec::len);
        let centroids: Vec<Vec<f32>> = leaves
            .iter()
            .map(|l| centroid(l.iter().map(|i| vecs[*i].as_slice()), dim))
            .collect();
        for (n, group) in hierarchy::parents(&centroids).into_iter().enumerate() {
            let id = format!("kp{}", n + 1);
            let all: Vec<&str> = group
                .iter()
                .flat_map(|k| texts[*k].iter().copied())
                .collect();
            let mut parent = StoredTopic {
                id: id.clone(),
                name: heuristic_name(&all, &df, leaves.len()),
                members: Vec::new(),
                parent: None,
                children: Vec::new(),
            };
            for k in group {
                topics[k].parent = Some(id.clone());
                parent.children.push(topics[k].id.clone());
            }
            topics.push(parent);
        }
        let tree = encode(&topics)?;
        Ok(TopicPlan {
            namespace: namespace.to_string(),
            at,
            tree,
            unnamed,
        })
    }

    /// The LLM's names for the plan's unnamed leaves (where it answers),
    /// then the tree and the time it was planned, stored.
    fn store_plan(&self, plan: TopicPlan) -> CoreResult<u32> {
        let mut topics: Vec<StoredTopic> = serde_json::from_str(&plan.tree)
            .map_err(|e| crate::CoreError::invalid(format!("not a topic plan's tree: {e}")))?;
        let fresh: std::collections::BTreeSet<&str> =
            plan.unnamed.iter().map(|(id, _)| id.as_str()).collect();
        let existing: Vec<String> = topics
            .iter()
            .filter(|t| t.is_leaf() && !fresh.contains(t.id.as_str()))
            .map(|t| t.name.clone())
            .collect();
        for (id, name) in self.name_topics(&plan.namespace, &plan.unnamed, existing) {
            if let Some(t) = topics.iter_mut().find(|t| t.id == id && t.is_leaf()) {
                t.name = name;
            }
        }
        let json = encode(&topics)?;
        let storage = self.ports().storage();
        storage.set_meta(&meta_key(&plan.namespace), &json)?;
        storage.set_meta(&topics_at_key(&plan.namespace), &plan.at.to_string())?;
        Ok(topics.len() as u32)
    }

    /// The LLM's names for the leaves that did not keep one, by leaf id
    /// (none where it does not answer: those keep their words' names).
    fn name_topics(
        &self,
        namespace: &str,
        unnamed: &[(String, Vec<String>)],
        mut existing: Vec<String>,
    ) -> Vec<(String, String)> {
        let mut names = Vec::new();
        // A tree whose naming failed keeps heuristic names until its
        // backoff has passed (the trees are rebuilt after every burst of
        // writes: a failing model is not asked at each).
        if unnamed.is_empty()
            || self.ports().llm().level() == LlmLevel::Off
            || !matches!(
                self.waits(namespace, LlmComponent::Naming, NAMING_ITEM),
                Ok(None)
            )
        {
            return names;
        }
        for batch in unnamed.chunks(TOPIC_NAMING_BATCH) {
            let ids: Vec<String> = batch.iter().map(|c| c.0.clone()).collect();
            let request = prompts::naming::request(batch, &existing);
            let answer = self.ask_llm(namespace, &request, |c| prompts::naming::parse(c, &ids));
            // A failed batch keeps the heuristic names: never an unnamed
            // tree. (Recording the outcome is best effort: the names stand.)
            let _ = match &answer {
                Ok(_) => self.item_done(namespace, LlmComponent::Naming, NAMING_ITEM),
                Err(e) => self.item_failed(namespace, LlmComponent::Naming, NAMING_ITEM, e),
            };
            if let Ok(named) = answer {
                for (id, name) in named {
                    existing.push(name.clone());
                    names.push((id, name));
                }
            }
        }
        names
    }

    /// How many topics `namespace`'s cached tree holds (`None`: no tree yet).
    pub(crate) fn cached_topic_count(&self, namespace: &str) -> CoreResult<Option<u32>> {
        Ok(self
            .ports()
            .storage()
            .get_meta(&meta_key(namespace))?
            .and_then(|json| serde_json::from_str::<Vec<StoredTopic>>(&json).ok())
            .map(|t| t.len() as u32))
    }

    /// The cached trees of `namespace` (and `default` for a project).
    pub(crate) fn stored_topics(&self, namespace: &str) -> CoreResult<Vec<StoredTopic>> {
        let mut out = Vec::new();
        for ns in self.readable_namespaces(namespace)? {
            if let Some(json) = self.ports().storage().get_meta(&meta_key(&ns))? {
                let mut topics: Vec<StoredTopic> = serde_json::from_str(&json).unwrap_or_default();
                if ns != namespace {
                    let prefix = |id: &str| format!("{ns}/{id}");
                    for t in &mut topics {
                        t.id = prefix(&t.id);
                        t.parent = t.parent.as_deref().map(prefix);
                        t.children = t.children.iter().map(|c| prefix(c)).collect();
                    }
                }
                out.extend(topics);
            }
        }
        Ok(out)
    }

    /// Topics by id with their active memories; no ids lists every topic
    /// without memories.
    pub fn topics(&self, namespace: &str, ids: &[String]) -> CoreResult<Vec<Topic>> {
        let namespace = validate::namespace(namespace)?;
        let stored = self.stored_topics(&namespace)?;
        if ids.is_empty() {
            return Ok(stored
                .into_iter()
                .map(|t| Topic {
                    id: t.id,
                    name: t.name,
                    memories: Vec::new(),
                    parent: t.parent,
                    children: t.children,
                })
                .collect());
        }
        let mut out = Vec::new();
        for id in ids {
            let Some(t) = stored.iter().find(|t| &t.id == id) else {
                return Err(crate::CoreError::NotFound(format!("no topic {id}")));
            };
            // A parent holds its leaves' memories.
            let members: Vec<String> = match t.is_leaf() {
                true => t.members.clone(),
                false => stored
                    .iter()
                    .filter(|c| t.children.contains(&c.id))
                    .flat_map(|c| c.members.iter().cloned())
                    .collect(),
            };
            let memories = self.ports().storage().get_memories(&members)?;
            out.push(Topic {
                id: t.id.clone(),
                name: t.name.clone(),
                memories: memories.into_iter().filter(Memory::is_active).collect(),
                parent: t.parent.clone(),
                children: t.children.clone(),
            });
        }
        Ok(out)
    }
}
