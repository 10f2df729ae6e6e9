//! Consolidation, facts, topics, resume, context and reflection against the
//! in-memory fakes (the scripted LLM stands in for the model).

use crate::model::*;
use crate::ports::Storage;
use crate::testing::FakePorts;
use crate::{CoreError, Engine};

fn engine() -> Engine<FakePorts> {
    Engine::new(FakePorts::default())
}

fn remember(e: &Engine<FakePorts>, text: &str, tags: &[&str], kind: Kind) -> Memory {
    e.remember(RememberRequest {
        namespace: "default".into(),
        content: text.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        kind: Some(kind),
        ..Default::default()
    })
    .expect("remember")
    .memory
}

fn get(e: &Engine<FakePorts>, id: &str) -> Memory {
    e.ports()
        .storage
        .get_memories(&[id.to_string()])
        .expect("get")
        .pop()
        .expect("stored")
}

/// One cycle that closes every pending session (no idle wait).
fn consolidate(e: &Engine<FakePorts>, dry: bool) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest {
        namespace: None,
        dry,
        if_changed: false,
        session_idle_minutes: Some(0),
    })
    .expect("consolidate")
}

fn set_counts(e: &Engine<FakePorts>, id: &str, access: u32, repetition: u32, importance: f32) {
    let mut m = get(e, id);
    m.access_count = access;
    m.repetition_count = repetition;
    m.importance = importance;
    e.ports().storage.update_memory(&m).expect("update");
}

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
        get(&e, &quiet.id).importance < 0.5,
        "importance decays per epoch"
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
    let a = remember(
        &e,
        "The user likes green tea in the morning",
        &[],
        Kind::Semantic,
    );
    let b = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: "the user likes green tea in the morning!!".into(),
            skip_dedup: true,
            ..Default::default()
        })
        .expect("remember")
        .memory;
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
        })
        .expect("consolidate")
    };
    assert!(!run(true).skipped);
    e.ports().clock.advance_hours(1);
    assert!(run(true).skipped);
    remember(&e, "Something new", &[], Kind::Semantic);
    assert!(!run(true).skipped);
}

fn cosine(a: &str, b: &str) -> f32 {
    use crate::ports::Embedder;
    let v = crate::testing::BowEmbedder::default()
        .embed(&[a.to_string(), b.to_string()])
        .expect("embed");
    crate::vector::cosine(&v[0], &v[1])
}

fn working(e: &Engine<FakePorts>, text: &str) -> Memory {
    let m = e
        .remember(RememberRequest {
            namespace: "default".into(),
            content: text.into(),
            skip_dedup: true,
            ..Default::default()
        })
        .expect("remember")
        .memory;
    let mut w = get(e, &m.id);
    w.layer = Layer::Working;
    e.ports().storage.update_memory(&w).expect("update");
    w
}

#[test]
fn the_llm_merges_near_duplicates_into_the_higher_layer() {
    let e = engine();
    let (a_text, b_text) = (
        "Alice's phone number is 555-1234 and she prefers calls after six",
        "Alice's phone number is 555-9876 and she prefers calls after six",
    );
    assert!(cosine(a_text, b_text) >= crate::thresholds::MERGE_SIM);
    let a = working(&e, a_text);
    let b = working(&e, b_text);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Merge,
        r#"{"merged": "Alice has two phone numbers, 555-1234 and 555-9876; she prefers calls after six"}"#,
    );
    let report = consolidate(&e, false);
    let merged: Vec<_> = report
        .actions
        .iter()
        .filter(|x| x.action == Action::Evict)
        .collect();
    assert_eq!(merged.len(), 1, "{report:?}");
    let (winner, loser) = if get(&e, &a.id).is_active() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    let w = get(&e, &winner.id);
    assert!(w.content.starts_with("Alice has two phone numbers"));
    assert_eq!(w.layer, Layer::Working);
    assert!(w.source_ids.contains(&loser.id));
    assert_eq!(get(&e, &loser.id).invalid_reason.as_deref(), Some("merged"));
    // The merged text got a fresh vector.
    let v = e.ports().storage.vectors.borrow();
    assert!(v.contains_key(&(Target::Memories, winner.id.clone())));
}

