//! Per-epoch importance decay by kind (seed 004 §2.6): counted in
//! consolidation cycles, not wall time, so an idle agent loses nothing.
//! Buffer memories decayed to nothing are evicted (restorable).
//!
//! Lazy, so a cycle costs what changed, not the store size: a row keeps its
//! importance as of an epoch (the `decay_epoch` attribute, else the later
//! of its `created_epoch` and the epoch lazy decay began in its namespace)
//! and the importance at epoch `e` is that value less `IMPORTANCE_DECAY ×
//! share(kind)` per epoch since, never below 0. Eager decay rewrote every
//! unprotected memory with importance left, each cycle: 100,000 row
//! writes a cycle at 100k. Whoever reads importance for a decision or a reply *settles*
//! the memory first (the value at the namespace's epoch, and that epoch);
//! whoever sets importance writes a settled pair, so a row's importance and
//! its epoch always agree. Export and import carry rows as stored, marks
//! included, so a round trip is lossless field for field.

use super::plan::Cycle;
use crate::engine::{Engine, namespaced};
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;

/// Attribute: the epoch the stored importance is as of.
pub const ATTR_DECAY_EPOCH: &str = "decay_epoch";
/// Metadata key (per namespace): the epoch before the first lazy cycle; rows
/// older than it were decayed eagerly through it.
pub const META_LAZY_DECAY_FROM: &str = "lazy_decay_from";

/// Importance lost per epoch by a memory of `kind`.
pub fn per_epoch(kind: Kind) -> f32 {
    IMPORTANCE_DECAY
        * match kind {
            Kind::Episodic => DECAY_SHARE_EPISODIC,
            Kind::Semantic => DECAY_SHARE_SEMANTIC,
            Kind::Procedural => DECAY_SHARE_PROCEDURAL,
        }
}

/// A namespace's decay clock: its epoch now, and the epoch lazy decay began.
#[derive(Debug, Clone, Copy)]
pub struct DecayClock {
    pub epoch: u64,
    pub lazy_from: u64,
}

impl DecayClock {
    /// The epoch `m`'s stored importance is as of.
    pub fn base(&self, m: &Memory) -> u64 {
        serde_json::from_str::<serde_json::Value>(&m.attributes)
            .ok()
            .and_then(|a| a[ATTR_DECAY_EPOCH].as_u64())
            .unwrap_or_else(|| m.created_epoch.max(self.lazy_from))
    }

    /// `m`'s importance now.
    pub fn importance(&self, m: &Memory) -> f32 {
        if m.decay_rate <= 0.0 || m.importance <= 0.0 {
            return m.importance;
        }
        let epochs = self.epoch.saturating_sub(self.base(m));
        (m.importance - per_epoch(m.kind) * epochs as f32).max(0.0)
    }

    /// `m` with its importance now, as of now.
    pub fn settle(&self, m: &mut Memory) {
        m.importance = self.importance(m);
        super::plan::set_attr(m, ATTR_DECAY_EPOCH, serde_json::json!(self.epoch));
    }
}

impl<P: Ports> Engine<P> {
    /// `namespace`'s decay clock. Before its first lazy cycle, lazy decay
    /// begins now (everything older was decayed eagerly).
    pub(crate) fn decay_clock(&self, namespace: &str) -> CoreResult<DecayClock> {
        let epoch = self.epoch(namespace)?;
        let lazy_from = self
            .meta_number(&namespaced(META_LAZY_DECAY_FROM, namespace))?
            .unwrap_or(epoch);
        Ok(DecayClock { epoch, lazy_from })
    }

    /// Settles every memory (each by its namespace's clock).
    pub(crate) fn settle_all(&self, memories: &mut [Memory]) -> CoreResult<()> {
        let mut clocks: std::collections::BTreeMap<String, DecayClock> = Default::default();
        for m in memories {
            let clock = match clocks.get(&m.namespace) {
                Some(c) => *c,
                None => {
                    let c = self.decay_clock(&m.namespace)?;
                    clocks.insert(m.namespace.clone(), c);
                    c
                }
            };
            clock.settle(m);
        }
        Ok(())
    }

    /// Marks where lazy decay began in `namespace`, once (the cycle's apply).
    pub(super) fn mark_lazy_decay(&self, namespace: &str, before: u64) -> CoreResult<()> {
        let key = namespaced(META_LAZY_DECAY_FROM, namespace);
        if self.meta_number::<u64>(&key)?.is_none() {
            self.ports().storage().set_meta(&key, &before.to_string())?;
        }
        Ok(())
    }
}

/// The epoch's decay, lazily: no row is written for it. Counts the memories
/// that lose importance this epoch, and evicts Buffer memories whose
/// importance after it falls under the drop threshold. The cycle's copies
/// were settled as of the epoch before.
pub(super) fn decay(cycle: &mut Cycle) {
    let mut drop = Vec::new();
    let drop_below = cycle.limits.drop_below;
    for m in cycle.memories.values() {
        if !m.is_active() || m.decay_rate <= 0.0 || m.importance <= 0.0 {
            continue;
        }
        cycle.decayed += 1;
        let after = (m.importance - per_epoch(m.kind)).max(0.0);
        if m.layer == Layer::Buffer && after < drop_below {
            drop.push((m.id.clone(), after));
        }
    }
    for (id, importance) in drop {
        cycle.evict(
            &id,
            "decayed",
            format!("importance {importance:.3} under {drop_below}"),
        );
    }
}
