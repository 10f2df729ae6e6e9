//! The consolidation cycle's heuristic steps, facts, topics, resume,
//! context and reflection against the in-memory fakes.

use super::support::*;
use crate::CoreError;
use crate::model::*;
use crate::ports::Storage;

#[test]
fn reinforced_memories_climb_the_layers_and_the_gate_follows_the_whitelist() {
    let e = engine();
    let rule = remember(
        &e,
        "Never force-push to the main branch",
        &[],
        Kind::Semantic,
    );
    let chatter = remember(
        &e,
        "The standup moved to 10am on Tuesday",
        &[],
        Kind::Semantic,
    );
    let quiet = remember(
        &e,
        "Bob mentioned a new coffee place downtown",
        &[],
        Kind::Semantic,
    );
    set_counts(&e, &rule.id, 3, 1, 0.9); // score 5.5
    set_counts(&e, &chatter.id, 3, 1, 0.9);

    let dry = consolidate(&e, true);
    assert!(dry.dry);
    assert_eq!(
        dry.actions
            .iter()
            .filter(|a| a.action == Action::Promote)
            .count(),
        2
    );
    assert_eq!(
        get(&e, &rule.id).layer,
        Layer::Buffer,
        "a dry run writes nothing"
    );
    assert!(e.ports().storage.audit.borrow().is_empty());

    let first = consolidate(&e, false);
    assert_eq!(first.epoch, 1);
    assert_eq!(get(&e, &rule.id).layer, Layer::Working);
    assert_eq!(get(&e, &chatter.id).layer, Layer::Working);
    assert_eq!(get(&e, &quiet.id).layer, Layer::Buffer);
    assert!(
        e.get("default", &quiet.id).unwrap().importance < 0.5,
        "importance decays per epoch"
    );
    assert_eq!(
        get(&e, &quiet.id).importance,
        0.5,
        "lazily: no row is rewritten for it"
    );

    // Next cycle: both are Core candidates; only the rule passes the gate.
    let second = consolidate(&e, false);
    assert_eq!(second.epoch, 2);
    assert_eq!(get(&e, &rule.id).layer, Layer::Core);
    let rejected = get(&e, &chatter.id);
    assert_eq!(rejected.layer, Layer::Working);
    assert!(rejected.tags.contains(&"gate-rejected".to_string()));
    // Within the cooldown the rejected memory is not asked again.
    let third = consolidate(&e, false);
    assert!(
        !third
            .actions
            .iter()
            .any(|a| a.memory_id == chatter.id && a.action == Action::GateReject)
    );
    let audit = e.ports().storage.audit.borrow();
    assert!(
        audit
            .iter()
            .any(|a| a.action == Action::Promote && a.target_id == rule.id)
    );
    assert!(
        audit
            .iter()
            .any(|a| a.action == Action::GateReject && a.target_id == chatter.id)
    );
}

