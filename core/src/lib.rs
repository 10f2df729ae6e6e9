//! mnemo's core: the memory engine as pure logic — validation, dedup,
//! lifecycle, recall channels, rank fusion and scoring — with every effect
//! behind the port traits of [`ports`], so it runs as a WASM component or
//! natively against in-memory fakes.
//!
//! The modules follow the flows of the design (`docs/design/`):
//! `write/` (remember, ingest, dedup, entity links, facts, import), `read/`
//! (recall's channels, fusion and scoring, the fact walk, entity info),
//! `lifecycle/` (the consolidation cycle and its steps, fading, the LLM
//! review, topics, reflection, enrichment), `agent/` (resume, context
//! injection), `prompts/` (every LLM prompt beside its parser) and `wasm/`
//! (the component's edge). They are private: what a host may use is
//! re-exported below.

pub mod calendar;
mod cross;
mod engine;
mod error;
mod ids;
pub mod model;
pub mod ports;
mod sharing;
mod text;
pub mod thresholds;
mod validate;
mod vector;
mod vector_parts;

mod agent;
mod guard;
mod lifecycle;
mod prompts;
mod read;
mod write;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
mod wasm;

pub use agent::context::ContextQuery;
pub use agent::domains::described as agent_domains;
pub use agent::prompts as agent_prompts;
pub use cross::Cross;
pub use engine::Engine;
pub use error::{CoreError, CoreResult};
pub use sharing::META_KEYS;
pub use validate::namespace as valid_namespace;
pub use vector::{hash_embedding, normalize};
pub use vector_parts::{combine_parts, vector_parts};
pub use write::entities::merge_mentions;

/// What the fuzz targets (`fuzz/`) drive directly: the tokeniser (CJK
/// segmentation included) and the parser of every LLM answer.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use crate::prompts::{
        Verdict, compress, distill, expand, extract, gate, merge, naming, ner, reconcile,
        reflection, rerank, review, triage,
    };
    pub use crate::text::{MAX_QUERY_TERMS, contains_cjk, name_candidates, token_set};
}

/// The tokenizer the full-text index and its queries share: a host stores
/// [`search_text::index_text`] in its index and the core queries it with the
/// same tokens (CJK segmented, seed 004 §9).
pub mod search_text {
    #[cfg(not(target_arch = "wasm32"))]
    pub use crate::text::JIEBA_DICTIONARY;
    pub use crate::text::{estimate_tokens, fts_terms, index_text, is_stop_word, tokens};
}
