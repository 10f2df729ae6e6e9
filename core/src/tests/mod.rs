//! Engine tests against the in-memory fakes: the write and read paths
//! (`engine.rs`), the history of memories (`history.rs`), the lifecycle's
//! heuristic steps (`lifecycle.rs`), its LLM steps (`llm_steps.rs`) and
//! sessions (`sessions.rs`); `support.rs` holds their shared helpers.

mod buffer;
mod candidates;
mod dialogue;
mod engine;
mod history;
mod lifecycle;
mod llm_steps;
mod markers;
mod resume;
mod sessions;
mod spec;
mod support;
mod topics;
