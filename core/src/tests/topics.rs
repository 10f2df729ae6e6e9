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