#[test]
fn a_merge_that_drops_most_of_the_text_is_refused() {
    let e = engine();
    working(
        &e,
        "Alice's phone number is 555-1234 and she prefers calls after six",
    );
    working(
        &e,
        "Alice's phone number is 555-9876 and she prefers calls after six",
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Merge,
        r#"{"merged": "Alice"}"#,
    );
    let report = consolidate(&e, false);
    assert!(
        report.warnings.iter().any(|w| w.contains("drops too much")),
        "{report:?}"
    );
    assert!(!report.actions.iter().any(|a| a.action == Action::Evict));
}

#[test]
fn reconcile_supersedes_stale_entries_and_remembers_distinct_pairs() {
    let e = engine();
    let (old_text, new_text) = (
        "The api deploy target is the staging cluster in Frankfurt",
        "The api deploy target moved to the production cluster",
    );
    let sim = cosine(old_text, new_text);
    assert!(sim > 0.55 && sim < 0.78, "premise: {sim}");
    let old = working(&e, old_text);
    e.ports().clock.advance_hours(2);
    let new = working(&e, new_text);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Reconcile,
        r#"{"decision": "update", "merged_content": "The api deploys to the production cluster in Dublin (moved from staging in Frankfurt)"}"#,
    );
    let report = consolidate(&e, false);
    assert!(
        report.actions.iter().any(|a| a.action == Action::Supersede),
        "{report:?}"
    );
    let stale = get(&e, &old.id);
    assert_eq!(stale.invalid_reason.as_deref(), Some("superseded"));
    assert_eq!(stale.superseded_by.as_deref(), Some(new.id.as_str()));
    assert_eq!(
        get(&e, &new.id).supersedes.as_deref(),
        Some(old.id.as_str())
    );

    // keep_both is remembered: the pair is not asked about again until one
    // of the two changes.
    let e = engine();
    working(&e, old_text);
    e.ports().clock.advance_hours(2);
    working(&e, new_text);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Reconcile,
        r#"{"decision": "keep_both"}"#,
    );
    consolidate(&e, false);
    let asked = |e: &Engine<FakePorts>| {
        e.ports()
            .llm
            .requests
            .borrow()
            .iter()
            .filter(|r| r.component == LlmComponent::Reconcile)
            .count()
    };
    assert_eq!(asked(&e), 1);
    e.ports().clock.advance_hours(1);
    consolidate(&e, false);
    assert_eq!(
        asked(&e),
        1,
        "nothing changed: a judged pair is not asked again"
    );
    let mut touched = get(
        &e,
        &e.list(ListRequest {
            namespace: "default".into(),
            limit: 1,
            ..Default::default()
        })
        .expect("list")[0]
            .id,
    );
    touched.modified_at = e.ports().clock.now.get() + 1;
    e.ports().storage.update_memory(&touched).expect("update");
    e.ports().clock.advance_hours(1);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Reconcile,
        r#"{"decision": "keep_both"}"#,
    );
    consolidate(&e, false);
    assert_eq!(asked(&e), 2, "one of them changed: the judgement expired");
    e.ports().clock.advance_hours(1);
    consolidate(&e, false);
    assert_eq!(asked(&e), 2, "judged again, and not asked a third time");
}

