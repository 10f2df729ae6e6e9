//! The `mnemo` binary run once on a database in a folder (hash embedder).

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `mnemo --db DIR/m.db ARGS…`, stdin closed.
pub fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--db")
        .arg(super::database_in(dir, "m.db"))
        .args(args)
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_EMBEDDER", "hash")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo")
}

/// What `o` printed on stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `o`'s stdout, after checking that it exited 0 (its stderr otherwise).
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(o)
}

/// The value of the row named `figure` in a bench's `--json` output.
pub fn figure(rows: &serde_json::Value, figure: &str) -> Option<String> {
    rows.as_array()?
        .iter()
        .find(|r| r["figure"] == figure)
        .and_then(|r| r["value"].as_str().map(String::from))
}
