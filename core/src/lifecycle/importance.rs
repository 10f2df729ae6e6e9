//! Per-epoch importance decay by kind (seed 004 §2.6): counted in
//! consolidation cycles, not wall time, so an idle agent loses nothing.
//! Buffer memories decayed to nothing are evicted (restorable).

use super::cycle::Cycle;
use crate::model::*;
use crate::thresholds::*;

/// Epoch decay of importance by kind (protected memories keep theirs), then
/// eviction of Buffer memories decayed below the drop threshold.
pub(super) fn decay(cycle: &mut Cycle) {
    let mut drop = Vec::new();
    let drop_below = cycle.limits.drop_below;
    for m in cycle.memories.values_mut() {
        if !m.is_active() || m.decay_rate <= 0.0 || m.importance <= 0.0 {
            continue;
        }
        let share = match m.kind {
            Kind::Episodic => DECAY_SHARE_EPISODIC,
            Kind::Semantic => DECAY_SHARE_SEMANTIC,
            Kind::Procedural => DECAY_SHARE_PROCEDURAL,
        };
        m.importance = (m.importance - IMPORTANCE_DECAY * share).max(0.0);
        cycle.decayed += 1;
        cycle.dirty.insert(m.id.clone());
        if m.layer == Layer::Buffer && m.importance < drop_below {
            drop.push((m.id.clone(), m.importance));
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
