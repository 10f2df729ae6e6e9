//! The lab's commands in their short forms, through the real `mnemo-lab`
//! binary: every figure they print is there and sane. The HTTP benches start
//! the `mnemo` binary built beside it (`cargo test --workspace` builds both).
//! With `MNEMO_TEST_BACKEND=postgres` the stores are Postgres databases.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod bench;
mod context;
#[path = "../../../tests/it/common/output.rs"]
mod output;
#[path = "../../../tests/it/common/postgres.rs"]
mod postgres;
mod simulate;

pub use output::{figure, ok};

/// One compiled core for every run (a fresh data folder compiles it again).
pub fn cache_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// `mnemo-lab --db DIR/m.db ARGS…` (a fresh Postgres database instead with
/// `MNEMO_TEST_BACKEND=postgres`), hash embedder, stdin closed.
pub fn lab(dir: &Path, args: &[&str]) -> Output {
    let db = if std::env::var("MNEMO_TEST_BACKEND").as_deref() == Ok("postgres") {
        postgres::fresh_database()
    } else {
        dir.join("m.db").to_string_lossy().into_owned()
    };
    Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .arg("--db")
        .arg(db)
        .args(args)
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_EMBEDDER", "hash")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo-lab")
}
