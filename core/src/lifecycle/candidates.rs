//! What a consolidation cycle reads: the memories its steps can act on,
//! found by indexed queries instead of a walk of the whole store, so a
//! cycle costs what changed and what is due, not the store's size (issue
//! 14). At 100,000 memories a cycle that found nothing to do read every
//! active memory and took 2.6 s (`mnemo-lab bench serve`); with this read and
//! the cached topic trees kept (`cycle.rs`), 0.1 s.
//!
//! - every Buffer and Core memory: the triage, promotion, dedup, cap and
//!   eviction of the Buffer; the Core hygiene and overlap scan. Both layers
//!   are small by design (the Buffer cap, seed 004 §2.4; Core only through
//!   the gate, §2.5);
//! - the Working memories changed most recently since the last cycle, at
//!   most `PAIR_SCAN_MAX` (the LLM pairs look at no more; a store imported
//!   whole between two cycles is not read whole);
//! - Working memories important enough for the gate
//!   (`PROMOTE_MIN_IMPORTANCE`; the stored importance is never under the
//!   settled one, since lazy decay only lowers it, so none is missed);
//! - Working memories whose work waits, found by their markers: a first
//!   gate rejection to clean up, an orphaned `promotion` tag, an
//!   insert-time merge not yet made, session notes waiting to be
//!   distilled, project-status snapshots a new one is compared with.
//!
//! A neighbour outside this set that a step needs (an LLM pair's other
//! half) is read when it is met (`load_into`).

use std::collections::BTreeSet;

use super::plan::{Cycle, TAG_PROMOTION, TAG_REJECTED};
use super::restatements::TAG_MERGE_PENDING;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::{PAIR_SCAN_MAX, PROMOTE_MIN_IMPORTANCE};

/// Markers of Working memories with work waiting.
const WAITING_TAGS: [&str; 5] = [
    TAG_REJECTED,
    TAG_PROMOTION,
    TAG_MERGE_PENDING,
    "session",
    "project-status",
];
/// The source of a session note without the `session` tag.
const SESSION_SOURCE: &str = "session";

impl<P: Ports> Engine<P> {
    /// The active memories of `namespace` (or of every namespace) the
    /// cycle's steps can act on, each once; `since` is the last cycle's
    /// time (`None`: no cycle yet, every Working memory is new).
    pub(super) fn cycle_memories(
        &self,
        namespace: Option<&str>,
        since: Option<Millis>,
    ) -> CoreResult<Vec<Memory>> {
        // One namespace at a time: every query then seeks the (namespace,
        // layer, …) indexes instead of scanning the table.
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for ns in self.covered(namespace)? {
            for (q, most) in candidate_queries(&ns, since) {
                let mut read = 0;
                self.walk_memories(q, |page| {
                    for m in page {
                        read += 1;
                        if read > most {
                            return Ok(false);
                        }
                        if seen.insert(m.id.clone()) {
                            out.push(m);
                        }
                    }
                    Ok(true)
                })?;
            }
        }
        self.settle_all(&mut out)?;
        Ok(out)
    }

    /// Reads the memories of `ids` the cycle does not hold yet (settled like
    /// the rest), so a step can judge a pair whose other half was not a
    /// candidate.
    pub(super) fn load_into(&self, cycle: &mut Cycle, ids: &[String]) -> CoreResult<()> {
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !cycle.memories.contains_key(*id))
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut read = self.ports().storage().get_memories(&missing)?;
        self.settle_all(&mut read)?;
        for m in read {
            cycle.memories.insert(m.id.clone(), m);
        }
        Ok(())
    }
}

/// The queries of one namespace's candidates, each with the most rows it
/// may read; newest change first, the order the indexes keep.
fn candidate_queries(ns: &str, since: Option<Millis>) -> [(ListQuery, usize); 5] {
    let base = ListQuery {
        namespaces: vec![ns.to_string()],
        state: ListState::Active,
        by_modified: true,
        ..Default::default()
    };
    let working = ListQuery {
        layers: vec![Layer::Working],
        ..base.clone()
    };
    [
        (
            ListQuery {
                layers: vec![Layer::Buffer, Layer::Core],
                ..base
            },
            usize::MAX,
        ),
        (
            ListQuery {
                modified_since: since,
                ..working.clone()
            },
            PAIR_SCAN_MAX,
        ),
        (
            ListQuery {
                min_importance: Some(PROMOTE_MIN_IMPORTANCE),
                ..working.clone()
            },
            usize::MAX,
        ),
        (
            ListQuery {
                any_tags: WAITING_TAGS.iter().map(|t| t.to_string()).collect(),
                ..working.clone()
            },
            usize::MAX,
        ),
        (
            ListQuery {
                source: Some(SESSION_SOURCE.into()),
                ..working
            },
            usize::MAX,
        ),
    ]
}
