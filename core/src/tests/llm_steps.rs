//! The cycle's and the review's LLM steps (merge, reconcile, distill,
//! review, expansion, rerank) with the scripted LLM, and what they must
//! never do: evict protected memories, merge across namespaces.

use super::support::*;
use crate::model::*;
use crate::ports::Storage;
use crate::testing::FakePorts;
use crate::{CoreError, Engine};

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
    let asked = |e: &Engine<FakePorts>| llm_calls(e, LlmComponent::Reconcile);
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

/// Issue 77: a review merge never moves one namespace's words where
/// another reads them — two projects, or a project and `default`, are
/// refused and the refusal logged — unless the operator declared the
/// namespaces one sharing group; then it lands in `default`.
#[test]
fn a_review_merge_across_namespaces_needs_one_sharing_group() {
    let run = |sharing: Sharing| {
        let e = engine().with_sharing(sharing);
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
        let short = |id: &str| crate::prompts::short_id(id).to_string();
        let merge = |a: &str, b: &str, content: &str| {
            e.ports().llm.script(
                LlmLevel::Auto,
                LlmComponent::Review,
                &format!(
                    r#"{{"operations": [{{"op": "merge", "ids": ["{}", "{}"], "layer": "core",
                        "content": "{content}"}}]}}"#,
                    short(a),
                    short(b)
                ),
            );
            e.review(None, false).expect("review")
        };
        let r = merge(
            &p.id,
            &q.id,
            "The user writes Rust daily, at work and at home",
        );
        assert_eq!(r.executed, 0, "{r:?}");
        assert!(
            r.ops[0].verdict.contains("one sharing group"),
            "two projects never merge: {:?}",
            r.ops[0]
        );
        let r = merge(
            &shared.id,
            &p.id,
            "The user writes Rust at work and at home, daily",
        );
        (e, shared, p, q, r)
    };

    let (e, shared, p, _, r) = run(Sharing::default());
    assert_eq!(r.executed, 0, "{r:?}");
    assert!(
        r.ops[0]
            .verdict
            .contains("(default, proj) needs them in one sharing group")
    );
    assert!(get(&e, &shared.id).is_active() && get(&e, &p.id).is_active());
    let refusals: Vec<Decision> = e
        .ports()
        .storage
        .audit
        .borrow()
        .iter()
        .filter(|d| d.action == Action::Review && d.detail.contains("refused"))
        .cloned()
        .collect();
    assert_eq!(refusals.len(), 2, "both refusals are logged: {refusals:?}");
    assert!(refusals.iter().any(|d| d.detail.contains("sharing group")));

    let group = Sharing {
        groups: vec![vec!["default".into(), "proj".into()]],
        ..Default::default()
    };
    let (e, shared, p, q, r) = run(group);
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
