//! Conversions between the generated WIT types and the core's model types —
//! the host's one edge with the bindings. Every record, enum and variant
//! crosses through `mnemo_core::Cross`, implemented here from the model's
//! own lists (`mnemo_core::cross_contract!`), so no field is named twice.

use mnemo_core::impl_cross;

use super::bindings::exports::mnemo::core::engine;
use super::bindings::mnemo::core::{embedding, llm, ner, storage, types};

mnemo_core::cross_contract!();
