//! The write paths: what happens when an agent hands mnemo something.
//! `remember` (validation, insert dedup, reinforcement, vectors, entity
//! links) and the edits on memories, `ingest` (seed 003's hot path for
//! dialogue turns), facts, and the import of exported lines.

pub(crate) mod dedup;
pub(crate) mod entities;
mod facts;
mod history;
mod import;
mod ingest;
mod remember;