#[test]
fn session_notes_are_distilled_into_a_project_status() {
    let e = engine();
    for text in [
        "Session: wired the parser to the new lexer",
        "Session: fixed the flaky integration test",
        "Session: started on the release notes",
    ] {
        remember(&e, text, &["session"], Kind::Episodic);
    }
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Distill,
        r#"{"snapshot": "Parser on the new lexer; tests green; release notes in progress"}"#,
    );
    let report = consolidate(&e, false);
    let distill = report
        .actions
        .iter()
        .find(|a| a.action == Action::Distill)
        .expect("a distillation");
    let status = get(&e, &distill.memory_id);
    assert_eq!(status.layer, Layer::Working);
    assert!(status.tags.contains(&"auto-distilled".to_string()));
    assert_eq!(status.source_ids.len(), 3);
    let notes = e
        .list(ListRequest {
            namespace: "default".into(),
            tags: vec!["distilled".into()],
            limit: 10,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(notes.len(), 3);
}

#[test]
fn recall_walks_the_fact_graph() {
    let e = engine();
    let job = remember(
        &e,
        "Works in the research team since spring",
        &[],
        Kind::Semantic,
    );
    let city = remember(&e, "Initech's office is by the river", &[], Kind::Semantic);
    remember(&e, "Unrelated note about gardening", &[], Kind::Semantic);
    for (s, p, o, m) in [
        ("Alice", "works at", "Initech", &job),
        ("Initech", "located in", "Austin", &city),
    ] {
        e.add_fact(FactInput {
            namespace: "default".into(),
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            memory_id: Some(m.id.clone()),
            ..Default::default()
        })
        .expect("fact");
    }
    let r = e
        .recall(RecallRequest {
            namespace: "default".into(),
            query: "what about Alice?".into(),
            ..Default::default()
        })
        .expect("recall");
    assert!(r.channels_run.contains(&Channel::Fact));
    let ids: Vec<&str> = r.hits.iter().map(|h| h.item.id()).collect();
    assert_eq!(
        ids[..2],
        [job.id.as_str(), city.id.as_str()],
        "one hop, then two"
    );
    assert_eq!(r.hits[0].explanation.relevance, 1.0);
    assert!(
        r.hits[0]
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Fact)
    );
    // Filters hold for fact-linked memories too.
    let r = e
        .recall(RecallRequest {
            namespace: "default".into(),
            query: "what about Alice?".into(),
            layers: vec![Layer::Core],
            ..Default::default()
        })
        .expect("recall");
    assert!(r.hits.is_empty());
}

#[test]
fn the_review_runs_only_what_its_rules_allow() {
    let e = engine();
    let b = working(&e, "Prefer small pull requests with one change each");
    let other = working(&e, "The user reads release notes on Mondays");
    e.ports().clock.advance_hours(72);
    assert!(matches!(
        e.review(None, false),
        Err(CoreError::Unavailable(_))
    ));
    let sid = crate::prompts::short_id(&b.id).to_string();
    let oid = crate::prompts::short_id(&other.id).to_string();
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "promote", "ids": ["{sid}"], "reason": "a lasting rule"}},
                                    {{"op": "adjust", "ids": ["{oid}"], "importance": 0.2}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("audit");
    assert_eq!((r.executed, r.safety), (2, 1.0), "{r:?}");
    assert_eq!(get(&e, &b.id).layer, Layer::Core);
    assert!((get(&e, &other.id).importance - 0.2).abs() < 1e-6);

    // Mostly unsafe proposals: nothing runs, every refusal is logged.
    e.ports().clock.advance_hours(72);
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "delete", "ids": ["{oid}"]}},
                                    {{"op": "promote", "ids": ["{sid}"]}},
                                    {{"op": "demote", "ids": ["{sid}"]}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("audit");
    assert_eq!(r.executed, 0, "{r:?}");
    assert!(r.safety < crate::thresholds::REVIEW_SAFETY_THRESHOLD);
    assert_eq!(get(&e, &b.id).layer, Layer::Core);
    assert!(get(&e, &other.id).is_active());
    let audit = e.ports().storage.audit.borrow();
    assert!(
        audit
            .iter()
            .any(|a| a.action == Action::Review && a.detail.contains("no delete power"))
    );
}

#[test]
fn query_expansion_finds_what_the_words_miss() {
    let e = engine();
    let miso = remember(&e, "The user's feline is named Miso", &[], Kind::Semantic);
    remember(&e, "Deploys happen on Fridays", &[], Kind::Semantic);
    let ask = |expand: Option<bool>| {
        e.recall(RecallRequest {
            namespace: "default".into(),
            query: "what is my cat called".into(),
            expand,
            dry: true,
            ..Default::default()
        })
        .expect("recall")
    };
    // LLM off: asked for, expansion is skipped and says so.
    let r = ask(Some(true));
    assert!(r.warnings.iter().any(|w| w.contains("expansion skipped")));
    assert!(r.expansions.is_empty());

    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Expand,
        r#"{"phrases": ["feline named", "what is my cat called", "pet name", "猫的名字"]}"#,
    );
    let r = ask(Some(true));
    assert_eq!(r.expansions, ["feline named", "pet name", "猫的名字"]);
    assert_eq!(r.hits[0].item.id(), miso.id);

    // Unset: automatic, because the best relevance was weak.
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Expand,
        r#"{"phrases": ["feline named"]}"#,
    );
    let r = ask(None);
    assert_eq!(r.expansions, ["feline named"]);
    // Explicitly off: no LLM call.
    let before = e.ports().llm.requests.borrow().len();
    ask(Some(false));
    assert_eq!(e.ports().llm.requests.borrow().len(), before);
}

