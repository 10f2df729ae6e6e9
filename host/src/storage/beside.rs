//! Files a SQLite store keeps beside its database: the derived indexes'
//! folders (`<db>.ann/`, the HNSW segments; `<db>.text/`, the full-text
//! partitions), each file written whole so a kill -9 leaves the old one
//! or the new one, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The folder `<db>.<suffix>` beside a database file (`None` for an
/// in-memory database).
pub(super) fn dir_of(db: &Path, suffix: &str) -> Option<PathBuf> {
    let name = db.file_name()?.to_string_lossy().to_string();
    (name != ":memory:" && !name.is_empty()).then(|| db.with_file_name(format!("{name}.{suffix}")))
}

/// Writes `bytes` as `path`: to a temporary of this process's own in the
/// same folder (created if missing), synced, then renamed over `path`.
pub(super) fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // The process's own temporary: a server and a CLI call may save the
    // same file at once.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}
