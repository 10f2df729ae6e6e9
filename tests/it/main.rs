//! mnemo's end-to-end tests, one binary: each module was a test file of its
//! own, and linking wasmtime, SQLite and candle once instead of per file is
//! most of CI's time saved. Every test drives the real core component, a
//! real database (a SQLite file, or Postgres with `MNEMO_TEST_BACKEND=postgres`),
//! real plugins and, where it says so, the real `mnemo` binary.
//!
//! Select a module by its path: `cargo test -p mnemo-host --test it -- e2e::`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod ann;
mod atomic;
mod auth;
mod cli;
mod concurrency;
mod contract;
mod crash;
mod disk_full;
mod e2e;
mod e2e_store;
mod embedding;
mod exact_vectors;
mod faults;
mod history;
mod http;
mod http_lifecycle;
mod isolation;
mod keys;
mod lifecycle;
mod links;
mod llm_bounds;
mod llm_plugins;
mod mcp;
mod metrics;
mod pg_graph;
mod pg_locks;
mod pg_tail;
mod pg_text;
mod pg_tls;
mod plugins;
mod postgres;
mod providers;
mod read_only;
mod reference;
mod scenarios;
mod sharing;
mod structured_output;
mod text_file;
mod text_index;
mod text_overlay;
mod topics;
mod traces;
