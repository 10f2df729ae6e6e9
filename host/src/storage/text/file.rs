//! Full-text partitions on disk, so a restarted server searches a large
//! namespace with its index at once instead of rebuilding it from the
//! table (a million rows: tens of seconds, FTS5 answering meanwhile at
//! several times the settled p50 — docs/benchmarks.md).
//!
//! One file per (table, namespace) in `<database>.text/`, written to a
//! temporary name and renamed, so a kill -9 leaves the old file or the new
//! one, never half of one. A file carries the partition's mark, the last
//! `text_changes.seq` it holds: a load replays the log after it, exactly
//! as a search catches a partition up, so the loaded partition agrees with
//! the table whatever happened between the save and the restart. A file
//! the log no longer reaches (pruned past its mark), one ahead of the log
//! (a database replaced by an older copy), of another format or schema,
//! or one that does not parse is deleted and its partition built from the
//! table. The folder belongs to its database file, as `<db>.ann/` does: a
//! database deleted and made anew under the same name must lose it too
//! (a new log may have reached the old file's mark).

use std::path::{Path, PathBuf};

use anyhow::Context;
use mnemo_core::model::Target;
use serde::{Deserialize, Serialize};

use super::partition::{Partition, Saved, SavedRef};
use super::{Key, TEXT_CHANGES_KEEP, TEXT_SAVE_EVERY};
use crate::storage::filter::table;

/// The files' layout (a new one gets a new number; older files are
/// dropped and their partitions rebuilt).
const FORMAT: u32 = 1;

#[derive(Serialize)]
struct Saving<'a> {
    format: u32,
    /// The schema's version: a migration may change what is indexed (the
    /// triggers' columns, the tokenizer), so a file of another is dropped.
    schema: u32,
    target: &'a str,
    namespace: &'a str,
    part: SavedRef<'a>,
}

#[derive(Deserialize)]
struct Loading {
    format: u32,
    schema: u32,
    target: String,
    namespace: String,
    part: Saved,
}

/// The folder of a database's partitions (`None` for an in-memory one).
pub(in crate::storage) fn dir_of(db: &Path) -> Option<PathBuf> {
    crate::storage::beside::dir_of(db, "text")
}

/// `<table>-<namespace as hex>.fts`.
fn file_of(dir: &Path, key: &Key) -> PathBuf {
    let ns: String = key.1.bytes().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{}-{ns}.fts", table(key.0)))
}

/// Whether `part` (of `rows` at least `min_rows`) should be written again:
/// never saved, `TEXT_SAVE_EVERY` changes applied since, or its file's
/// mark half the kept log behind (so the pruned log still reaches it).
pub(in crate::storage) fn due(part: &Partition, min_rows: Option<i64>) -> bool {
    let Some(min) = min_rows else {
        return false;
    };
    part.rows() >= min
        && match part.saved {
            None => true,
            Some(at) => part.unsaved >= TEXT_SAVE_EVERY || part.seq - at >= TEXT_CHANGES_KEEP / 2,
        }
}

/// `part` as its file holds it (encoded under the caller's read lock;
/// the writing, `write`, needs none).
pub(in crate::storage) fn encode(key: &Key, part: &Partition) -> anyhow::Result<Vec<u8>> {
    postcard::to_stdvec(&Saving {
        format: FORMAT,
        schema: crate::storage::migrations::current_version(),
        target: table(key.0),
        namespace: &key.1,
        part: part.to_saved(),
    })
    .context("encoding the partition")
}

/// Writes `key`'s file (`encode`'s bytes) whole, or leaves the old one.
pub(in crate::storage) fn write(dir: &Path, key: &Key, bytes: &[u8]) -> anyhow::Result<()> {
    crate::storage::beside::write_whole(&file_of(dir, key), bytes)
}

/// The partition `key`'s file holds, if it has one the log reaches:
/// `pruned` and `last` are the log's oldest dropped and newest change, as
/// the snapshot the caller then replays from sees them. A file that cannot
/// serve is deleted (`None`, with the reason logged).
pub(in crate::storage) fn load(dir: &Path, key: &Key, pruned: i64, last: i64) -> Option<Partition> {
    let path = file_of(dir, key);
    if !path.exists() {
        return None;
    }
    let read = || -> anyhow::Result<Partition> {
        let bytes = std::fs::read(&path)?;
        let f: Loading = postcard::from_bytes(&bytes).context("unreadable")?;
        anyhow::ensure!(f.format == FORMAT, "format {} is not {FORMAT}", f.format);
        let schema = crate::storage::migrations::current_version();
        anyhow::ensure!(f.schema == schema, "schema {} is not {schema}", f.schema);
        anyhow::ensure!(
            f.target == table(key.0) && f.namespace == key.1,
            "it holds {} of {:?}",
            f.target,
            f.namespace
        );
        let part = Partition::from_saved(f.part).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            part.seq >= pruned,
            "the log was pruned past its mark ({} < {pruned})",
            part.seq
        );
        anyhow::ensure!(
            part.seq <= last,
            "its mark is ahead of the log ({} > {last})",
            part.seq
        );
        Ok(part)
    };
    match read() {
        Ok(part) => Some(part),
        Err(e) => {
            tracing::info!(file = %path.display(), reason = %format!("{e:#}"),
                "full-text partition file dropped; built from its table");
            let _ = std::fs::remove_file(&path);
            None
        }
    }
}

