//! Every change of a memory's text keeps the state it replaced: edits,
//! LLM merges and reconcile updates, review merges, reverts. Each test here
//! fails on a core that overwrites in place.

use super::support::*;
use crate::model::*;
use crate::testing::FakePorts;
use crate::{CoreError, Engine};

fn edit(e: &Engine<FakePorts>, id: &str, content: &str) -> Memory {
    e.update(
        "default",
        id,
        MemoryPatch {
            content: Some(content.into()),
            ..Default::default()
        },
    )
    .expect("update")
}

#[test]
fn an_edit_keeps_the_earlier_text_and_a_revert_puts_it_back() {
    let e = engine();
    let m = remember(&e, "The user lives in Lisbon", &["home"], Kind::Semantic);
    assert!(e.history("default", &m.id).expect("history").is_empty());

    e.ports().clock.advance_hours(1);
    let edited = edit(&e, &m.id, "The user lives in Porto");
    assert_eq!(edited.content, "The user lives in Porto");
    let h = e.history("default", &m.id).expect("history");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].seq, 1);
    assert_eq!(h[0].action, Action::Edit);
    assert_eq!(h[0].memory.content, "The user lives in Lisbon");
    assert_eq!(h[0].memory.tags, vec!["home".to_string()]);

    // An edit that changes nothing keeps no version.
    edit(&e, &m.id, "The user lives in Porto");
    assert_eq!(e.history("default", &m.id).expect("history").len(), 1);

    let back = e.revert("default", &m.id, 1).expect("revert");
    assert_eq!(back.content, "The user lives in Lisbon");
    assert_eq!(get(&e, &m.id).content, "The user lives in Lisbon");
    let h = e.history("default", &m.id).expect("history");
    assert_eq!(h.len(), 2, "the revert is undoable: {h:?}");
    assert_eq!(h[1].action, Action::Revert);
    assert_eq!(h[1].memory.content, "The user lives in Porto");
    // The reverted text is what search finds.
    let v = e.ports().storage.vectors.borrow();
    assert!(v.contains_key(&(Target::Memories, m.id.clone())));
    drop(v);
    let log = e.ports().storage.audit.borrow();
    assert!(log.iter().any(|d| d.action == Action::Edit));
    assert!(log.iter().any(|d| d.action == Action::Revert));
}

#[test]
fn reverts_refuse_unknown_versions_deleted_memories_and_other_namespaces() {
    let e = engine();
    let m = remember(&e, "The user prefers tea", &[], Kind::Semantic);
    edit(&e, &m.id, "The user prefers green tea");
    assert!(matches!(
        e.revert("default", &m.id, 7),
        Err(CoreError::NotFound(_))
    ));
    assert!(matches!(
        e.revert("other", &m.id, 1),
        Err(CoreError::NotFound(_))
    ));
    e.delete("default", &m.id, "test").expect("delete");
    assert!(matches!(
        e.revert("default", &m.id, 1),
        Err(CoreError::Conflict(_))
    ));
    // The history stays readable in the trash.
    assert_eq!(e.history("default", &m.id).expect("history").len(), 1);
}

#[test]
fn an_llm_merge_keeps_the_winners_earlier_text_as_a_version() {
    let e = engine();
    let a = working(
        &e,
        "Alice's phone number is 555-1234 and she prefers calls after six",
    );
    let b = working(
        &e,
        "Alice's phone number is 555-9876 and she prefers calls after six",
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Merge,
        r#"{"merged": "Alice has two phone numbers, 555-1234 and 555-9876; she prefers calls after six"}"#,
    );
    consolidate(&e, false);
    let (winner, before) = if get(&e, &a.id).is_active() {
        (&a, &a.content)
    } else {
        (&b, &b.content)
    };
    let h = e.history("default", &winner.id).expect("history");
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].action, Action::Merge);
    assert_eq!(&h[0].memory.content, before);
    assert!(h[0].reason.contains("absorbed"), "{}", h[0].reason);
    // Undo: the winner's own text comes back; the loser waits in the trash.
    let back = e.revert("default", &winner.id, 1).expect("revert");
    assert_eq!(&back.content, before);
}

#[test]
fn a_reconcile_update_keeps_the_text_it_replaced() {
    let e = engine();
    let old = working(
        &e,
        "The api deploy target is the staging cluster in Frankfurt",
    );
    e.ports().clock.advance_hours(2);
    let new = working(&e, "The api deploy target moved to the production cluster");
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Reconcile,
        r#"{"decision": "update", "merged_content": "The api deploys to the production cluster in Dublin (moved from staging in Frankfurt)"}"#,
    );
    consolidate(&e, false);
    assert!(
        get(&e, &new.id).content.contains("Dublin"),
        "the merged text is applied"
    );
    let h = e.history("default", &new.id).expect("history");
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].action, Action::Supersede);
    assert_eq!(h[0].memory.content, new.content);
    // The superseded memory is in the trash, with its reason.
    let stale = get(&e, &old.id);
    assert_eq!(stale.invalid_reason.as_deref(), Some("superseded"));
}

