//! `mnemo export` / `mnemo import`: JSON lines, lossless. The first line is a
//! header naming the embedding model; then sessions, memories (the trash
//! too), episodes, entities with their links, facts (superseded ones
//! too) and the memories' earlier versions, vectors optional. Import
//! runs every item through the core (which keeps ids, times and counts and
//! deduplicates) in one transaction: a bad line writes nothing. Once it
//! commits, the full-text partitions of the large namespaces it wrote are
//! queued for building (`Store::text_warm`), so the searches after a bulk
//! import do not wait on them.

use mnemo_core::ports::Storage as _;
use rmcp::schemars::{self, JsonSchema};
use std::collections::HashMap;
use std::io::{BufRead, Write};

use anyhow::{Context, bail};
use mnemo_core::model::*;

use serde::{Deserialize, Serialize};

use crate::Mnemo;
use crate::storage::Locks;
use crate::storage::VectorState;

pub const FORMAT: &str = "mnemo-export";
pub const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub kind: String,
    pub version: u32,
    pub embedding_model: Option<String>,
    pub dimension: Option<u32>,
}

#[derive(Debug, Default, Clone, Serialize, JsonSchema)]
pub struct Counts {
    /// Sessions.
    pub sessions: usize,
    /// Memories (the trash included).
    pub memories: usize,
    /// Turns.
    pub episodes: usize,
    /// Entities.
    pub entities: usize,
    /// Facts, valid and superseded.
    pub facts: usize,
    /// Earlier states of memories.
    pub versions: usize,
    /// Embedding vectors.
    pub vectors: usize,
    /// Import only: outcomes.
    pub created: usize,
    /// Import only: items already there (same id), left as they were.
    pub existing: usize,
    /// Import only: duplicates folded into an existing memory.
    pub merged: usize,
}

fn line(out: &mut impl Write, v: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    out.write_all(b"\n")?;
    Ok(())
}

pub fn export(
    m: &Mnemo,
    out: &mut impl Write,
    namespace: Option<&str>,
    vectors: bool,
) -> anyhow::Result<Counts> {
    let store = &m.ports().store;
    let (model, dimension) = match store.vector_state() {
        VectorState::Enabled { model, dimension } => (Some(model), Some(dimension)),
        VectorState::Disabled { .. } => (None, None),
    };
    let vectors = vectors && model.is_some();
    line(
        out,
        &Header {
            kind: FORMAT.into(),
            version: VERSION,
            embedding_model: model,
            dimension,
        },
    )?;
    let mut c = Counts::default();
    let vector_of = |target: Target, id: &str| -> anyhow::Result<Option<Vec<f32>>> {
        if !vectors {
            return Ok(None);
        }
        Ok(store
            .get_vectors(target, &[id.to_string()])?
            .pop()
            .map(|(_, v)| v))
    };
    for session in store.all_sessions(namespace)? {
        line(out, &ImportItem::Session(SessionLine { session }))?;
        c.sessions += 1;
    }
    for memory in store.all_memories(namespace)? {
        let vector = vector_of(Target::Memories, &memory.id)?;
        c.vectors += usize::from(vector.is_some());
        line(out, &ImportItem::Memory(MemoryLine { memory, vector }))?;
        c.memories += 1;
    }
    for episode in store.all_episodes(namespace)? {
        let vector = vector_of(Target::Episodes, &episode.id)?;
        c.vectors += usize::from(vector.is_some());
        line(out, &ImportItem::Episode(EpisodeLine { episode, vector }))?;
        c.episodes += 1;
    }
    for (entity, memories, episodes) in store.all_entities(namespace)? {
        line(
            out,
            &ImportItem::Entity(EntityLine {
                entity,
                memories,
                episodes,
            }),
        )?;
        c.entities += 1;
    }
    for fact in store.all_facts(namespace)? {
        line(out, &ImportItem::Fact(FactLine { fact }))?;
        c.facts += 1;
    }
    for version in store.all_versions(namespace)? {
        line(out, &ImportItem::Version(VersionLine { version }))?;
        c.versions += 1;
    }
    out.flush()?;
    Ok(c)
}

/// Imports JSON lines; `progress` gets the lines done and the lines in all.
pub fn import(
    m: &mut Mnemo,
    input: impl BufRead,
    mut progress: impl FnMut(usize, usize),
) -> anyhow::Result<Counts> {
    let locked = match m.vector_state() {
        VectorState::Enabled { model, .. } => Some(model),
        VectorState::Disabled { .. } => None,
    };
    let mut keep_vectors = false;
    let mut counts = Counts::default();
    let mut outcomes: HashMap<ImportOutcome, usize> = HashMap::new();
    // The namespaces written, whose full-text partitions are built once
    // the import commits (`Store::text_warm`).
    let mut written: std::collections::BTreeSet<(Target, String)> = Default::default();
    let lines: Vec<String> = input
        .lines()
        .collect::<Result<_, _>>()
        .context("reading the import")?;
    m.atomically(Locks::All, |m| -> anyhow::Result<()> {
        for (i, text) in lines.iter().enumerate() {
            let n = i + 1;
            if text.trim().is_empty() {
                continue;
            }
            if i == 0
                && let Ok(h) = serde_json::from_str::<Header>(text)
            {
                if h.kind != FORMAT || h.version > VERSION {
                    bail!("line 1: not a {FORMAT} version ≤ {VERSION} file");
                }
                // Vectors from another model would poison search: re-embed those instead.
                keep_vectors = h.embedding_model.is_some() && h.embedding_model == locked;
                continue;
            }
            let mut item: ImportItem = serde_json::from_str(text)
                .with_context(|| format!("line {n}: not an export item"))?;
            match &mut item {
                ImportItem::Memory(MemoryLine { vector, .. })
                | ImportItem::Episode(EpisodeLine { vector, .. })
                    if !keep_vectors =>
                {
                    *vector = None
                }
                _ => {}
            }
            match &item {
                ImportItem::Memory(MemoryLine { memory, vector }) => {
                    counts.vectors += usize::from(vector.is_some());
                    written.insert((Target::Memories, memory.namespace.clone()));
                }
                ImportItem::Episode(EpisodeLine { episode, vector }) => {
                    counts.vectors += usize::from(vector.is_some());
                    written.insert((Target::Episodes, episode.namespace.clone()));
                }
                _ => {}
            }
            match &item {
                ImportItem::Session { .. } => counts.sessions += 1,
                ImportItem::Memory { .. } => counts.memories += 1,
                ImportItem::Episode { .. } => counts.episodes += 1,
                ImportItem::Entity { .. } => counts.entities += 1,
                ImportItem::Fact { .. } => counts.facts += 1,
                ImportItem::Version { .. } => counts.versions += 1,
            }
            let outcome = m.import(item).with_context(|| format!("line {n}"))?;
            *outcomes.entry(outcome).or_default() += 1;
            progress(n, lines.len());
        }
        Ok(())
    })?;
    for (target, ns) in &written {
        m.ports().store.text_warm(*target, ns);
    }
    counts.created = outcomes.get(&ImportOutcome::Created).copied().unwrap_or(0);
    counts.existing = outcomes.get(&ImportOutcome::Exists).copied().unwrap_or(0);
    counts.merged = outcomes.get(&ImportOutcome::Merged).copied().unwrap_or(0);
    Ok(counts)
}