#[test]
fn rerank_reorders_the_page_and_explains_it() {
    let e = engine();
    for t in ["tea notes one", "tea notes two", "tea notes three"] {
        remember(&e, t, &[], Kind::Semantic);
    }
    let ask = || {
        e.recall(RecallRequest {
            namespace: "default".into(),
            query: "tea notes".into(),
            rerank: true,
            expand: Some(false),
            dry: true,
            ..Default::default()
        })
        .expect("recall")
    };
    let before = ask();
    assert!(!before.reranked && before.warnings.iter().any(|w| w.contains("rerank skipped")));
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Rerank,
        r#"{"order": [2, 2, 9, 0]}"#,
    );
    let after = ask();
    assert!(after.reranked);
    let ids = |r: &RecallResponse| {
        r.hits
            .iter()
            .map(|h| h.item.id().to_string())
            .collect::<Vec<_>>()
    };
    let b = ids(&before);
    assert_eq!(ids(&after), [b[2].clone(), b[0].clone(), b[1].clone()]);
    assert!(
        after.hits[0]
            .explanation
            .notes
            .iter()
            .any(|n| n.starts_with("rerank: position 1"))
    );
    // A malformed answer keeps the order.
    e.ports()
        .llm
        .script(LlmLevel::Auto, LlmComponent::Rerank, "nope");
    let kept = ask();
    assert!(!kept.reranked && ids(&kept) == b);
}

#[test]
fn the_buffer_cap_and_buffer_dedup_never_evict_a_confirmed_memory() {
    let e = engine();
    // A confirmed fact, the weakest of the Buffer by every measure.
    let kept = e
        .remember(RememberRequest {
            content: "my blood type is O negative".into(),
            importance: Some(0.0),
            ..Default::default()
        })
        .expect("remember")
        .memory;
    e.confirm("", &kept.id).expect("confirm");
    for i in 0..crate::thresholds::BUFFER_CAP + 3 {
        e.remember(RememberRequest {
            content: format!("note number {i} about topic {}", i * 7919 % 1000),
            skip_dedup: true,
            importance: Some(0.9),
            ..Default::default()
        })
        .expect("remember");
    }
    // A near duplicate of the confirmed fact, stronger than it.
    let twin = e
        .remember(RememberRequest {
            content: "my blood type is O negative!".into(),
            skip_dedup: true,
            importance: Some(1.0),
            ..Default::default()
        })
        .expect("remember")
        .memory;
    set_counts(&e, &twin.id, 1, 1, 1.0);
    let report = consolidate(&e, false);
    assert!(get(&e, &kept.id).is_active(), "the confirmed fact stays");
    let evicted = report
        .actions
        .iter()
        .filter(|a| a.action == Action::Evict)
        .count();
    assert_eq!(evicted, 5, "the cap still holds: 205 → 200");
    assert!(
        !report
            .actions
            .iter()
            .any(|a| a.memory_id == kept.id && a.action == Action::Evict),
        "never the protected one"
    );
}

#[test]
fn a_review_merge_across_namespaces_lands_only_in_default() {
    let e = engine();
    let shared = working(&e, "The user writes Rust at work and at home");
    let project = |ns: &str, text: &str| {
        let m = e
            .remember(RememberRequest {
                namespace: ns.into(),
                content: text.into(),
                skip_dedup: true,
                ..Default::default()
            })
            .expect("remember")
            .memory;
        let mut w = get(&e, &m.id);
        w.layer = Layer::Core;
        w.importance = 1.0;
        e.ports().storage.update_memory(&w).expect("update");
        w
    };
    // The project's copy is stronger (Core, importance 1): it would win.
    let p = project("proj", "The user writes Rust at work and at home, daily");
    let q = project("other", "The user writes Rust daily");
    e.ports().clock.advance_hours(72);
    let (s, p_id, q_id) = (
        crate::prompts::short_id(&shared.id).to_string(),
        crate::prompts::short_id(&p.id).to_string(),
        crate::prompts::short_id(&q.id).to_string(),
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "merge", "ids": ["{p_id}", "{q_id}"], "layer": "core",
                "content": "The user writes Rust daily, at work and at home"}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("review");
    assert_eq!(r.executed, 0, "{r:?}");
    assert!(
        r.ops[0].verdict.contains("only in `default`"),
        "two project namespaces never merge: {:?}",
        r.ops[0]
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Review,
        &format!(
            r#"{{"operations": [{{"op": "merge", "ids": ["{s}", "{p_id}"], "layer": "core",
                "content": "The user writes Rust at work and at home, daily"}}]}}"#
        ),
    );
    let r = e.review(None, false).expect("review");
    assert_eq!(r.executed, 1, "{r:?}");
    let merged = get(&e, &shared.id);
    assert!(merged.is_active(), "default's memory survives the merge");
    assert_eq!(
        merged.content,
        "The user writes Rust at work and at home, daily"
    );
    assert!(
        !get(&e, &p.id).is_active(),
        "the project's copy went into it"
    );
    assert!(get(&e, &q.id).is_active());
}

