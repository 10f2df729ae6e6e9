//! Seed 004's order of Core memories, which resume shows first and the Core
//! summary compresses first: `importance × kind_boost × (1 + rep × 2.5)`.

use crate::model::*;
use crate::thresholds::*;

fn kind_boost(kind: Kind) -> f32 {
    match kind {
        Kind::Procedural => KIND_BOOST_PROCEDURAL,
        Kind::Semantic => KIND_BOOST_SEMANTIC,
        Kind::Episodic => KIND_BOOST_EPISODIC,
    }
}

/// Seed 004's Core order: `importance × kind_boost × (1 + rep × 2.5)`.
pub fn core_weight(m: &Memory) -> f32 {
    m.importance * kind_boost(m.kind) * (1.0 + m.repetition_count as f32 * REPETITION_WEIGHT)
}