#[test]
fn the_llm_gate_decides_uncertain_candidates_in_auto_mode() {
    let e = engine();
    let m = remember(
        &e,
        "Alice is the user's sister and lives in Lyon",
        &[],
        Kind::Semantic,
    );
    set_counts(&e, &m.id, 5, 1, 0.9);
    consolidate(&e, false); // Buffer → Working, LLM off
    let handle = crate::prompts::short_id(&m.id).to_string();
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Gate,
        &format!(r#"{{"decisions": [{{"id": "{handle}", "decision": "approve", "reason": "identity"}}]}}"#),
    );
    e.ports()
        .llm
        .script(LlmLevel::Auto, LlmComponent::Triage, r#"{"decisions": []}"#);
    let report = consolidate(&e, false);
    assert_eq!(get(&e, &m.id).layer, Layer::Core, "{report:?}");
    let asked = e.ports().llm.requests.borrow();
    assert!(
        asked
            .iter()
            .any(|r| r.component == LlmComponent::Gate && r.messages[1].content.contains(&handle))
    );
}

#[test]
fn a_malformed_llm_answer_changes_nothing_and_is_reported() {
    let e = engine();
    let m = remember(
        &e,
        "Carol enjoys long walks on the beach",
        &[],
        Kind::Semantic,
    );
    set_counts(&e, &m.id, 5, 1, 0.9);
    consolidate(&e, false);
    e.ports()
        .llm
        .script(LlmLevel::Full, LlmComponent::Gate, "this is not json");
    let report = consolidate(&e, false);
    assert_eq!(get(&e, &m.id).layer, Layer::Working);
    assert!(
        report.warnings.iter().any(|w| w.contains("gate skipped")),
        "{report:?}"
    );
}

#[test]
fn buffer_duplicates_fold_and_the_loser_is_restorable() {
    let e = engine();
    let (a, b) = buffer_duplicates(&e);
    let distinct = remember(
        &e,
        "The user likes black tea in the morning",
        &[],
        Kind::Semantic,
    );
    let report = consolidate(&e, false);
    let merged: Vec<_> = report
        .actions
        .iter()
        .filter(|x| x.action == Action::Merge)
        .collect();
    assert_eq!(merged.len(), 1, "{report:?}");
    let (winner, loser) = if get(&e, &a.id).is_active() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let gone = get(&e, &loser.id);
    assert_eq!(gone.invalid_reason.as_deref(), Some("merged"));
    assert_eq!(gone.superseded_by.as_deref(), Some(winner.id.as_str()));
    assert_eq!(get(&e, &winner.id).repetition_count, 1);
    assert!(
        get(&e, &distinct.id).is_active(),
        "a substitution is not a duplicate"
    );
    e.restore("default", &loser.id).expect("restore");
    assert!(get(&e, &loser.id).is_active());
}

#[test]
fn the_buffer_cap_evicts_the_weakest_softly() {
    let e = engine();
    let mut ids = Vec::new();
    for i in 0..crate::thresholds::BUFFER_CAP + 3 {
        let m = e
            .remember(RememberRequest {
                namespace: "default".into(),
                content: format!("note number {i} about topic {}", i * 7919 % 1000),
                skip_dedup: true,
                ..Default::default()
            })
            .expect("remember")
            .memory;
        ids.push(m.id);
        e.ports().clock.advance_hours(0);
    }
    let report = consolidate(&e, false);
    let evicted: Vec<_> = report
        .actions
        .iter()
        .filter(|a| a.action == Action::Evict)
        .collect();
    assert_eq!(evicted.len(), 3);
    let trash = e
        .list(ListRequest {
            namespace: "default".into(),
            deleted: true,
            limit: 50,
            ..Default::default()
        })
        .expect("trash");
    assert_eq!(trash.len(), 3);
    assert!(
        trash
            .iter()
            .all(|m| m.invalid_reason.as_deref() == Some("evicted"))
    );
}

#[test]
fn sessions_are_distilled_into_facts_once() {
    let e = engine();
    for (role, text) in [
        ("Caroline", "Hi Mel! I live in Berlin now."),
        ("Melanie", "Wow! My favourite city is Lisbon though."),
        ("Caroline", "I love hiking in the Alps, so Berlin works."),
    ] {
        e.ingest(Turn {
            namespace: "default".into(),
            session_id: "s1".into(),
            role: role.into(),
            content: text.into(),
            event_time: None,
            attributes: None,
        })
        .expect("ingest");
    }
    let report = consolidate(&e, false);
    assert_eq!(report.sessions, vec!["s1".to_string()]);
    assert_eq!(report.facts_added, 3, "{report:?}");
    let facts = e
        .query_facts(FactQuery {
            subject: Some("caroline".into()),
            ..Default::default()
        })
        .expect("facts");
    assert_eq!(facts.len(), 2);
    let lives = facts
        .iter()
        .find(|f| f.predicate == "lives in")
        .expect("lives in");
    let memory = get(&e, lives.memory_id.as_deref().unwrap_or_default());
    assert_eq!(memory.content, "Caroline lives in Berlin now");
    assert_eq!(
        memory.source_ids.len(),
        1,
        "provenance: the turn it came from"
    );
    assert_eq!(memory.session_id.as_deref(), Some("s1"));
    // Idempotent: the session is closed; a second cycle adds nothing.
    let again = consolidate(&e, false);
    assert!(again.sessions.is_empty());
    assert_eq!(again.facts_added, 0);
}

#[test]
fn llm_extraction_failure_leaves_the_session_pending() {
    let e = engine();
    e.ingest(Turn {
        namespace: "default".into(),
        session_id: "s1".into(),
        role: "user".into(),
        content: "I work at Initech.".into(),
        event_time: None,
        attributes: None,
    })
    .expect("ingest");
    e.ports()
        .llm
        .script(LlmLevel::Auto, LlmComponent::Extract, "{\"facts\": 7}");
    let report = consolidate(&e, false);
    assert!(report.sessions.is_empty());
    assert!(
        report.warnings.iter().any(|w| w.contains("s1")),
        "{report:?}"
    );
    assert_eq!(
        e.ports()
            .storage
            .pending_sessions("", None)
            .expect("pending")
            .len(),
        1
    );
    // The failed session waits out its backoff (`guard/waiting.rs`).
    e.ports().clock.advance_hours(1);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Extract,
        r#"{"facts": [{"content": "The user works at Initech", "subject": "user", "predicate": "works at", "object": "Initech", "single_valued": true, "turns": [0]}]}"#,
    );
    let report = consolidate(&e, false);
    assert_eq!(report.sessions, vec!["s1".to_string()]);
    assert_eq!(report.facts_added, 1);
}

