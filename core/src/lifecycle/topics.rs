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
//! Only the flat leaf level is kept: resume lists leaves, and drill-down
//! is by leaf id.

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
use crate::vector::{centroid, cosine};

/// Samples per topic shown to the naming LLM.
const NAMING_SAMPLES: usize = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTopic {
    pub id: String,
    pub name: String,
    pub members: Vec<String>,
}

fn meta_key(namespace: &str) -> String {
    format!("topics:{namespace}")
}

/// A leaf under construction: indexes into the entries, and its centroid.
#[derive(Debug, Clone)]
struct Leaf {
    members: Vec<usize>,
    centroid: Vec<f32>,
}

impl Leaf {
    fn of(members: Vec<usize>, vectors: &[Vec<f32>]) -> Self {
        let dim = vectors.first().map_or(0, Vec::len);
        let centroid = centroid(members.iter().map(|i| vectors[*i].as_slice()), dim);
        Self { members, centroid }
    }

    /// Mean similarity of the members to the centroid.
    fn cohesion(&self, vectors: &[Vec<f32>]) -> f32 {
        if self.members.is_empty() {
            return 1.0;
        }
        self.members
            .iter()
            .map(|i| cosine(&vectors[*i], &self.centroid))
            .sum::<f32>()
            / self.members.len() as f32
    }
}

