//! The `mnemo` binary run once on a database in a folder (hash embedder).

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `mnemo --db DIR/m.db ARGS…`, stdin closed.
pub fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .env("MNEMO_CACHE_DIR", super::cache_dir())
        .arg("--db")
        .arg(super::database_in(dir, "m.db"))
        .args(args)
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_EMBEDDER", "hash")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo")
}

pub use super::output::{ok, stdout};