#[test]
fn exclusive_facts_supersede_and_keep_history() {
    let e = engine();
    let add = |object: &str, exclusive: bool| {
        e.add_fact(FactInput {
            namespace: "default".into(),
            subject: "Alice".into(),
            predicate: "lives in".into(),
            object: object.into(),
            exclusive,
            ..Default::default()
        })
        .expect("add")
    };
    let paris = add("Paris", false);
    assert_eq!(
        add("paris", false).fact.id,
        paris.fact.id,
        "the same triple is not stored twice"
    );
    add("Rome", false);
    assert_eq!(e.fact_conflicts("default").expect("conflicts").len(), 1);
    let berlin = add("Berlin", true);
    assert_eq!(berlin.superseded.len(), 2);
    assert!(e.fact_conflicts("default").expect("conflicts").is_empty());
    let history = e
        .query_facts(FactQuery {
            subject: Some("alice".into()),
            include_invalid: true,
            ..Default::default()
        })
        .expect("history");
    assert_eq!(history.len(), 3);
    assert!(
        history
            .iter()
            .filter(|f| f.object != "Berlin")
            .all(|f| f.superseded_by.as_deref() == Some(berlin.fact.id.as_str()))
    );
    assert!(matches!(
        e.add_fact(FactInput {
            subject: " ".into(),
            predicate: "p".into(),
            object: "o".into(),
            ..Default::default()
        }),
        Err(CoreError::InvalidInput(_))
    ));
}

#[test]
fn the_fact_graph_walks_two_hops() {
    let e = engine();
    for (s, p, o) in [
        ("Alice", "works at", "Initech"),
        ("Initech", "located in", "Austin"),
        ("Austin", "in", "Texas"),
    ] {
        e.add_fact(FactInput {
            namespace: "default".into(),
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            ..Default::default()
        })
        .expect("add");
    }
    let one = e.fact_graph("default", "alice", 1).expect("graph");
    assert_eq!(one.len(), 1);
    let two = e.fact_graph("default", "alice", 5).expect("graph");
    assert_eq!(two.len(), 2, "hops are capped at two");
}

#[test]
fn resume_lists_core_recent_topics_and_triggers_without_touching() {
    let e = engine();
    let rule = remember(
        &e,
        "Always run cargo fmt before committing",
        &[],
        Kind::Procedural,
    );
    let mut m = get(&e, &rule.id);
    m.layer = Layer::Core;
    e.ports().storage.update_memory(&m).expect("update");
    remember(
        &e,
        "Deploy with the blue-green script",
        &["trigger:deploy"],
        Kind::Procedural,
    );
    remember(&e, "The cat is called Miso", &[], Kind::Semantic);
    e.rebuild_topics(None).expect("topics");
    let r = e
        .resume(ResumeRequest {
            namespace: "default".into(),
            hours: 24,
            context: None,
        })
        .expect("resume");
    assert_eq!(r.core.len(), 1);
    assert_eq!(r.recent.len(), 2);
    assert_eq!(r.triggers, vec!["deploy".to_string()]);
    assert!(!r.topics.is_empty());
    assert!(r.text.starts_with("=== Core (1) ===\nAlways run cargo fmt"));
    assert!(r.text.contains("=== Recent (24h) ==="));
    assert!(r.text.contains("Triggers: deploy"));
    assert_eq!(get(&e, &rule.id).access_count, 0, "resume never touches");
    let topic = &r.topics[0];
    let drilled = e
        .topics("default", std::slice::from_ref(&topic.id))
        .expect("topic");
    assert_eq!(drilled[0].memories.len() as u32, topic.size);
    assert!(matches!(
        e.topics("default", &["kb999".to_string()]),
        Err(CoreError::NotFound(_))
    ));
}

