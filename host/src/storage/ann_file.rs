//! HNSW graphs on disk, so a restarted server (or a one-shot CLI call)
//! searches with them at once instead of rebuilding (157 s at 100k).
//!
//! One file per partition in `<database>.ann/`, written after each build to
//! a temporary name and renamed, so a kill -9 leaves the old file or the
//! new one, never half of one. Each file names the embedder its vectors
//! came from and the last `vector_changes.seq` its snapshot included; at
//! load the store replays the changes after that number (new vectors become
//! fresh, replaced or removed points stale), so the loaded graph agrees
//! with the table whatever happened between the save and the restart. A
//! file for another embedder, or one that does not parse, is deleted and
//! the partition is rebuilt on demand.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use mnemo_core::model::Target;
use serde::{Deserialize, Serialize};

use super::ann::{Graph, Key, Persist};
use super::ann_store::target_name;

/// Format of the files (a new layout gets a new number; older files are
/// rebuilt).
const FORMAT: u32 = 1;

#[derive(Serialize)]
struct Saving<'a> {
    format: u32,
    model: &'a str,
    dimension: u32,
    target: &'a str,
    namespace: &'a str,
    seq: i64,
    points: usize,
    graph: &'a Graph,
}

#[derive(Deserialize)]
struct Loading {
    format: u32,
    model: String,
    dimension: u32,
    target: String,
    namespace: String,
    seq: i64,
    points: usize,
    graph: Graph,
}

/// A graph read back: its partition, snapshot sequence number and points.
pub(super) struct Loaded {
    pub key: Key,
    pub seq: i64,
    pub points: usize,
    pub graph: Graph,
}

/// The folder of a database's graphs (`None` for an in-memory database).
pub(super) fn dir_of(db: &Path) -> Option<PathBuf> {
    let name = db.file_name()?.to_string_lossy().to_string();
    (name != ":memory:" && !name.is_empty()).then(|| db.with_file_name(format!("{name}.ann")))
}

fn file_of(dir: &Path, key: &Key) -> PathBuf {
    let ns: String = key.1.bytes().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{}-{ns}.hnsw", target_name(key.0)))
}

pub(super) fn save(
    persist: &Persist,
    key: &Key,
    seq: i64,
    graph: &Graph,
    points: usize,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&persist.dir)
        .with_context(|| format!("creating {}", persist.dir.display()))?;
    let bytes = postcard::to_stdvec(&Saving {
        format: FORMAT,
        model: &persist.model,
        dimension: persist.dimension,
        target: target_name(key.0),
        namespace: &key.1,
        seq,
        points,
        graph,
    })
    .context("encoding the graph")?;
    let path = file_of(&persist.dir, key);
    let tmp = path.with_extension("hnsw.tmp");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Every graph of `persist.dir` built from `persist`'s embedder. Other
/// files (another embedder, an older format, a torn temporary, garbage)
/// are deleted.
pub(super) fn load_all(persist: &Persist) -> Vec<Loaded> {
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

fn load(persist: &Persist, path: &Path) -> anyhow::Result<Loaded> {
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
    Ok(Loaded {
        key: (target, f.namespace),
        seq: f.seq,
        points: f.points,
        graph: f.graph,
    })
}

/// Deletes every saved graph (the vectors were reset).
pub(super) fn remove_all(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}
