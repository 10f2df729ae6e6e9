//! `mnemo migrate --from A --to B`: copies a whole store between backends
//! (a SQLite file and a Postgres database, either way) losslessly — every
//! memory (the trash too) with its vector, every turn, session, entity and
//! link, fact (superseded ones too), kept version, decision log line, LLM
//! usage line and metadata entry (topic trees, epochs) — then verifies the
//! counts. The destination must be empty; it is written in transactions of
//! [`BATCH`] rows, and a failure rolls back the batch in progress and
//! stops (rerun into an emptied destination).
//!
//! Rows go through the backends' own writes (`Storage`), so each builds its
//! own indexes: FTS5 or tsvector entries, the vector index, the turn
//! context. Whole tables are read into memory, one at a time (a 1M-memory
//! store needs about a gigabyte).

use std::path::Path;

use anyhow::{Context, bail, ensure};
use mnemo_core::model::*;
use mnemo_core::ports::Storage;
use serde::Serialize;

use crate::storage::{DecisionFilter, Store};
use crate::storage::{META_DIMENSION, META_MODEL};

/// Rows written per transaction.
pub const BATCH: usize = 1000;

/// Metadata the destination keeps for itself: the embedding lock (set by
/// locking the source's embedder) and counters its own triggers keep.
const OWN_META: [&str; 4] = [
    META_DIMENSION,
    META_MODEL,
    "memories_changed",
    "vector_pending_unchecked",
];

/// What was copied, by kind; `mnemo migrate` prints it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Copied {
    pub memories: u64,
    pub memory_vectors: u64,
    pub episodes: u64,
    pub episode_vectors: u64,
    pub sessions: u64,
    pub entities: u64,
    pub links: u64,
    pub facts: u64,
    pub versions: u64,
    pub decisions: u64,
    pub usage: u64,
    pub metadata: u64,
}

