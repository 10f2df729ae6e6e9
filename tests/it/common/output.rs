//! Reading what a command printed: its stdout, checked for success, and one
//! row of a bench's `--json` table. The lab's tests include this file too.

// Each test binary that includes it uses a part.
#![allow(dead_code)]

use std::process::Output;

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
