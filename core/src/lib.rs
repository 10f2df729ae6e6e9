//! mnemo's core: the memory engine as pure logic — validation, dedup,
//! lifecycle, recall channels, rank fusion and scoring — with every effect
//! behind the port traits of [`ports`], so it runs as a WASM component or
//! natively against in-memory fakes.

pub mod audit;
pub mod consolidate;
pub mod decay;
pub mod dedup;
pub mod engine;
pub mod entities;
pub mod error;
pub mod extract;
pub mod facts;
pub mod fusion;
pub mod ids;
pub mod model;
pub mod ner_llm;
pub mod ports;
pub mod prompts;
pub mod recall;
pub mod resume;
pub mod scoring;
pub mod text;
pub mod thresholds;
pub mod topics;
pub mod transfer;
pub mod validate;
pub mod vector;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
pub mod fakes;
#[cfg(test)]
mod lifecycle_tests;

#[cfg(target_arch = "wasm32")]
mod wasm;

pub use engine::Engine;
pub use error::{CoreError, CoreResult};
