//! Engine tests against the in-memory fakes: the write and read paths
//! (`engine.rs`) and the lifecycle (`lifecycle.rs`).

mod engine;
mod lifecycle;
mod spec;