#[test]
fn a_correction_changes_what_recall_shows_first() {
    let e = engine();
    let old = e
        .remember(RememberRequest {
            content: "Caroline lives in Berlin near the river".into(),
            importance: Some(0.9),
            ..Default::default()
        })
        .expect("remember")
        .memory;
    e.ports().clock.advance_hours(1);
    let new = e
        .remember(RememberRequest {
            content: "Caroline lives in Paris now".into(),
            importance: Some(0.3),
            ..Default::default()
        })
        .expect("remember")
        .memory;
    let ask = |e: &Engine<FakePorts>| {
        e.recall(RecallRequest {
            query: "where does Caroline live".into(),
            dry: true,
            ..Default::default()
        })
        .expect("recall")
    };
    // Before the correction the older, more important memory ranks first.
    assert_eq!(ask(&e).hits[0].item.id(), old.id);
    let fact = |object: &str, memory: &Memory| FactInput {
        subject: "Caroline".into(),
        predicate: "lives in".into(),
        object: object.into(),
        memory_id: Some(memory.id.clone()),
        exclusive: true,
        ..Default::default()
    };
    e.add_fact(fact("Berlin", &old)).expect("fact");
    e.add_fact(fact("Paris", &new)).expect("fact");
    let r = ask(&e);
    assert_eq!(r.hits[0].item.id(), new.id, "the correction ranks first");
    let stale = r
        .hits
        .iter()
        .find(|h| h.item.id() == old.id)
        .expect("still found");
    assert!(
        stale
            .explanation
            .notes
            .iter()
            .any(|n| n.contains("superseded")),
        "and says why the old value fell: {:?}",
        stale.explanation.notes
    );
}

#[test]
fn conflicts_are_found_whatever_the_spelling() {
    let e = engine();
    let add = |s: &str, p: &str, o: &str| {
        e.add_fact(FactInput {
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            ..Default::default()
        })
        .expect("fact")
    };
    let berlin = add("Caroline", "lives in", "Berlin").fact;
    add("caroline ", "lives-in", "Paris");
    // The same triple in another case is the stored fact, not a new one.
    assert_eq!(add("Caroline", "Lives in", "berlin").fact.id, berlin.id);
    add("Mel", "likes", "tea");
    let pairs = e.fact_conflicts("").expect("conflicts");
    let objects: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.object.clone(), b.object.clone()))
        .collect();
    assert_eq!(
        objects.len(),
        1,
        "`lives in` and `lives-in` are one predicate: {objects:?}"
    );
    let (a, b) = &objects[0];
    assert!(a != b && [a, b].contains(&&"Paris".to_string()));
}

fn say(e: &Engine<FakePorts>, session: &str, role: &str, text: &str) {
    e.ingest(Turn {
        namespace: "default".into(),
        session_id: session.into(),
        role: role.into(),
        content: text.into(),
        event_time: None,
        attributes: None,
    })
    .expect("ingest");
}

fn cycle_as_scheduled(e: &Engine<FakePorts>) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest::default())
        .expect("consolidate")
}

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
    assert_eq!(r.facts_added, 1, "the first chunk's fact is kept");
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
    assert_eq!(asked.len(), 3);
    assert!(
        asked[2].contains(&format!("turn number {chunk} ")),
        "{}",
        asked[2]
    );
    assert!(
        !asked[2].contains("turn number 0 "),
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