/// Every (table, namespace) with a file; leftovers of a save a kill cut
/// short, and files of no partition, are deleted.
pub(in crate::storage) fn saved(dir: &Path) -> Vec<Key> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        match key_of(&path) {
            Some(key) => out.push(key),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    out
}

/// The partition a file name is of.
fn key_of(path: &Path) -> Option<Key> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".fts")?;
    let (t, hex) = stem.split_once('-')?;
    let target = match t {
        "memories" => Target::Memories,
        "episodes" => Target::Episodes,
        _ => return None,
    };
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    Some((target, String::from_utf8(bytes?).ok()?))
}

#[cfg(test)]
mod tests {
    use super::super::Tokenized;
    use super::super::partition::score;
    use super::*;

    fn save(dir: &Path, key: &Key, part: &Partition) -> anyhow::Result<()> {
        write(dir, key, &encode(key, part)?)
    }

    fn doc(words: &[(&str, u16)]) -> Tokenized {
        Tokenized {
            len: words.iter().map(|(_, n)| u32::from(*n)).sum(),
            terms: words
                .iter()
                .map(|(w, n)| (w.to_string(), [*n, 0]))
                .collect(),
        }
    }

    #[test]
    fn a_saved_partition_loads_as_it_was_and_scores_alike() {
        let dir = tempfile::tempdir().unwrap();
        let key: Key = (Target::Memories, "ns é/1".into());
        let mut p = Partition::new(7);
        p.put(1, &doc(&[("alpha", 2), ("beta", 1)]));
        p.put(2, &doc(&[("beta", 3)]));
        p.put(3, &doc(&[("gamma", 1), ("alpha", 1)]));
        p.remove(2);
        save(dir.path(), &key, &p).unwrap();
        assert_eq!(saved(dir.path()), vec![key.clone()]);
        let mut q = load(dir.path(), &key, 0, 7).unwrap();
        assert_eq!((q.seq, q.saved, q.rows(), q.postings()), (7, Some(7), 2, 4));
        let phrases = vec!["alpha".to_string(), "beta".to_string()];
        let none = Default::default();
        let before = score(&[(&p, &none)], &phrases, [1.0, 1.0]);
        let after = score(&[(&q, &none)], &phrases, [1.0, 1.0]);
        let bits = |v: Vec<(i64, f64)>| {
            let mut v: Vec<(i64, u64)> = v.into_iter().map(|(r, s)| (r, s.to_bits())).collect();
            v.sort();
            v
        };
        assert_eq!(bits(before), bits(after));
        // It keeps changing as a built one does: the freed slot reused, a
        // row replaced.
        q.put(4, &doc(&[("beta", 1)]));
        q.put(1, &doc(&[("gamma", 2)]));
        assert_eq!((q.rows(), q.postings()), (3, 4));
        assert_eq!(q.df("alpha", &none), 1);
    }

    #[test]
    fn a_file_the_log_does_not_reach_or_cannot_read_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let key: Key = (Target::Episodes, "a".into());
        let mut p = Partition::new(50);
        p.put(1, &doc(&[("alpha", 1)]));
        for (pruned, last) in [(51, 90), (0, 49)] {
            save(dir.path(), &key, &p).unwrap();
            assert!(load(dir.path(), &key, pruned, last).is_none());
            assert!(!file_of(dir.path(), &key).exists());
        }
        std::fs::write(file_of(dir.path(), &key), b"not a partition").unwrap();
        assert!(load(dir.path(), &key, 0, 90).is_none());
        assert!(!file_of(dir.path(), &key).exists());
        // Another partition's file under this one's name.
        save(dir.path(), &(Target::Memories, "a".into()), &p).unwrap();
        std::fs::rename(
            file_of(dir.path(), &(Target::Memories, "a".into())),
            file_of(dir.path(), &key),
        )
        .unwrap();
        assert!(load(dir.path(), &key, 0, 90).is_none());
        // A save a kill cut short is cleared away.
        std::fs::write(dir.path().join("memories-61.fts.tmp"), b"half").unwrap();
        assert!(saved(dir.path()).is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_partition_is_saved_again_after_enough_changes_or_before_the_log_leaves_it() {
        let mut p = Partition::new(10);
        p.put(1, &doc(&[("alpha", 1)]));
        assert!(due(&p, Some(1)));
        assert!(!due(&p, Some(2)));
        assert!(!due(&p, None));
        p.saved = Some(10);
        assert!(!due(&p, Some(1)));
        p.unsaved = TEXT_SAVE_EVERY;
        assert!(due(&p, Some(1)));
        p.unsaved = 0;
        p.seq = 10 + TEXT_CHANGES_KEEP / 2;
        assert!(due(&p, Some(1)));
    }
}
