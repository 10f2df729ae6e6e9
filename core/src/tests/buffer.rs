//! The Buffer with the LLM off (the default): the triage heuristic moves
//! what shows it is worth keeping to Working, so nothing read, restated or
//! extracted from dialogue is evicted by the cap; the cap and the drop
//! threshold are configurable and evict to the trash.

use super::support::*;
use crate::model::*;
use crate::ports::Storage;
use crate::testing::FakePorts;
use crate::thresholds::BUFFER_CAP;
use crate::{CoreError, Engine};

fn fact(e: &Engine<FakePorts>, i: usize) -> Memory {
    e.remember(RememberRequest {
        namespace: "default".into(),
        content: format!("Fact number {i}: the user owns item {}", i * 7919),
        tags: vec!["fact".into()],
        source: Some("consolidation".into()),
        skip_dedup: true,
        ..Default::default()
    })
    .expect("remember")
    .memory
}

fn cycle_with(e: &Engine<FakePorts>, cap: Option<u32>, drop: Option<f32>) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest {
        buffer_cap: cap,
        buffer_drop_below: drop,
        ..Default::default()
    })
    .expect("consolidate")
}

#[test]
fn with_the_llm_off_facts_past_the_cap_move_to_working_instead_of_the_trash() {
    let e = engine();
    let facts: Vec<Memory> = (0..BUFFER_CAP + 5).map(|i| fact(&e, i)).collect();
    e.ports().clock.advance_hours(1);
    let report = consolidate(&e, false);
    assert!(
        !report.actions.iter().any(|a| a.action == Action::Evict),
        "{:?}",
        report
            .actions
            .iter()
            .filter(|a| a.action == Action::Evict)
            .take(3)
            .collect::<Vec<_>>()
    );
    for f in &facts {
        let m = get(&e, &f.id);
        assert!(m.is_active());
        assert_eq!(m.layer, Layer::Working, "{}", m.content);
    }
    assert!(
        report
            .actions
            .iter()
            .any(|a| a.detail.contains("triage heuristic: a fact from dialogue")),
    );
}

#[test]
fn the_triage_heuristic_promotes_what_was_read_and_leaves_the_rest() {
    let e = engine();
    let read = remember(
        &e,
        "The user's dentist is on Baker Street",
        &[],
        Kind::Semantic,
    );
    let unread = remember(&e, "It rained a bit this morning", &[], Kind::Episodic);
    let young = remember(&e, "The user's gym opens at six", &[], Kind::Semantic);
    e.ports()
        .storage
        .touch_memories(std::slice::from_ref(&young.id), 0)
        .expect("touch");
    e.ports().clock.advance_hours(1);
    e.ports()
        .storage
        .touch_memories(std::slice::from_ref(&read.id), 0)
        .expect("touch");
    let fresh = remember(&e, "The user's cat is called Miso", &[], Kind::Semantic);
    e.ports()
        .storage
        .touch_memories(std::slice::from_ref(&fresh.id), 0)
        .expect("touch");
    consolidate(&e, false);
    assert_eq!(get(&e, &read.id).layer, Layer::Working);
    assert_eq!(get(&e, &young.id).layer, Layer::Working);
    assert_eq!(
        get(&e, &unread.id).layer,
        Layer::Buffer,
        "nothing shows it matters"
    );
    assert_eq!(
        get(&e, &fresh.id).layer,
        Layer::Buffer,
        "younger than the triage's ten minutes"
    );
}

#[test]
fn the_buffer_cap_and_drop_threshold_are_configurable_and_evict_to_the_trash() {
    let e = engine();
    let chatter: Vec<Memory> = (0..5)
        .map(|i| {
            remember(
                &e,
                &format!("Small talk line {i} about nothing"),
                &[],
                Kind::Episodic,
            )
        })
        .collect();
    let report = cycle_with(&e, Some(3), None);
    let evicted: Vec<&LifecycleAction> = report
        .actions
        .iter()
        .filter(|a| a.action == Action::Evict)
        .collect();
    assert_eq!(evicted.len(), 2, "{report:?}");
    assert!(evicted[0].detail.contains("cap of 3"));
    let trash: Vec<Memory> = chatter
        .iter()
        .map(|m| get(&e, &m.id))
        .filter(|m| !m.is_active())
        .collect();
    assert_eq!(trash.len(), 2);
    assert!(
        trash
            .iter()
            .all(|m| m.invalid_reason.as_deref() == Some("evicted"))
    );
    e.restore("default", &trash[0].id).expect("restorable");

    // A drop threshold above the remaining importance sends them to the trash.
    let report = cycle_with(&e, Some(100), Some(0.9));
    assert!(
        report
            .actions
            .iter()
            .any(|a| a.action == Action::Evict && a.detail.contains("under 0.9")),
        "{report:?}"
    );

    for (cap, drop) in [(Some(0), None), (None, Some(1.5)), (None, Some(-0.1))] {
        assert!(matches!(
            e.consolidate(ConsolidateRequest {
                buffer_cap: cap,
                buffer_drop_below: drop,
                ..Default::default()
            }),
            Err(CoreError::InvalidInput(_))
        ));
    }
}

#[test]
fn a_buffer_swollen_past_the_dedup_bound_is_capped_first_and_still_dedups() {
    let e = engine();
    let n = crate::thresholds::BUFFER_DEDUP_ALL_PAIRS + 100;
    for i in 0..n {
        e.remember(RememberRequest {
            namespace: "default".into(),
            content: format!("entry {i} about topic {} and item {}", i * 7, i * 13),
            skip_dedup: true,
            ..Default::default()
        })
        .expect("remember");
    }
    // The newest: kept by the first cap (oldest go first among equals).
    let (a, b) = buffer_duplicates(&e);
    let report = consolidate(&e, false);
    let merged = report.actions.iter().filter(|x| x.action == Action::Merge);
    assert_eq!(merged.count(), 1, "{report:?}");
    assert!(get(&e, &a.id).is_active() != get(&e, &b.id).is_active());
    let buffer = e
        .ports()
        .storage
        .list_memories(&ListQuery {
            layers: vec![Layer::Buffer],
            limit: 10_000,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(buffer.len(), BUFFER_CAP);
    // Nothing lost: every other memory is in the trash, with a reason.
    let trash = e
        .ports()
        .storage
        .list_memories(&ListQuery {
            state: ListState::Deleted,
            limit: 10_000,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(trash.len() + buffer.len(), n + 2);
    assert!(trash.iter().all(|m| m.invalid_reason.is_some()));
}
