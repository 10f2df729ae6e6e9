//! HNSW segments on disk, so a restarted server (or a one-shot CLI call)
//! searches with them at once instead of rebuilding (157 s at 100k).
//!
//! One file per segment in `<database>.ann/`, written after its build to a
//! temporary name and renamed, so a kill -9 leaves the old file or the new
//! one, never half of one. Each file names the embedder its vectors came
//! from, and each point the `vector_changes.seq` of its version; at load
//! the store replays the changes after the oldest of them (new vectors
//! become fresh, replaced or removed points stale), so the loaded segments
//! agree with the table whatever happened between the save and the
//! restart. A kill between a merge's save and the removal of its inputs
//! leaves both: the same rows twice, at the same version, which a search
//! counts once and the next merge folds. A file for another embedder, or
//! one that does not parse, is deleted and the partition is rebuilt on
//! demand.

use std::path::{Path, PathBuf};

use anyhow::Context;
use mnemo_core::model::Target;
use serde::{Deserialize, Serialize};

use super::{Graph, Key, Segment, SegmentId};
use crate::storage::filter::table;

/// Where graphs are saved, and the embedder they belong to.
#[derive(Clone)]
pub(in crate::storage) struct Persist {
    pub dir: std::path::PathBuf,
    pub model: String,
    pub dimension: u32,
}

/// Format of the files (a new layout gets a new number; older files are
/// dropped and their partition rebuilt). 2: one file per segment, each
/// point with its change number; 3: the file name adds the smallest row.
const FORMAT: u32 = 3;

#[derive(Serialize)]
struct Saving<'a> {
    format: u32,
    model: &'a str,
    dimension: u32,
    target: &'a str,
    namespace: &'a str,
    graph: &'a Graph,
}

#[derive(Deserialize)]
struct Loading {
    format: u32,
    model: String,
    dimension: u32,
    target: String,
    namespace: String,
    graph: Graph,
}

/// The folder of a database's graphs (`None` for an in-memory database).
pub(in crate::storage) fn dir_of(db: &Path) -> Option<PathBuf> {
    crate::storage::beside::dir_of(db, "ann")
}

/// `<target>-<namespace as hex>-`: the start of a partition's file names.
fn prefix_of(key: &Key) -> String {
    let ns: String = key.1.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{}-{ns}-", table(key.0))
}

/// A segment's file, named by its id (`Segment::id`): a merge that keeps
/// the same points' range (a compaction) replaces its input in one rename.
fn file_of(dir: &Path, key: &Key, id: SegmentId) -> PathBuf {
    let SegmentId { first, last, row } = id;
    dir.join(format!("{}{first:x}-{last:x}-{row:x}.hnsw", prefix_of(key)))
}

pub(in crate::storage) fn save(persist: &Persist, key: &Key, seg: &Segment) -> anyhow::Result<()> {
    let bytes = postcard::to_stdvec(&Saving {
        format: FORMAT,
        model: &persist.model,
        dimension: persist.dimension,
        target: table(key.0),
        namespace: &key.1,
        graph: &seg.graph,
    })
    .context("encoding the graph")?;
    crate::storage::beside::write_whole(&file_of(&persist.dir, key, seg.id()), &bytes)
}

/// Deletes the file of a segment merged into another.
pub(in crate::storage) fn remove(persist: &Persist, key: &Key, id: SegmentId) {
    let _ = std::fs::remove_file(file_of(&persist.dir, key, id));
}

/// Deletes every file of `key` but the segments of `keep` (a first build
/// replaced whatever the partition had).
pub(in crate::storage) fn remove_others(persist: &Persist, key: &Key, keep: &[SegmentId]) {
    let Ok(entries) = std::fs::read_dir(&persist.dir) else {
        return;
    };
    let prefix = prefix_of(key);
    let kept: Vec<PathBuf> = keep
        .iter()
        .map(|id| file_of(&persist.dir, key, *id))
        .collect();
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        if name.is_some_and(|n| n.starts_with(&prefix)) && !kept.contains(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Every segment of `persist.dir` built from `persist`'s embedder. Other
/// files (another embedder, an older format, a torn temporary, garbage)
/// are deleted.
pub(in crate::storage) fn load_all(persist: &Persist) -> Vec<(Key, Segment)> {
    let Ok(entries) = std::fs::read_dir(&persist.dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        match load(persist, &path) {
            Ok(l) => out.push(l),
            Err(e) => {
                tracing::info!(file = %path.display(), reason = %format!("{e:#}"), "HNSW graph file dropped; rebuilt on demand");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    out
}

fn load(persist: &Persist, path: &Path) -> anyhow::Result<(Key, Segment)> {
    anyhow::ensure!(
        path.extension().is_some_and(|e| e == "hnsw"),
        "not a graph file"
    );
    let bytes = std::fs::read(path)?;
    let f: Loading = postcard::from_bytes(&bytes).context("unreadable")?;
    anyhow::ensure!(f.format == FORMAT, "format {} is not {FORMAT}", f.format);
    anyhow::ensure!(
        f.model == persist.model && f.dimension == persist.dimension,
        "built for {} ({}), not {} ({})",
        f.model,
        f.dimension,
        persist.model,
        persist.dimension
    );
    let target = match f.target.as_str() {
        "memories" => Target::Memories,
        "episodes" => Target::Episodes,
        other => anyhow::bail!("unknown target {other}"),
    };
    Ok(((target, f.namespace), Segment::from_graph(f.graph, 0)))
}

/// Deletes every saved graph (the vectors were reset).
pub(in crate::storage) fn remove_all(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}
