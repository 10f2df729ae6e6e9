//! A cycle reads what it can act on (`lifecycle/candidates.rs`), not the
//! store: quiet Working memories are not read, and what is due by time
//! (a gate candidate, an insert-time merge whose LLM failed) still is.

use super::support::*;
use crate::model::*;
use crate::ports::Storage;

#[test]
fn a_cycle_reads_what_changed_and_what_is_due_not_the_quiet_store() {
    let e = engine();
    let quiet: Vec<Memory> = (0..40)
        .map(|i| working(&e, &format!("quiet memory number {i} about item{i}")))
        .collect();
    let mut elsewhere = working(&e, "a memory of another namespace");
    elsewhere.namespace = "other".into();
    e.ports().storage.update_memory(&elsewhere).unwrap();
    e.ports().clock.advance_hours(1);
    let first = consolidate(&e, false);
    assert!(
        first.examined >= 41,
        "the first cycle reads every Working memory"
    );
    let epoch_other = e.epoch("other").unwrap();

    // Later: one old Working memory becomes a gate candidate without being
    // modified (its counts and importance changed by hand, modified_at not).
    e.ports().clock.advance_hours(1);
    let due = &quiet[7];
    set_counts(&e, &due.id, 5, 0, 0.9);
    let fresh = working(&e, "a memory written after the first cycle");
    let second = consolidate(&e, false);
    assert_eq!(
        second.examined, 2,
        "the gate candidate and the new memory, not the 40 quiet ones: {second:?}"
    );
    let judged = get(&e, &due.id);
    assert!(
        judged.layer == Layer::Core || judged.tags.iter().any(|t| t == "gate-rejected"),
        "the gate saw it: {judged:?}"
    );
    assert!(second.actions.iter().any(|a| a.memory_id == due.id));
    assert!(
        second
            .actions
            .iter()
            .all(|a| a.memory_id != fresh.id || a.action != Action::Evict)
    );
    // A namespace with no candidate still counts its epoch (lazy decay).
    assert_eq!(e.epoch("other").unwrap(), epoch_other + 1);
    for m in quiet.iter().filter(|m| m.id != due.id).take(5) {
        assert_eq!(get(&e, &m.id).modified_at, m.modified_at, "never written");
    }

    // Nothing written since and nothing to do: the cached trees stand
    // (a sentinel tree survives); a write makes the next cycle rebuild.
    let key = "topics:default";
    let sentinel = r#"[{"id":"kb1","name":"kept"}]"#;
    e.ports().storage.set_meta(key, sentinel).unwrap();
    e.ports().clock.advance_hours(1);
    let third = consolidate(&e, false);
    assert!(third.actions.is_empty(), "{third:?}");
    assert_eq!(
        e.ports().storage.get_meta(key).unwrap().as_deref(),
        Some(sentinel)
    );
    e.ports().clock.advance_hours(1);
    working(&e, "one more memory about the garden");
    consolidate(&e, false);
    assert_ne!(
        e.ports().storage.get_meta(key).unwrap().as_deref(),
        Some(sentinel)
    );
}
