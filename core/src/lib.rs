//! mnemo's core: the memory engine as pure logic — validation, dedup,
//! lifecycle, recall channels, rank fusion and scoring — with every effect
//! behind the port traits of [`ports`], so it runs as a WASM component or
//! natively against in-memory fakes.

pub mod decay;
pub mod dedup;
pub mod engine;
pub mod entities;
pub mod error;
pub mod fusion;
pub mod ids;
pub mod model;
pub mod ner_llm;
pub mod ports;
pub mod recall;
pub mod scoring;
pub mod text;
pub mod thresholds;
pub mod transfer;
pub mod validate;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
pub mod fakes;

#[cfg(target_arch = "wasm32")]
mod wasm;

pub use engine::Engine;
pub use error::{CoreError, CoreResult};
