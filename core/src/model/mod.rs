//! The domain types of the engine, defined once. Each record, variant and
//! enum is listed in one macro (`stored_records!`, `engine_records!`,
//! `llm_records!`, `topic_records!`, `enums!`, `variants!`) naming the WIT interface it mirrors; `define!`
//! turns the lists into Rust types here, and each adapter (the guest's
//! `wasm/`, the host's `runtime/convert.rs`) turns the same lists into
//! conversions with `impl_cross!`. Adding a field is one edit here and one
//! in `wit/`.

use serde::{Deserialize, Serialize};

#[macro_use]
mod define;
mod api;
mod bounds;
mod enums;
pub mod json_text;
mod records;
mod topics;

pub use enums::*;
pub use records::{LIFECYCLE_MARKERS, is_marker};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;
/// "Higher is better", everywhere.
pub type Score = f32;

crate::enums!(define);
crate::stored_records!(define);
crate::engine_records!(define);
crate::llm_records!(define);
crate::topic_records!(define);
crate::variants!(define);

impl Default for SharingMode {
    fn default() -> Self {
        Self::Auto
    }
}

impl Default for ListState {
    fn default() -> Self {
        Self::Active
    }
}
