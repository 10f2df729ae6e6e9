//! The recall pipeline's shared records: a scored hit before paging, and
//! the deeper BM25 reading that weighs candidates. `recall.rs` makes them;
//! `dialogue.rs` and `assist.rs` adjust them.

use std::collections::HashMap;

use crate::model::*;

/// Raw BM25 and rank of the episodes' full-text matches below the fused
/// list's cut, `FTS_SCORE_DEPTH ×` deeper: a turn only the vector channel
/// found still has its words weighed (it would count as no match
/// otherwise). They score candidates; they do not add any.
pub(crate) type Lexical = HashMap<(Target, String), (u32, Score)>;

/// A scored hit before paging, with what the ordering needs.
pub(crate) struct Scored {
    pub(crate) hit: Hit,
    pub(crate) rrf: Score,
    pub(crate) time: Millis,
    pub(crate) accessed: Millis,
}
