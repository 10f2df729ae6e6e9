//! The lifecycle through the real core component over a real SQLite file:
//! consolidation (dry and real), session distillation into facts, the fact
//! graph, topics, resume, context injection and reflection — with the LLM
//! off, and with a scripted OpenAI-compatible LLM on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::llm_server::{Reply, Scripted, tool_reply};
use mnemo_core::model::*;
use serde_json::{Value, json};

fn turn(m: &mut mnemo_host::Mnemo, session: &str, role: &str, text: &str) -> IngestOutcome {
    m.ingest(Turn {
        session_id: session.into(),
        role: role.into(),
        content: text.into(),
        ..Default::default()
    })
    .unwrap()
}

fn consolidate(m: &mut mnemo_host::Mnemo, dry: bool) -> ConsolidateReport {
    m.consolidate(ConsolidateRequest {
        namespace: None,
        dry,
        if_changed: false,
        session_idle_minutes: Some(0),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn a_day_in_the_life_without_an_llm() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());

    // Two sessions of dialogue; the second one makes the first pending.
    turn(
        &mut m,
        "s1",
        "user",
        "Hi! I live in Lisbon and I work at Initech.",
    );
    turn(
        &mut m,
        "s1",
        "assistant",
        "Nice to meet you! I like helping.",
    );
    turn(&mut m, "s1", "user", "My favourite editor is Helix.");
    let out = turn(&mut m, "s2", "user", "Back again.");
    assert_eq!(out.pending_sessions, vec!["s1".to_string()]);

    // An important rule, restated: it gathers reinforcement.
    let rule = m
        .remember(RememberRequest {
            content: "Never deploy on Fridays without a rollback plan".into(),
            importance: Some(0.8),
            ..Default::default()
        })
        .unwrap();
    for _ in 0..2 {
        let again = common::remember(
            &mut m,
            "default",
            "Never deploy on Fridays without a rollback plan",
        );
        assert!(!again.created);
    }

    let dry = consolidate(&mut m, true);
    assert!(dry.dry && dry.sessions.len() == 2, "{dry:?}");
    assert_eq!(
        common::count(&m, "SELECT COUNT(*) FROM facts"),
        0,
        "a dry run writes nothing"
    );
    assert_eq!(
        common::count(
            &m,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'promote'"
        ),
        0
    );

    let report = consolidate(&mut m, false);
    assert_eq!(report.epoch, 1);
    assert_eq!(report.facts_added, 3, "{report:?}");
    assert!(
        report
            .actions
            .iter()
            .any(|a| a.action == Action::Promote && a.memory_id == rule.memory.id)
    );
    assert_eq!(
        m.get("default", &rule.memory.id).unwrap().layer,
        Layer::Working
    );
    assert_eq!(
        common::count(
            &m,
            "SELECT COUNT(*) FROM sessions WHERE consolidated_at IS NULL"
        ),
        0
    );
    assert!(
        common::count(
            &m,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'promote'"
        ) >= 1
    );

    // The facts, as triples and as memories with their provenance.
    let facts = m
        .query_facts(FactQuery {
            entity: Some("The user".into()),
            ..Default::default()
        })
        .unwrap();
    let mut objects: Vec<&str> = facts.iter().map(|f| f.object.as_str()).collect();
    objects.sort_unstable();
    assert_eq!(objects, ["Helix", "Initech", "Lisbon"]);
    let lives = facts.iter().find(|f| f.predicate == "lives in").unwrap();
    let memory = m
        .get("default", lives.memory_id.as_deref().unwrap())
        .unwrap();
    assert_eq!(memory.content, "The user lives in Lisbon");
    assert_eq!(memory.source_ids.len(), 1);

    // Moving supersedes; the history keeps both.
    let moved = m
        .add_fact(FactInput {
            subject: "The user".into(),
            predicate: "lives in".into(),
            object: "Porto".into(),
            exclusive: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(moved.superseded.len(), 1);
    let history = m
        .query_facts(FactQuery {
            subject: Some("the user".into()),
            predicate: Some("lives in".into()),
            include_invalid: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        m.fact_graph("default", "Initech", 2).unwrap().len(),
        3,
        "Initech → user → the rest"
    );

    // Second cycle: the reinforced rule passes the heuristic gate into Core.
    consolidate(&mut m, false);
    assert_eq!(
        m.get("default", &rule.memory.id).unwrap().layer,
        Layer::Core
    );

    // Topics were rebuilt by the cycle; resume shows every section.
    let resume = m
        .resume(ResumeRequest {
            namespace: "default".into(),
            hours: 24,
            context: None,
        })
        .unwrap();
    assert!(
        resume
            .text
            .starts_with("=== Core (1) ===\nNever deploy on Fridays"),
        "{}",
        resume.text
    );
    assert!(!resume.topics.is_empty());
    let ids = vec![resume.topics[0].id.clone()];
    let topic = m.topics("default", &ids).unwrap();
    assert_eq!(topic[0].memories.len() as u32, resume.topics[0].size);

    // Context for the current session: facts from the first one.
    let block = m
        .context("default", "where does the user live?", Some("s2"), 5)
        .unwrap();
    assert!(
        block.text.starts_with("## Relevant memory\n"),
        "{}",
        block.text
    );
    assert!(block.memories.iter().any(|x| x.content.contains("Lisbon")));
    assert!(common::count(&m, "SELECT COUNT(*) FROM audit_log WHERE action = 'inject'") >= 1);

    // The weekly reflection, then its six-day spacing.
    let r = m.reflect("default", false).unwrap();
    let reflection = r.memory.expect("enough memories this week");
    assert_eq!(
        (reflection.layer, reflection.decay_rate),
        (Layer::Core, 0.0)
    );
    assert!(m.reflect("default", false).unwrap().skipped.is_some());
    let block = m
        .context("default", "where does the user live?", Some("s2"), 5)
        .unwrap();
    assert!(block.text.contains("## Weekly insight\n"));
}

#[test]
fn the_llm_extracts_facts_gates_and_names_topics() {
    let s = Scripted::start();
    s.respond_with(|req| {
        let tool = req.body["tool_choice"]["function"]["name"].as_str().unwrap_or_default().to_string();
        let prompt = req.body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        match tool.as_str() {
            "save_facts" => tool_reply(
                "save_facts",
                json!({"facts": [
                    {"content": "Caroline adopted a dog named Rex in May 2023", "subject": "Caroline",
                     "predicate": "has dog", "object": "Rex", "turns": [0, 1]},
                    {"content": "Caroline hikes every weekend instead of running", "kind": "semantic", "importance": 0.9, "turns": [1]}
                ]}),
            ),
            "gate_decisions" => {
                // Approve whatever is asked about, by its short id.
                let ids: Vec<Value> = prompt
                    .lines()
                    .filter_map(|l| l.strip_prefix('[').and_then(|r| r.split(']').next()))
                    .map(|id| json!({"id": id, "decision": "approve", "reason": "identity"}))
                    .collect();
                tool_reply("gate_decisions", json!({ "decisions": ids }))
            }
            "triage_decisions" => tool_reply("triage_decisions", json!({ "decisions": [] })),
            "search_phrases" => tool_reply("search_phrases", json!({ "phrases": ["Caroline's dog Rex"] })),
            "rank_candidates" => tool_reply("rank_candidates", json!({ "order": [1, 0] })),
            "audit_operations" => tool_reply(
                "audit_operations",
                json!({ "operations": [{"op": "delete", "ids": ["whatever"], "reason": "tidy"}] }),
            ),
            "name_topics" => tool_reply("name_topics", json!({ "names": [{"id": "kb1", "name": "Caroline's pets"}] })),
            other => Reply::json(400, json!({ "error": format!("unexpected tool {other}") })),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.llm = common::scripted_llm(&s.base);
    // A clock the test moves: the review only looks at memories older
    // than 48 h and untouched for 24 h.
    let clock = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(1_767_225_600_000));
    cfg.clock = mnemo_host::clock::HostClock::driven(clock.clone());
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    turn(
        &mut m,
        "s1",
        "Caroline",
        "Guess what, I adopted a dog in May!",
    );
    turn(&mut m, "s1", "Melanie", "Amazing! What's his name?");
    turn(
        &mut m,
        "s1",
        "Caroline",
        "Rex. Also I'd rather hike than run these days.",
    );
    let report = consolidate(&mut m, false);
    assert_eq!(report.facts_added, 2, "{report:?}");
    let rex = m
        .query_facts(FactQuery {
            object: Some("rex".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(rex.len(), 1);
    let memory = m
        .get("default", rex[0].memory_id.as_deref().unwrap())
        .unwrap();
    assert_eq!(memory.source_ids.len(), 2, "provenance: turns 0 and 1");
    let prefers = m
        .list(ListRequest {
            namespace: "default".into(),
            limit: 10,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .find(|x| x.content.starts_with("Caroline hikes"))
        .unwrap();
    assert!((prefers.importance - 0.9).abs() < 0.01);

    // Reinforce one fact into Working, then let the gate (LLM, auto mode) take it to Core.
    let mut strong = prefers.clone();
    strong.access_count = 6;
    strong.repetition_count = 1;
    mnemo_core::ports::Storage::update_memory(&m.ports().store, &strong).unwrap();
    consolidate(&mut m, false);
    assert_eq!(m.get("default", &prefers.id).unwrap().layer, Layer::Working);
    consolidate(&mut m, false);
    assert_eq!(m.get("default", &prefers.id).unwrap().layer, Layer::Core);

    let tools: Vec<String> = s
        .requests()
        .iter()
        .map(|r| {
            r.body["tool_choice"]["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for expected in ["save_facts", "gate_decisions", "name_topics"] {
        assert!(
            tools.iter().any(|t| t == expected),
            "{expected} not called: {tools:?}"
        );
    }
    let usage = m.ports().store.usage(50).unwrap();
    for component in ["extract", "gate", "naming"] {
        assert!(
            usage.iter().any(|u| u.component == component),
            "{component} not in the ledger"
        );
    }
    let topics = m.topics("default", &[]).unwrap();
    assert!(
        topics.iter().any(|t| t.name == "Caroline's pets"),
        "{topics:?}"
    );

    // The review proposes; its rules refuse a delete and nothing runs.
    clock.fetch_add(72 * 3_600_000, std::sync::atomic::Ordering::SeqCst);
    let audit = m.review(None, false).unwrap();
    assert_eq!((audit.ops.len(), audit.executed), (1, 0));
    assert!(audit.ops[0].verdict.contains("whatever"), "{audit:?}");

    // Expansion and rerank through the component.
    let r = m
        .recall(RecallRequest {
            query: "pet".into(),
            expand: Some(true),
            rerank: true,
            dry: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.expansions, ["Caroline's dog Rex"], "{r:?}");
    assert!(r.reranked || r.hits.len() < 2, "{r:?}");
}

#[test]
fn a_scheduled_cycle_logs_the_text_of_its_warnings() {
    use mnemo_host::scheduler::{self, Task};
    use mnemo_host::storage::DecisionFilter;
    let s = Scripted::start();
    // Every LLM answer is malformed: the cycle warns and changes nothing.
    s.respond_with(|_| common::llm_server::chat_reply("not json at all", "stop"));
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.llm = common::scripted_llm(&s.base);
    // Every open session is due (two turns in one millisecond would not
    // tell which session is the newer one).
    cfg.session_idle_minutes = Some(0);
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    turn(&mut m, "s1", "user", "I moved to Lisbon last spring.");
    turn(&mut m, "s2", "user", "Hello again.");
    let outcome = scheduler::run(&mut m, Task::Consolidate);
    assert!(outcome.contains("warning: "), "{outcome}");
    let logged = m
        .ports()
        .store
        .decision_log(&DecisionFilter {
            action: Some("scheduled".into()),
            limit: 5,
            ..Default::default()
        })
        .unwrap();
    assert!(
        logged[0].detail.contains("warning: ") && logged[0].detail.contains("s1"),
        "the decision log has the warning's text: {}",
        logged[0].detail
    );
}