#[test]
fn context_injects_earlier_sessions_and_the_reflection() {
    let e = engine();
    let old = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: "The user is allergic to peanuts".into(),
            session_id: Some("old".into()),
            ..Default::default()
        })
        .expect("remember")
        .memory;
    e.remember(RememberRequest {
        namespace: "default".into(),
        content: "The user asked about peanuts allergy just now".into(),
        session_id: Some("current".into()),
        ..Default::default()
    })
    .expect("remember");
    let block = e
        .context(
            "default",
            "is the user allergic to peanuts?",
            Some("current"),
            5,
        )
        .expect("context");
    assert_eq!(block.memories.len(), 1);
    assert_eq!(block.memories[0].id, old.id);
    assert!(
        block
            .text
            .starts_with("## Relevant memory\n- The user is allergic to peanuts")
    );
    assert!(
        e.ports()
            .storage
            .audit
            .borrow()
            .iter()
            .any(|a| a.action == Action::Inject && a.target_id == old.id)
    );

    // Reflection: needs three memories of the week, then at most one in six days.
    let r = e.reflect("default", false).expect("reflect");
    assert!(r.skipped.is_some(), "two memories are not enough");
    remember(&e, "The user started learning Rust", &[], Kind::Semantic);
    let r = e.reflect("default", false).expect("reflect");
    let reflection = r.memory.expect("a reflection");
    assert_eq!(reflection.layer, Layer::Core);
    assert_eq!(reflection.decay_rate, 0.0);
    assert!(reflection.tags.contains(&"weekly".to_string()));
    assert!(
        e.reflect("default", false)
            .expect("reflect")
            .skipped
            .is_some()
    );
    let block = e
        .context("default", "peanuts", Some("current"), 5)
        .expect("context");
    assert!(block.text.contains("## Weekly insight\n"));
}

#[test]
fn interval_runs_skip_when_nothing_changed() {
    let e = engine();
    remember(&e, "Something to consolidate", &[], Kind::Semantic);
    let run = |if_changed| {
        e.consolidate(ConsolidateRequest {
            namespace: None,
            dry: false,
            if_changed,
            session_idle_minutes: None,
            ..Default::default()
        })
        .expect("consolidate")
    };
    assert!(!run(true).skipped);
    e.ports().clock.advance_hours(1);
    assert!(run(true).skipped);
    remember(&e, "Something new", &[], Kind::Semantic);
    assert!(!run(true).skipped);
}

#[test]
fn importance_decays_lazily_by_kind_and_a_settled_write_keeps_the_count() {
    use crate::thresholds::{DECAY_SHARE_EPISODIC, DECAY_SHARE_SEMANTIC, IMPORTANCE_DECAY};
    let e = engine();
    let fact = remember(&e, "The office plant is a fern", &[], Kind::Semantic);
    let event = remember(&e, "We watched the rain at noon", &[], Kind::Episodic);
    for _ in 0..4 {
        consolidate(&e, false);
    }
    let now = |id: &str| e.get("default", id).unwrap().importance;
    let expect = |share: f32, epochs: f32| 0.5 - IMPORTANCE_DECAY * share * epochs;
    assert!((now(&fact.id) - expect(DECAY_SHARE_SEMANTIC, 4.0)).abs() < 1e-6);
    assert!((now(&event.id) - expect(DECAY_SHARE_EPISODIC, 4.0)).abs() < 1e-6);
    // Untouched rows were never written for it.
    assert_eq!(get(&e, &fact.id).importance, 0.5);
    // An edit writes the settled value with its epoch: two more cycles
    // take two more epochs' worth, not six.
    e.update(
        "default",
        &fact.id,
        MemoryPatch {
            tags: Some(vec!["plants".into()]),
            ..Default::default()
        },
    )
    .unwrap();
    consolidate(&e, false);
    consolidate(&e, false);
    assert!((now(&fact.id) - expect(DECAY_SHARE_SEMANTIC, 6.0)).abs() < 1e-6);
    // A list shows the same.
    let listed = e
        .list(ListRequest {
            namespace: "default".into(),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    let f = listed.iter().find(|m| m.id == fact.id).unwrap();
    assert!((f.importance - expect(DECAY_SHARE_SEMANTIC, 6.0)).abs() < 1e-6);
}
