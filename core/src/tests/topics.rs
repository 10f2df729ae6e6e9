//! Topic naming asks only about dirty leaves (seed 004 §6.3): a rebuild
//! that changed nothing makes no naming call and keeps every name; a new
//! leaf is the only one the LLM sees.

use super::support::*;
use crate::model::*;

fn naming_prompts(e: &crate::Engine<crate::testing::FakePorts>) -> Vec<String> {
    e.ports()
        .llm
        .requests
        .borrow()
        .iter()
        .filter(|r| r.component == LlmComponent::Naming)
        .map(|r| r.messages[1].content.clone())
        .collect()
}

#[test]
fn only_dirty_leaves_are_named_and_names_do_not_churn() {
    let e = engine();
    for text in [
        "The deploy pipeline runs on Jenkins every night",
        "The deploy pipeline on Jenkins failed last night",
    ] {
        remember(&e, text, &[], Kind::Semantic);
    }
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Naming,
        r#"{"names": [{"id": "kb1", "name": "Nightly deploys"}]}"#,
    );
    assert_eq!(e.rebuild_topics(Some("default")).expect("rebuild"), 1);
    assert_eq!(naming_prompts(&e).len(), 1);
    let name = |e: &crate::Engine<crate::testing::FakePorts>| {
        e.topics("default", &[]).expect("topics")[0].name.clone()
    };
    assert_eq!(name(&e), "Nightly deploys");

    // Nothing changed: no call, the same name.
    e.rebuild_topics(Some("default")).expect("rebuild");
    assert_eq!(
        naming_prompts(&e).len(),
        1,
        "an unchanged tree is not renamed"
    );
    assert_eq!(name(&e), "Nightly deploys");

    // A new, unrelated leaf: only it is sent.
    remember(
        &e,
        "Grandma's apple pie needs cinnamon and butter",
        &[],
        Kind::Semantic,
    );
    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Naming,
        r#"{"names": [{"id": "kb2", "name": "Baking"}]}"#,
    );
    assert_eq!(e.rebuild_topics(Some("default")).expect("rebuild"), 2);
    let prompts = naming_prompts(&e);
    assert_eq!(prompts.len(), 2);
    assert!(prompts[1].contains("apple pie"), "{}", prompts[1]);
    assert!(
        !prompts[1].contains("Jenkins"),
        "the unchanged leaf is not sent: {}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("Nightly deploys"),
        "existing names are context"
    );
    let names: Vec<String> = e
        .topics("default", &[])
        .expect("topics")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"Nightly deploys".to_string()), "{names:?}");
}

#[test]
fn close_leaves_share_a_parent_that_drills_down_to_all_of_them() {
    use crate::ports::Storage;
    let e = engine();
    // Vectors laid out by hand: five around A, five around B (cosine 0.45
    // to A: too far to merge, close enough to share a parent), one apart.
    let store = |i: usize, text: String, v: [f32; 3]| {
        let m = Memory::new(
            format!("mem_{i:03}"),
            "default".into(),
            text,
            1_000 + i as i64,
            0,
        );
        e.ports().storage.insert_memory(&m).expect("insert");
        let mut v = v.to_vec();
        crate::vector::normalize(&mut v);
        e.ports()
            .storage
            .put_vector(Target::Memories, &m.id, &v)
            .expect("vector");
    };
    for i in 0..5 {
        let wobble = i as f32 * 0.01;
        store(i, format!("Jenkins pipeline note {i}"), [1.0, wobble, 0.0]);
        store(
            10 + i,
            format!("Billing migration note {i}"),
            [0.45, 0.893, wobble],
        );
    }
    store(
        20,
        "Grandma's apple pie needs cinnamon and butter".into(),
        [0.0, 0.0, 1.0],
    );
    e.rebuild_topics(Some("default")).expect("rebuild");
    let all = e.topics("default", &[]).expect("topics");
    let parents: Vec<&Topic> = all.iter().filter(|t| !t.children.is_empty()).collect();
    let leaves: Vec<&Topic> = all.iter().filter(|t| t.children.is_empty()).collect();
    assert!(leaves.len() >= 2, "{all:?}");
    assert!(!parents.is_empty(), "{all:?}");
    for p in &parents {
        assert!(
            p.children.len() >= 2,
            "a parent of one leaf is pruned: {p:?}"
        );
        for c in &p.children {
            let leaf = all.iter().find(|t| &t.id == c).expect("child listed");
            assert_eq!(leaf.parent.as_deref(), Some(p.id.as_str()));
        }
        let drilled = e
            .topics("default", std::slice::from_ref(&p.id))
            .expect("drill");
        let n: usize = p
            .children
            .iter()
            .map(|c| {
                e.topics("default", std::slice::from_ref(c)).expect("leaf")[0]
                    .memories
                    .len()
            })
            .sum();
        assert_eq!(
            drilled[0].memories.len(),
            n,
            "a parent holds its leaves' memories"
        );
    }
    let pie = leaves
        .iter()
        .find(|t| {
            e.topics("default", std::slice::from_ref(&t.id))
                .expect("leaf")[0]
                .memories
                .iter()
                .any(|m| m.content.contains("apple pie"))
        })
        .expect("the pie has a leaf");
    assert!(pie.parent.is_none(), "a lone leaf has no parent");
    // Resume lists leaves only.
    let block = e
        .resume(ResumeRequest {
            namespace: "default".into(),
            hours: 24,
            context: None,
        })
        .expect("resume");
    assert!(
        block.topics.iter().all(|t| t.id.starts_with("kb")),
        "{:?}",
        block.topics
    );
}

/// A host's topic worker (the server) plans a tree where no write waits
/// and applies it apart; the plan is skipped while nothing changed, and a
/// cycle run for such a host leaves the changed trees to it.
#[test]
fn a_plan_is_computed_apart_applied_later_and_skipped_when_nothing_changed() {
    let e = engine();
    remember(
        &e,
        "The deploy pipeline runs on Jenkins every night",
        &[],
        Kind::Semantic,
    );
    e.ports().clock.advance_hours(1);
    let plan = e
        .plan_topics("default")
        .expect("plan")
        .expect("a first plan");
    assert_eq!(plan.namespace, "default");
    assert_eq!(plan.unnamed.len(), 1, "{plan:?}");
    assert!(
        e.topics("default", &[]).expect("topics").is_empty(),
        "a plan writes nothing"
    );
    assert_eq!(e.apply_topics(plan).expect("apply"), 1);
    assert_eq!(e.topics("default", &[]).expect("topics").len(), 1);
    assert_eq!(
        e.plan_topics("default").expect("plan"),
        None,
        "nothing changed since"
    );

    remember(
        &e,
        "Grandma's apple pie needs cinnamon and butter",
        &[],
        Kind::Semantic,
    );
    let report = e
        .consolidate(ConsolidateRequest {
            namespace: Some("default".into()),
            session_idle_minutes: Some(0),
            topics_by_worker: true,
            ..Default::default()
        })
        .expect("cycle");
    assert_eq!(
        report.topics, 1,
        "the cached tree, not rebuilt by the cycle"
    );
    assert_eq!(e.topics("default", &[]).expect("topics").len(), 1);
    let plan = e
        .plan_topics("default")
        .expect("plan")
        .expect("a change to plan");
    assert_eq!(
        plan.unnamed.len(),
        1,
        "only the new leaf lacks a name: {plan:?}"
    );
    assert_eq!(e.apply_topics(plan).expect("apply"), 2);

    assert!(
        e.plan_topics("nope/../x").is_err(),
        "a bad namespace is a typed error"
    );
}
