//! Sessions: the idle rule, the per-session watermark, failed chunks,
//! per-namespace epochs.

use super::support::*;
use crate::model::*;

#[test]
fn a_live_session_waits_and_later_turns_are_consolidated_from_the_watermark() {
    let e = engine();
    say(&e, "s1", "Caroline", "Hi Mel! I live in Berlin now.");
    // Still talking: the 30-minute cycle leaves the session open.
    let r = cycle_as_scheduled(&e);
    assert!(r.sessions.is_empty(), "{r:?}");
    e.ports().clock.advance_hours(1);
    let r = cycle_as_scheduled(&e);
    assert_eq!(r.sessions, ["s1"], "idle for an hour: consolidated");
    assert_eq!(r.facts_added, 1);
    let berlin = e
        .query_facts(FactQuery {
            subject: Some("caroline".into()),
            ..Default::default()
        })
        .expect("facts")[0]
        .clone();
    let memory_id = berlin.memory_id.clone().expect("memory");
    let reps = get(&e, &memory_id).repetition_count;
    // The conversation goes on later: the session re-opens, and only the new
    // turn is read — the first fact is not reinforced a second time.
    say(&e, "s1", "Caroline", "My favourite city is Lisbon though.");
    e.ports().clock.advance_hours(1);
    let r = cycle_as_scheduled(&e);
    assert_eq!(r.sessions, ["s1"]);
    assert_eq!(r.facts_added, 1, "{r:?}");
    assert_eq!(get(&e, &memory_id).repetition_count, reps);
    // A newer session closes an older one without waiting.
    say(&e, "s2", "Caroline", "I live in Paris these days.");
    let clock = &e.ports().clock;
    clock.now.set(clock.now.get() + 60_000);
    say(&e, "s3", "Caroline", "Hello again.");
    let r = cycle_as_scheduled(&e);
    assert_eq!(r.sessions, ["s2"], "s3 is live; s2 has a newer session");
}

#[test]
fn a_failed_chunk_resumes_after_the_chunks_that_went_through() {
    let e = engine();
    let chunk = crate::thresholds::CONSOLIDATION_CHUNK as usize;
    for i in 0..chunk + 5 {
        say(&e, "s1", "user", &format!("turn number {i} of a long talk"));
    }
    let fact = |text: &str| {
        format!(r#"{{"facts": [{{"content": "{text}", "kind": "semantic", "turns": [0]}}]}}"#)
    };
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Extract,
        &fact("The user talks at length"),
    );
    // The step shows the model its error once (prompts/repair.rs): both
    // answers are bad.
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Extract,
        "truncated {\"facts\": [",
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Extract,
        "truncated {\"facts\": [",
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Extract,
        &fact("The user likes counting turns"),
    );
    e.ports().clock.advance_hours(1);
    let r = cycle_as_scheduled(&e);
    assert!(r.sessions.is_empty() && !r.warnings.is_empty(), "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("after one retry")),
        "{r:?}"
    );
    assert_eq!(r.facts_added, 1, "the first chunk's fact is kept");
    // After its backoff (`guard/waiting.rs`) the session is tried again.
    e.ports().clock.advance_hours(1);
    let r = cycle_as_scheduled(&e);
    assert_eq!(r.sessions, ["s1"], "{r:?}");
    assert_eq!(r.facts_added, 1, "only the second chunk was read again");
    let asked: Vec<String> = e
        .ports()
        .llm
        .requests
        .borrow()
        .iter()
        .filter(|q| q.component == LlmComponent::Extract)
        .map(|q| q.messages[1].content.clone())
        .collect();
    assert_eq!(asked.len(), 4);
    assert_eq!(asked[1], asked[2], "the retry asks about the same chunk");
    assert!(
        asked[3].contains(&format!("turn number {chunk} ")),
        "{}",
        asked[3]
    );
    assert!(
        !asked[3].contains("turn number 0 "),
        "the first chunk is not read twice"
    );
}

#[test]
fn a_namespace_cycle_leaves_other_namespaces_epoch_and_watermark_alone() {
    let e = engine();
    let note = |ns: &str, text: &str| {
        e.remember(RememberRequest {
            namespace: ns.into(),
            content: text.into(),
            ..Default::default()
        })
        .expect("remember")
        .memory
    };
    let cycle = |ns: Option<&str>, if_changed: bool| {
        e.consolidate(ConsolidateRequest {
            namespace: ns.map(String::from),
            if_changed,
            ..Default::default()
        })
        .expect("consolidate")
    };
    note("alpha", "alpha keeps its own notes");
    note("beta", "beta keeps its own notes");
    assert_eq!(cycle(None, false).epoch, 1);
    e.ports().clock.advance_hours(1);
    // Written in beta, then a cycle of alpha alone.
    note("beta", "beta wrote this after the last whole cycle");
    e.ports().clock.advance_hours(1);
    assert_eq!(cycle(Some("alpha"), false).epoch, 2, "alpha's second cycle");
    // The whole-store interval cycle still sees beta's write.
    let r = cycle(None, true);
    assert!(!r.skipped, "beta's write is not hidden by alpha's cycle");
    // Each namespace counted its own cycles: alpha 3, beta 2.
    assert_eq!(note("alpha", "alpha after three cycles").created_epoch, 3);
    assert_eq!(note("beta", "beta after two cycles").created_epoch, 2);
}
