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

    pub(crate) fn rebuild_topics_in(&self, namespace: &str) -> CoreResult<u32> {
        let storage = self.ports().storage();
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
        let kept: Vec<Option<String>> = leaves
            .iter()
            .map(|l| {
                let mut members: Vec<String> = l.iter().map(|i| items[*i].id.clone()).collect();
                members.sort();
                previous.get(&members).cloned()
            })
            .collect();
        let names = self.name_topics(namespace, &texts, &kept);
        let mut topics: Vec<StoredTopic> = leaves
            .iter()
            .zip(names)
            .enumerate()
            .map(|(k, (leaf, name))| StoredTopic {
                id: format!("kb{}", k + 1),
                name,
                members: leaf.iter().map(|i| items[*i].id.clone()).collect(),
                parent: None,
                children: Vec::new(),
            })
            .collect();
        let dim = vecs.first().map_or(0, Vec::len);
        let centroids: Vec<Vec<f32>> = leaves
            .iter()
            .map(|l| centroid(l.iter().map(|i| vecs[*i].as_slice()), dim))
            .collect();
        let df = document_frequency(&texts);
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
        let json = serde_json::to_string(&topics)
            .map_err(|e| crate::CoreError::Storage(format!("cannot encode topics: {e}")))?;
        storage.set_meta(&meta_key(namespace), &json)?;
        Ok(topics.len() as u32)
    }

    /// A name per leaf: a kept name where the leaf did not change; for the
    /// dirty ones the LLM's where it answers, the heuristic's otherwise.
    fn name_topics(
        &self,
        namespace: &str,
        leaves: &[Vec<&str>],
        kept: &[Option<String>],
    ) -> Vec<String> {
        let df = document_frequency(leaves);
        let mut names: Vec<String> = leaves
            .iter()
            .zip(kept)
            .map(|(l, k)| {
                k.clone()
                    .unwrap_or_else(|| heuristic_name(l, &df, leaves.len()))
            })
            .collect();
        // A tree whose naming failed keeps heuristic names until its
        // backoff has passed (the trees are rebuilt after every burst of
        // writes: a failing model is not asked at each).
        if self.ports().llm().level() == LlmLevel::Off
            || !matches!(
                self.waits(namespace, LlmComponent::Naming, NAMING_ITEM),
                Ok(None)
            )
        {
            return names;
        }
        let dirty: Vec<usize> = (0..leaves.len()).filter(|k| kept[*k].is_none()).collect();
        let mut existing: Vec<String> = kept.iter().flatten().cloned().collect();
        for batch in dirty.chunks(TOPIC_NAMING_BATCH) {
            let clusters: Vec<(String, Vec<String>)> = batch
                .iter()
                .map(|&k| {
                    (
                        format!("kb{}", k + 1),
                        leaves[k]
                            .iter()
                            .take(NAMING_SAMPLES)
                            .map(|s| s.to_string())
                            .collect(),
                    )
                })
                .collect();
            let ids: Vec<String> = clusters.iter().map(|c| c.0.clone()).collect();
            let request = prompts::naming::request(&clusters, &existing);
            let answer = self.ask_llm(namespace, &request, |c| prompts::naming::parse(c, &ids));
            // A failed batch keeps the heuristic names: never an unnamed
            // tree. (Recording the outcome is best effort: the names stand.)
            let _ = match &answer {
                Ok(_) => self.item_done(namespace, LlmComponent::Naming, NAMING_ITEM),
                Err(e) => self.item_failed(namespace, LlmComponent::Naming, NAMING_ITEM, e),
            };
            if let Ok(named) = answer {
                for (id, name) in named {
                    if let Some(k) = id.strip_prefix("kb").and_then(|n| n.parse::<usize>().ok())
                        && let Some(slot) = k.checked_sub(1).and_then(|k| names.get_mut(k))
                    {
                        existing.push(name.clone());
                        *slot = name;
                    }
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
        for ns in crate::validate::readable_namespaces(namespace) {
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
