//! The lifecycle's markers (`gate-rejected…`, `_triaged`, `distilled`) are
//! state, not user tags: they work on a memory with all 20 user tags, an
//! edit of the tags keeps them, and the tag cleanup of seed 004 §3 step 1
//! drops the stale and orphaned ones. Beside them, the other Working/Core
//! housekeeping: the Core overlap scan and what the review is shown.

use super::support::*;
use crate::Engine;
use crate::model::*;
use crate::ports::Storage;
use crate::testing::FakePorts;
use crate::thresholds::{MAX_TAGS, TAG_CLEANUP_EPOCHS};

fn full_tags() -> Vec<String> {
    (0..MAX_TAGS).map(|i| format!("t{i}")).collect()
}

/// A Working memory that is a Core candidate the heuristic gate rejects.
fn candidate(e: &Engine<FakePorts>, tags: Vec<String>) -> Memory {
    let m = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: "The standup moved to 10am on Tuesday".into(),
            tags,
            ..Default::default()
        })
        .expect("remember")
        .memory;
    let mut w = get(e, &m.id);
    w.layer = Layer::Working;
    w.access_count = 3;
    w.repetition_count = 1;
    w.importance = 0.9;
    e.ports().storage.update_memory(&w).expect("update");
    w
}

fn set_epoch(e: &Engine<FakePorts>, epoch: u64) {
    e.ports()
        .storage
        .set_meta("epoch:default", &epoch.to_string())
        .expect("meta");
}

fn has(m: &Memory, tag: &str) -> bool {
    m.tags.iter().any(|t| t == tag)
}

#[test]
fn gate_rejections_escalate_on_a_memory_with_twenty_tags() {
    let e = engine();
    let m = candidate(&e, full_tags());
    consolidate(&e, false);
    let first = get(&e, &m.id);
    assert!(has(&first, "gate-rejected"), "{:?}", first.tags);
    assert_eq!(first.user_tags().count(), MAX_TAGS, "no user tag lost");
    // After the first cooldown the gate asks again and escalates.
    set_epoch(&e, 60);
    consolidate(&e, false);
    let second = get(&e, &m.id);
    assert!(has(&second, "gate-rejected-2"), "{:?}", second.tags);
    assert!(!has(&second, "gate-rejected"));
}

#[test]
fn an_edit_of_the_tags_keeps_the_markers_and_markers_are_not_counted() {
    let e = engine();
    let m = candidate(&e, vec!["work".into()]);
    consolidate(&e, false);
    assert!(has(&get(&e, &m.id), "gate-rejected"));
    let edited = e
        .update(
            "default",
            &m.id,
            MemoryPatch {
                tags: Some(full_tags()),
                ..Default::default()
            },
        )
        .expect("twenty user tags fit beside the markers");
    assert!(has(&edited, "gate-rejected"), "{:?}", edited.tags);
    assert!(!has(&edited, "work"));
    // Twenty-one user tags are refused; markers in a request do not count.
    let mut too_many = full_tags();
    too_many.push("one-more".into());
    assert!(
        e.update(
            "default",
            &m.id,
            MemoryPatch {
                tags: Some(too_many),
                ..Default::default()
            }
        )
        .is_err()
    );
    let mut with_marker = full_tags();
    with_marker.push("_triaged".into());
    assert!(crate::validate::tags(&with_marker).is_ok());
}

#[test]
fn tag_cleanup_drops_stale_rejections_and_orphaned_promotion_tags() {
    let e = engine();
    let m = candidate(&e, vec!["promotion".into()]);
    consolidate(&e, false);
    let rejected = get(&e, &m.id);
    assert!(has(&rejected, "gate-rejected"));
    assert!(
        !has(&rejected, "promotion"),
        "orphaned in Working: {:?}",
        rejected.tags
    );
    let audit = e.ports().storage.audit.borrow().clone();
    assert!(
        audit
            .iter()
            .any(|d| d.action == Action::Cleanup && d.detail.contains("promotion")),
        "{audit:?}"
    );

    // Read after the rejection: not stale, whatever the epochs.
    e.ports().clock.advance_hours(1);
    e.ports()
        .storage
        .touch_memories(
            std::slice::from_ref(&m.id),
            crate::ports::Clock::now(&e.ports().clock),
        )
        .expect("touch");
    set_epoch(&e, TAG_CLEANUP_EPOCHS + 10);
    let mut quiet = get(&e, &m.id);
    quiet.access_count = 0;
    quiet.repetition_count = 0; // not a candidate: only the cleanup acts
    e.ports().storage.update_memory(&quiet).expect("update");
    consolidate(&e, false);
    assert!(has(&get(&e, &m.id), "gate-rejected"));

    // Not read since the rejection, for TAG_CLEANUP_EPOCHS: dropped.
    let mut unread = get(&e, &m.id);
    unread.last_accessed = None;
    e.ports().storage.update_memory(&unread).expect("update");
    consolidate(&e, false);
    let clean = get(&e, &m.id);
    assert!(!has(&clean, "gate-rejected"), "{:?}", clean.tags);
    assert_eq!(clean.layer, Layer::Working);
}

#[test]
fn the_review_sees_what_its_rules_let_it_act_on() {
    let e = engine();
    let old = candidate(&e, vec!["work".into()]);
    e.ports().clock.advance_hours(72);
    // More recent changes than the review shows at once, all too fresh
    // for its 24 h rule.
    for i in 0..crate::thresholds::REVIEW_MAX_MEMORIES + 5 {
        working(&e, &format!("Release note {i}: build {} shipped", i * 31));
    }
    assert_eq!(
        e.ports().storage.memories.borrow().len(),
        crate::thresholds::REVIEW_MAX_MEMORIES as usize + 6
    );
    let short = crate::prompts::short_id(&old.id).to_string();
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "adjust", "ids": ["{short}"], "importance": 0.3}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("review");
    assert_eq!(r.executed, 1, "{r:?}");
    assert!((get(&e, &old.id).importance - 0.3).abs() < 1e-6);
    let asked = e.ports().llm.requests.borrow();
    let prompt = &asked.last().expect("asked").messages[1].content;
    assert!(prompt.contains(&short), "the eligible memory was shown");
}

#[test]
fn core_overlaps_are_flagged_once_until_one_changes() {
    let e = engine();
    let core = |text: &str| in_layer(&e, text, &[], Layer::Core);
    let a = core("Always run the full test suite before pushing to main");
    let b = core("Always run the test suite before pushing to the main branch");
    core("The user's cat is called Miso");
    let flagged = |r: &ConsolidateReport| {
        r.actions
            .iter()
            .filter(|x| x.action == Action::Overlap)
            .count()
    };
    let first = consolidate(&e, false);
    assert_eq!(flagged(&first), 1, "{first:?}");
    let d = &first
        .actions
        .iter()
        .find(|x| x.action == Action::Overlap)
        .expect("flag")
        .detail;
    assert!(d.contains(&a.id) || d.contains(&b.id), "{d}");
    assert_eq!(flagged(&consolidate(&e, false)), 0, "flagged once");
    e.ports().clock.advance_hours(1);
    e.update(
        "default",
        &a.id,
        MemoryPatch {
            content: Some(
                "Always run the full test suite before pushing to main, no exceptions".into(),
            ),
            ..Default::default()
        },
    )
    .expect("edit");
    assert_eq!(
        flagged(&consolidate(&e, false)),
        1,
        "a change raises it again"
    );
    assert!(
        e.ports()
            .storage
            .audit
            .borrow()
            .iter()
            .any(|x| x.action == Action::Overlap)
    );
}