#[test]
fn a_review_merge_keeps_the_winners_earlier_text() {
    let e = engine();
    let a = in_layer(
        &e,
        "The user writes Rust at work and at home",
        &[],
        Layer::Core,
    );
    let b = in_layer(&e, "The user writes Rust daily", &[], Layer::Core);
    e.ports().clock.advance_hours(72);
    let (x, y) = (
        crate::prompts::short_id(&a.id).to_string(),
        crate::prompts::short_id(&b.id).to_string(),
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "merge", "ids": ["{x}", "{y}"], "layer": "core",
                "content": "The user writes Rust daily, at work and at home"}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("review");
    assert_eq!(r.executed, 1, "{r:?}");
    let (winner, before) = if get(&e, &a.id).is_active() {
        (&a.id, &a.content)
    } else {
        (&b.id, &b.content)
    };
    let h = e.history("default", winner).expect("history");
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].action, Action::Merge);
    assert_eq!(&h[0].memory.content, before);
}

#[test]
fn versions_travel_through_export_lines_and_are_not_doubled() {
    let e = engine();
    let m = remember(&e, "The user lives in Lisbon", &[], Kind::Semantic);
    edit(&e, &m.id, "The user lives in Porto");
    let version = e.history("default", &m.id).expect("history").remove(0);
    let other = engine();
    let line = |v: MemoryVersion| ImportItem::Version(VersionLine { version: v });
    assert_eq!(
        other.import(line(version.clone())).expect("import"),
        ImportOutcome::Created
    );
    assert_eq!(
        other.import(line(version.clone())).expect("import"),
        ImportOutcome::Exists
    );
    let mut wrong = version;
    wrong.memory.id = "mem_other".into();
    wrong.seq = 2;
    assert!(matches!(
        other.import(line(wrong)),
        Err(CoreError::InvalidInput(_))
    ));
}

#[test]
fn a_close_restatement_is_merged_by_the_next_cycle_and_the_original_kept() {
    let e = engine();
    let (said, restated) = (
        "The user's sister Anna lives in Porto near the river",
        "The user's sister Anna lives in Porto near the river now",
    );
    let first = remember(&e, said, &[], Kind::Semantic);
    // With the LLM off a restatement is only kept, never marked.
    let out = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: restated.into(),
            ..Default::default()
        })
        .expect("remember");
    assert_eq!(out.memory.id, first.id, "a duplicate reinforces");
    assert!(out.similarity.unwrap_or(0.0) > crate::thresholds::INSERT_MERGE_SIM);
    assert!(!out.memory.attributes.contains("merge_pending"));

    // With an LLM: marked, no call on the request path, merged by the cycle.
    e.ports()
        .llm
        .script(LlmLevel::Auto, LlmComponent::Merge, r#"{"merged": "#);
    let calls = e.ports().llm.requests.borrow().len();
    let out = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: restated.into(),
            ..Default::default()
        })
        .expect("remember");
    assert_eq!(
        e.ports().llm.requests.borrow().len(),
        calls,
        "no LLM call on a write"
    );
    assert!(out.memory.attributes.contains(r#""merge_pending":true"#));
    e.ports().clock.advance_hours(1);
    let r = consolidate(&e, false);
    assert!(
        r.warnings.iter().any(|w| w.contains("insert-time merge")),
        "a malformed answer is reported: {r:?}"
    );
    assert_eq!(get(&e, &first.id).content, said, "and nothing half-applied");
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Merge,
        r#"{"merged": "The user's sister Anna now lives in Porto, near the river"}"#,
    );
    e.ports().clock.advance_hours(1);
    consolidate(&e, false);
    let merged = get(&e, &first.id);
    assert_eq!(
        merged.content,
        "The user's sister Anna now lives in Porto, near the river"
    );
    assert!(merged.attributes.contains(r#""merge_pending":false"#));
    let h = e.history("default", &first.id).expect("history");
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].memory.content, said, "the original is kept");
    assert!(h[0].reason.contains("insert-time merge"), "{}", h[0].reason);
}

/// A fact restated again and again keeps every wording (seed 4's sweep
/// lost "Reminder: my best friend's name is Carla" to twenty newer
/// copies): the same wording is one counted entry, and past the cap the
/// oldest wordings move to the memory's history, not away.
#[test]
fn restatements_past_the_cap_move_to_the_history() {
    let e = engine();
    let first = remember(&e, "My best friend is Carla", &[], Kind::Semantic);
    let restate = |text: &str| {
        e.remember(RememberRequest {
            namespace: "default".into(),
            content: text.into(),
            ..Default::default()
        })
        .expect("restate")
        .memory
    };
    for _ in 0..30 {
        restate("Again: my best friend is Carla");
    }
    let m = get(&e, &first.id);
    let attrs: serde_json::Value = serde_json::from_str(&m.attributes).unwrap();
    let list = attrs["restatements"].as_array().unwrap();
    assert_eq!(list.len(), 1, "one wording, counted: {list:?}");
    assert_eq!(list[0]["count"], 30);

    let wordings: Vec<String> = (0..25)
        .map(|i| format!("My best friend is Carla ({i})"))
        .collect();
    for w in &wordings {
        restate(w);
    }
    let m = get(&e, &first.id);
    let attrs: serde_json::Value = serde_json::from_str(&m.attributes).unwrap();
    let kept: Vec<String> = attrs["restatements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept.len(), crate::engine::MAX_RESTATEMENTS);
    let history = e.history("default", &first.id).unwrap();
    let archived = |text: &str| {
        history
            .iter()
            .any(|v| v.memory.attributes.contains(&format!("\"{text}\"")))
    };
    for w in wordings
        .iter()
        .map(String::as_str)
        .chain(["Again: my best friend is Carla"])
    {
        assert!(
            kept.iter().any(|k| k == w) || archived(w),
            "{w:?} is neither on the memory nor in its history"
        );
    }
    assert!(history.iter().all(|v| v.action == Action::Reinforce));
}
