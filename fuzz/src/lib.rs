//! mnemo's fuzz targets (issue 20). Each `pub fn` takes libFuzzer's bytes
//! and drives one surface through the real parts — the core component in
//! wasmtime on a real SQLite file, the HTTP router in process — and panics
//! on what must never happen: a trap, a panic, a 5xx, a storage error caused
//! by input, a failed call that wrote something, a query the FTS index
//! rejects.
//!
//! The binaries in `fuzz_targets/` are one line over these, so every input
//! kept in `regressions/<target>/` also runs as a plain test
//! (`tests/regressions.rs`, in `cargo test`). `scripts/fuzz` runs them under
//! libFuzzer: a fixed count in CI, 1M inputs each in the long form.

// A fuzz target reports a failure by panicking.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

mod engine;
mod exports;
mod http;
mod text;

pub use exports::{core_exports, import_lines};
pub use http::http_bodies;
pub use text::{fts_query, llm_answers, tokens};

/// A fuzz target: libFuzzer's bytes in, a panic on a failure.
pub type Target = fn(&[u8]);

/// The targets by name, for the regression test.
pub const TARGETS: [(&str, Target); 6] = [
    ("core_exports", core_exports),
    ("http_bodies", http_bodies),
    ("import_lines", import_lines),
    ("fts_query", fts_query),
    ("tokens", tokens),
    ("llm_answers", llm_answers),
];
