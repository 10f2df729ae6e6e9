//! How memory organises itself. The consolidation cycle (`cycle.rs`) plans
//! lifecycle actions on working copies — session facts, Core hygiene and the
//! gate, Buffer promotion, triage, dedup and cap, LLM merge and reconcile,
//! insert-time merges of restatements, session-note distillation,
//! importance decay — and applies them in one
//! call. Beside it: seed 003's confidence fading, the LLM review of Working
//! and Core under its rules, topic trees, the weekly reflection and the
//! nightly entity enrichment.

mod buffer;
mod candidates;
pub(crate) mod cycle;
mod enrichment;
mod extract;
mod fading;
mod gate;
pub(crate) mod importance;
mod notes;
mod pairs;
mod plan;
mod reflection;
mod restatements;
mod review;
mod review_rules;
mod sessions;
pub(crate) mod topics;

pub(crate) use restatements::set_merge_pending;
