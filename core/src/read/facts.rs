//! The fact graph: (subject, predicate, object) triples with validity and
//! supersession (seed 003 `resolve_conflict`, seed 004 §4.1 multi-hop).
//! A superseded fact keeps its row — history — with `valid_until` and
//! `superseded_by` set.

use std::collections::{BTreeSet, VecDeque};

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;
use crate::validate;

/// Longest subject, predicate or object.
pub const MAX_FACT_FIELD_CHARS: usize = 512;
/// Facts read per query or graph step.
pub const FACT_QUERY_LIMIT: u32 = 500;

pub(crate) fn field(name: &str, value: &str) -> CoreResult<String> {
    let v = value.trim();
    if v.is_empty() {
        return Err(CoreError::invalid(format!("{name} must not be empty")));
    }
    if v.chars().count() > MAX_FACT_FIELD_CHARS {
        return Err(CoreError::invalid(format!(
            "{name} is longer than {MAX_FACT_FIELD_CHARS} characters"
        )));
    }
    Ok(v.to_string())
}

impl<P: Ports> Engine<P> {
    /// Facts by subject, predicate, object or entity; `include_invalid`
    /// gives the history. A project namespace also reads `default`.
    pub fn query_facts(&self, mut q: FactQuery) -> CoreResult<Vec<Fact>> {
        q.namespaces = match q.namespaces.as_slice() {
            [] => self.readable_namespaces(DEFAULT_NAMESPACE_FOR_FACTS)?,
            [one] => self.readable_namespaces(&validate::namespace(one)?)?,
            _ => q.namespaces,
        };
        q.limit = match q.limit {
            0 => FACT_QUERY_LIMIT,
            n => n.min(FACT_QUERY_LIMIT),
        };
        self.ports().storage().query_facts(&q)
    }

    /// Valid facts reachable from `entity` in at most `hops` steps, each step
    /// following a fact from its subject to its object or back.
    pub fn fact_graph(&self, namespace: &str, entity: &str, hops: u32) -> CoreResult<Vec<Fact>> {
        let namespace = validate::namespace(namespace)?;
        let start = field("entity", entity)?;
        let hops = hops.clamp(1, FACT_GRAPH_MAX_HOPS);
        let namespaces = self.readable_namespaces(&namespace)?;
        let storage = self.ports().storage();
        let mut seen_entities: BTreeSet<String> = BTreeSet::from([start.to_lowercase()]);
        let mut seen_facts: BTreeSet<String> = BTreeSet::new();
        let mut out = Vec::new();
        let mut frontier: VecDeque<(String, u32)> = VecDeque::from([(start, 0)]);
        while let Some((name, depth)) = frontier.pop_front() {
            if depth >= hops {
                continue;
            }
            let facts = storage.query_facts(&FactQuery {
                namespaces: namespaces.clone(),
                entity: Some(name.clone()),
                limit: FACT_QUERY_LIMIT,
                ..Default::default()
            })?;
            for f in facts {
                if !seen_facts.insert(f.id.clone()) {
                    continue;
                }
                for next in [&f.subject, &f.object] {
                    if seen_entities.insert(next.to_lowercase()) {
                        frontier.push_back((next.clone(), depth + 1));
                    }
                }
                out.push(f);
            }
        }
        Ok(out)
    }

    /// The recall fact channel (seed 004 §4.1): memories linked to valid
    /// facts about `names`, walking up to `FACT_GRAPH_MAX_HOPS`; each with the
    /// hop it was found at (0 = a fact about a named entity).
    pub(crate) fn fact_memories(
        &self,
        namespaces: &[String],
        names: &[String],
        limit: u32,
    ) -> CoreResult<Vec<(String, u32)>> {
        let storage = self.ports().storage();
        let mut seen_entities: BTreeSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
        let mut seen_memories: BTreeSet<String> = BTreeSet::new();
        let mut frontier: Vec<String> = seen_entities.iter().cloned().collect();
        let mut out = Vec::new();
        for hop in 0..FACT_GRAPH_MAX_HOPS {
            let mut next = Vec::new();
            for name in &frontier {
                let facts = storage.query_facts(&FactQuery {
                    namespaces: namespaces.to_vec(),
                    entity: Some(name.clone()),
                    limit,
                    ..Default::default()
                })?;
                for f in facts {
                    if let Some(id) = &f.memory_id
                        && seen_memories.insert(id.clone())
                    {
                        out.push((id.clone(), hop));
                    }
                    for e in [&f.subject, &f.object] {
                        if seen_entities.insert(e.to_lowercase()) {
                            next.push(e.clone());
                        }
                    }
                }
            }
            if out.len() >= limit as usize || next.is_empty() {
                break;
            }
            frontier = next;
        }
        out.truncate(limit as usize);
        Ok(out)
    }

    /// Pairs of valid facts with the same subject and predicate and different
    /// objects: candidates for an explicit supersession.
    pub fn fact_conflicts(&self, namespace: &str) -> CoreResult<Vec<(Fact, Fact)>> {
        let namespace = validate::namespace(namespace)?;
        let facts = self.ports().storage().query_facts(&FactQuery {
            namespaces: self.readable_namespaces(&namespace)?,
            limit: u32::MAX,
            ..Default::default()
        })?;
        Ok(conflicts(&facts))
    }
}

/// `query_facts` with no namespace reads `default`.
const DEFAULT_NAMESPACE_FOR_FACTS: &str = validate::DEFAULT_NAMESPACE;

/// Same subject and predicate (case-insensitive), different objects.
pub fn conflicts(facts: &[Fact]) -> Vec<(Fact, Fact)> {
    // Subjects and predicates compare by their words: case, spacing and
    // punctuation do not hide a conflict ("Caroline" / "caroline ",
    // "lives in" / "lives-in").
    let words = |s: &str| {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let key = |f: &Fact| (words(&f.subject), words(&f.predicate));
    let mut sorted: Vec<&Fact> = facts.iter().collect();
    sorted.sort_by_key(|f| key(f));
    let mut out = Vec::new();
    for group in sorted.chunk_by(|a, b| key(a) == key(b)) {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                if words(&a.object) != words(&b.object) {
                    out.push(((*a).clone(), (*b).clone()));
                }
            }
        }
    }
    out
}