/// Copies everything in `from` into the empty store `to`; `step(what,
/// done, total)` reports progress.
pub fn migrate(
    from: &Path,
    to: &Path,
    mut step: impl FnMut(&'static str, u64, u64),
) -> anyhow::Result<Copied> {
    ensure!(from != to, "--from and --to name the same database");
    let src = Store::open(from).with_context(|| format!("opening {}", describe(from)))?;
    let dst = Store::open(to).with_context(|| format!("opening {}", describe(to)))?;
    let before = dst.stats(&[]).map_err(core)?;
    if before.active + before.deleted + before.episodes + before.sessions + before.facts > 0 {
        bail!(
            "{} is not empty ({} memories, {} turns): migrate copies into an empty store",
            describe(to),
            before.active + before.deleted,
            before.episodes
        );
    }
    // The source's embedder, locked on both sides, carries the vectors over.
    let embedder = match (src.get_meta(META_MODEL), src.get_meta(META_DIMENSION)) {
        (Ok(Some(model)), Ok(Some(dim))) => Some((model, dim.parse::<u32>()?)),
        _ => None,
    };
    if let Some((model, dim)) = &embedder {
        let on = |s: &Store| s.lock_embedder(model, *dim).map(|v| v.enabled());
        ensure!(
            on(&src)? && on(&dst)?,
            "the embedding lock ({model}, {dim}) could not be taken on both stores"
        );
    }
    let mut n = Copied::default();

    let memories = src.all_memories(None)?;
    n.memories = batches(&dst, "memories", &memories, &mut step, |m| {
        dst.insert_memory(m)
    })?;
    let versions = src.all_versions(None)?;
    n.versions = batches(&dst, "versions", &versions, &mut step, |v| {
        dst.put_version(v)
    })?;
    let episodes = src.all_episodes(None)?;
    n.episodes = batches(&dst, "turns", &episodes, &mut step, |e| {
        dst.insert_episode(e)
    })?;
    let sessions = src.all_sessions(None)?;
    n.sessions = batches(&dst, "sessions", &sessions, &mut step, |s| {
        dst.put_session(s)
    })?;
    if embedder.is_some() {
        let ids: Vec<String> = memories.iter().map(|m| m.id.clone()).collect();
        n.memory_vectors = copy_vectors(&src, &dst, Target::Memories, &ids, &mut step)?;
        let ids: Vec<String> = episodes.iter().map(|e| e.id.clone()).collect();
        n.episode_vectors = copy_vectors(&src, &dst, Target::Episodes, &ids, &mut step)?;
    }
    drop((memories, episodes, versions, sessions));

    let entities = src.all_entities(None)?;
    n.entities = batches(&dst, "entities", &entities, &mut step, |(e, mems, eps)| {
        dst.put_entity(e)?;
        for m in mems {
            dst.link_entity(Target::Memories, m, &e.id)?;
        }
        for x in eps {
            dst.link_entity(Target::Episodes, x, &e.id)?;
        }
        Ok(())
    })?;
    n.links = entities
        .iter()
        .map(|(_, m, x)| (m.len() + x.len()) as u64)
        .sum();
    let facts = src.all_facts(None)?;
    n.facts = batches(&dst, "facts", &facts, &mut step, |f| dst.put_fact(f))?;

    // The decision log and the ledger, oldest first as they were written.
    let mut decisions = src.decision_log(&DecisionFilter {
        limit: u32::MAX,
        ..Default::default()
    })?;
    decisions.reverse();
    n.decisions = batches(&dst, "decisions", &decisions, &mut step, |d| {
        dst.log_decision(d)
    })?;
    let mut usage = src.usage(u32::MAX)?;
    usage.reverse();
    dst.begin_batch()?;
    let recorded = dst.record_usage(&usage);
    dst.end_batch(recorded.is_ok())?;
    recorded?;
    n.usage = usage.len() as u64;
    let meta: Vec<(String, String)> = src
        .all_meta()?
        .into_iter()
        .filter(|(k, _)| !OWN_META.contains(&k.as_str()))
        .collect();
    n.metadata = batches(&dst, "metadata", &meta, &mut step, |(k, v)| {
        dst.set_meta(k, v)
    })?;

    dst.fold_counts()?;
    verify(&src, &dst, &n)?;
    Ok(n)
}

/// `rows` written through `write`, [`BATCH`] per transaction.
fn batches<T>(
    dst: &Store,
    what: &'static str,
    rows: &[T],
    step: &mut impl FnMut(&'static str, u64, u64),
    mut write: impl FnMut(&T) -> mnemo_core::CoreResult<()>,
) -> anyhow::Result<u64> {
    let total = rows.len() as u64;
    let mut done = 0;
    step(what, 0, total);
    for chunk in rows.chunks(BATCH) {
        dst.begin_batch()?;
        let written = chunk.iter().try_for_each(&mut write);
        dst.end_batch(written.is_ok())?;
        written
            .map_err(core)
            .with_context(|| format!("copying {what}"))?;
        done += chunk.len() as u64;
        step(what, done, total);
    }
    Ok(total)
}

fn copy_vectors(
    src: &Store,
    dst: &Store,
    target: Target,
    ids: &[String],
    step: &mut impl FnMut(&'static str, u64, u64),
) -> anyhow::Result<u64> {
    let what = match target {
        Target::Memories => "vectors",
        Target::Episodes => "turn vectors",
    };
    let mut copied = 0;
    step(what, 0, ids.len() as u64);
    for (i, chunk) in ids.chunks(BATCH).enumerate() {
        let vectors = src.get_vectors(target, chunk).map_err(core)?;
        dst.begin_batch()?;
        let written = vectors
            .iter()
            .try_for_each(|(id, v)| dst.put_vector(target, id, v));
        dst.end_batch(written.is_ok())?;
        written
            .map_err(core)
            .with_context(|| format!("copying {what}"))?;
        copied += vectors.len() as u64;
        step(
            what,
            ((i + 1) * BATCH).min(ids.len()) as u64,
            ids.len() as u64,
        );
    }
    Ok(copied)
}

/// The destination holds what the source holds, count for count.
fn verify(src: &Store, dst: &Store, n: &Copied) -> anyhow::Result<()> {
    let (a, b) = (src.stats(&[]).map_err(core)?, dst.stats(&[]).map_err(core)?);
    let pairs = [
        ("active memories", a.active, b.active),
        ("trashed memories", a.deleted, b.deleted),
        ("turns", a.episodes, b.episodes),
        ("sessions", a.sessions, b.sessions),
        ("entities", a.entities, b.entities),
        ("facts", a.facts, b.facts),
        ("memory vectors", a.memory_vectors, b.memory_vectors),
        ("turn vectors", a.episode_vectors, b.episode_vectors),
    ];
    for (what, x, y) in pairs {
        ensure!(
            x == y,
            "after the copy the source has {x} {what}, the destination {y}"
        );
    }
    let count = |s: &Store| -> anyhow::Result<(usize, usize)> {
        Ok((s.all_versions(None)?.len(), s.all_facts(None)?.len()))
    };
    let (sv, sf) = count(src)?;
    let (dv, df) = count(dst)?;
    ensure!(
        (sv, sf) == (dv, df),
        "versions or facts differ after the copy: {sv}/{sf} against {dv}/{df}"
    );
    ensure!(
        n.memories == a.active + a.deleted,
        "{} memories copied of {}",
        n.memories,
        a.active + a.deleted
    );
    Ok(())
}

/// A database for messages: a path, or a URL without its password.
fn describe(p: &Path) -> String {
    crate::storage::postgres::redact(&p.to_string_lossy())
}

fn core(e: mnemo_core::CoreError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