/// Clusters `vectors` into leaves of member indexes, largest first.
pub fn cluster(vectors: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let mut leaves: Vec<Leaf> = Vec::new();
    for i in 0..vectors.len() {
        let best = leaves
            .iter()
            .enumerate()
            .map(|(l, leaf)| (l, cosine(&vectors[i], &leaf.centroid)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((l, sim)) if sim > TOPIC_ASSIGN_THRESHOLD => {
                let mut members = std::mem::take(&mut leaves[l].members);
                members.push(i);
                leaves[l] = Leaf::of(members, vectors);
            }
            _ => leaves.push(Leaf::of(vec![i], vectors)),
        }
    }
    for _ in 0..TOPIC_MAX_CYCLES {
        let split = split_pass(&mut leaves, vectors);
        let merged = merge_pass(&mut leaves, vectors);
        if !split && !merged {
            break;
        }
    }
    absorb_small(&mut leaves, vectors);
    while leaves.len() > TOPIC_LEAF_BUDGET {
        merge_closest(&mut leaves, vectors);
    }
    let mut out: Vec<Vec<usize>> = leaves.into_iter().map(|l| l.members).collect();
    for m in &mut out {
        m.sort_unstable();
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out
}

/// Two-means split of oversized or loose leaves; seeds are the member
/// farthest from the centroid and the member farthest from that one.
fn split_pass(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) -> bool {
    let mut changed = false;
    let mut out = Vec::with_capacity(leaves.len());
    for leaf in leaves.drain(..) {
        let loose = leaf.members.len() > TOPIC_SMALL_LEAF
            && leaf.cohesion(vectors) < TOPIC_MIN_INTERNAL_SIM;
        if leaf.members.len() <= TOPIC_MAX_LEAF_SIZE && !loose {
            out.push(leaf);
            continue;
        }
        let farthest_from = |c: &[f32]| {
            leaf.members
                .iter()
                .copied()
                .min_by(|a, b| cosine(&vectors[*a], c).total_cmp(&cosine(&vectors[*b], c)))
        };
        let (Some(a), Some(b)) = (
            farthest_from(&leaf.centroid),
            farthest_from(&leaf.centroid).and_then(|a| farthest_from(&vectors[a])),
        ) else {
            out.push(leaf);
            continue;
        };
        let (mut ca, mut cb) = (vectors[a].clone(), vectors[b].clone());
        let mut groups: (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for _ in 0..TOPIC_MAX_CYCLES {
            groups = leaf
                .members
                .iter()
                .partition(|i| cosine(&vectors[**i], &ca) >= cosine(&vectors[**i], &cb));
            if groups.0.is_empty() || groups.1.is_empty() {
                break;
            }
            let dim = ca.len();
            ca = centroid(groups.0.iter().map(|i| vectors[*i].as_slice()), dim);
            cb = centroid(groups.1.iter().map(|i| vectors[*i].as_slice()), dim);
        }
        if groups.0.is_empty() || groups.1.is_empty() {
            out.push(leaf);
            continue;
        }
        changed = true;
        out.push(Leaf::of(groups.0, vectors));
        out.push(Leaf::of(groups.1, vectors));
    }
    *leaves = out;
    changed
}

/// Merges leaves whose centroids are close, when the result stays small
/// enough not to be split again.
fn merge_pass(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i < leaves.len() {
        let mut j = i + 1;
        while j < leaves.len() {
            let fits = leaves[i].members.len() + leaves[j].members.len() <= TOPIC_MAX_LEAF_SIZE;
            if fits && cosine(&leaves[i].centroid, &leaves[j].centroid) > TOPIC_MERGE_THRESHOLD {
                let other = leaves.remove(j);
                let mut members = std::mem::take(&mut leaves[i].members);
                members.extend(other.members);
                leaves[i] = Leaf::of(members, vectors);
                changed = true;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    changed
}

/// Leaves of one or two members join their nearest leaf when it is close.
fn absorb_small(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) {
    let mut i = 0;
    while i < leaves.len() {
        if leaves[i].members.len() > TOPIC_SMALL_LEAF {
            i += 1;
            continue;
        }
        let nearest = (0..leaves.len())
            .filter(|j| *j != i)
            .map(|j| (j, cosine(&leaves[i].centroid, &leaves[j].centroid)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match nearest {
            Some((j, sim)) if sim > TOPIC_ABSORB_THRESHOLD => {
                let small = leaves.remove(i);
                let j = if j > i { j - 1 } else { j };
                let mut members = std::mem::take(&mut leaves[j].members);
                members.extend(small.members);
                leaves[j] = Leaf::of(members, vectors);
            }
            _ => i += 1,
        }
    }
}

fn merge_closest(leaves: &mut Vec<Leaf>, vectors: &[Vec<f32>]) {
    let mut best = (0, 1, f32::MIN);
    for i in 0..leaves.len() {
        for j in i + 1..leaves.len() {
            let sim = cosine(&leaves[i].centroid, &leaves[j].centroid);
            if sim > best.2 {
                best = (i, j, sim);
            }
        }
    }
    if best.1 < leaves.len() {
        let other = leaves.remove(best.1);
        let mut members = std::mem::take(&mut leaves[best.0].members);
        members.extend(other.members);
        leaves[best.0] = Leaf::of(members, vectors);
    }
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
        let namespaces: Vec<String> = match namespace {
            Some(ns) => vec![validate::namespace(ns)?],
            None => {
                let mut seen = std::collections::BTreeSet::new();
                let mut offset = 0;
                loop {
                    let page = self.ports().storage().list_memories(&ListQuery {
                        limit: 1000,
                        offset,
                        ..Default::default()
                    })?;
                    offset += page.len() as u32;
                    seen.extend(page.iter().map(|m| m.namespace.clone()));
                    if page.len() < 1000 {
                        break;
                    }
                }
                seen.into_iter().collect()
            }
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
        let names = self.name_topics(&texts, &kept);
        let topics: Vec<StoredTopic> = leaves
            .iter()
            .zip(names)
            .enumerate()
            .map(|(k, (leaf, name))| StoredTopic {
                id: format!("kb{}", k + 1),
                name,
                members: leaf.iter().map(|i| items[*i].id.clone()).collect(),
            })
            .collect();
        let json = serde_json::to_string(&topics)
            .map_err(|e| crate::CoreError::Storage(format!("cannot encode topics: {e}")))?;
        storage.set_meta(&meta_key(namespace), &json)?;
        Ok(topics.len() as u32)
    }

    /// A name per leaf: a kept name where the leaf did not change; for the
    /// dirty ones the LLM's where it answers, the heuristic's otherwise.
    fn name_topics(&self, leaves: &[Vec<&str>], kept: &[Option<String>]) -> Vec<String> {
        let mut df: BTreeMap<String, usize> = BTreeMap::new();
        for leaf in leaves {
            let words: std::collections::BTreeSet<String> =
                leaf.iter().flat_map(|t| text::content_words(t)).collect();
            for w in words {
                *df.entry(w).or_default() += 1;
            }
        }
        let mut names: Vec<String> = leaves
            .iter()
            .zip(kept)
            .map(|(l, k)| {
                k.clone()
                    .unwrap_or_else(|| heuristic_name(l, &df, leaves.len()))
            })
            .collect();
        if self.ports().llm().level() == LlmLevel::Off {
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
            let answer = self
                .ports()
                .llm()
                .complete(&prompts::naming::request(&clusters, &existing))
                .and_then(|a| prompts::naming::parse(&a.content, &ids));
            // A failed batch keeps the heuristic names: never an unnamed tree.
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

    /// The cached trees of `namespace` (and `default` for a project).
    pub(crate) fn stored_topics(&self, namespace: &str) -> CoreResult<Vec<StoredTopic>> {
        let mut out = Vec::new();
        for ns in crate::validate::readable_namespaces(namespace) {
            if let Some(json) = self.ports().storage().get_meta(&meta_key(&ns))? {
                let mut topics: Vec<StoredTopic> = serde_json::from_str(&json).unwrap_or_default();
                if ns != namespace {
                    for t in &mut topics {
                        t.id = format!("{ns}/{}", t.id);
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
                })
                .collect());
        }
        let mut out = Vec::new();
        for id in ids {
            let Some(t) = stored.iter().find(|t| &t.id == id) else {
                return Err(crate::CoreError::NotFound(format!("no topic {id}")));
            };
            let memories = self.ports().storage().get_memories(&t.members)?;
            out.push(Topic {
                id: t.id.clone(),
                name: t.name.clone(),
                memories: memories.into_iter().filter(Memory::is_active).collect(),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let mut v = v.to_vec();
        crate::vector::normalize(&mut v);
        v
    }

    #[test]
    fn separate_directions_make_separate_leaves() {
        let mut vectors = Vec::new();
        for k in 0..6 {
            let e = k as f32 * 0.01;
            vectors.push(unit(&[1.0, e, 0.0]));
            vectors.push(unit(&[0.0, 1.0, e]));
            vectors.push(unit(&[e, 0.0, 1.0]));
        }
        let leaves = cluster(&vectors);
        assert_eq!(leaves.len(), 3, "{leaves:?}");
        for leaf in &leaves {
            assert_eq!(leaf.len(), 6);
            let axis = leaf[0] % 3;
            assert!(leaf.iter().all(|i| i % 3 == axis));
        }
    }

    #[test]
    fn oversized_leaves_split_and_the_budget_holds() {
        // Twenty near-identical vectors: one leaf would exceed the size cap.
        let vectors: Vec<Vec<f32>> = (0..20)
            .map(|k| unit(&[1.0, (k as f32) * 0.05, 0.0]))
            .collect();
        let leaves = cluster(&vectors);
        assert!(
            leaves
                .iter()
                .all(|l| l.len() <= TOPIC_MAX_LEAF_SIZE + TOPIC_SMALL_LEAF * 2)
        );
        assert_eq!(leaves.iter().map(Vec::len).sum::<usize>(), 20);
        assert!(leaves.len() <= TOPIC_LEAF_BUDGET);
    }

    #[test]
    fn heuristic_names_prefer_distinctive_words() {
        let mut df = BTreeMap::new();
        df.insert("hiking".to_string(), 1);
        df.insert("alps".to_string(), 1);
        df.insert("likes".to_string(), 3);
        let name = heuristic_name(&["likes hiking in the alps", "hiking again"], &df, 3);
        assert!(name.starts_with("hiking"), "{name}");
    }
}
