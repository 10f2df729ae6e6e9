//! Resume with a context (seed 004's thresholds) and the Core summary that
//! stands in for a Core over its budget.

use super::support::*;
use crate::Engine;
use crate::model::*;
use crate::testing::FakePorts;

fn resume(e: &Engine<FakePorts>, context: Option<&str>) -> ResumeBlock {
    e.resume(ResumeRequest {
        namespace: "default".into(),
        hours: 24,
        context: context.map(String::from),
    })
    .expect("resume")
}

#[test]
fn a_context_keeps_what_is_relevant_and_who_the_user_is() {
    let e = engine();
    let deploy = in_layer(
        &e,
        "Deploys of the billing service go out on Tuesdays",
        &[],
        Layer::Core,
    );
    let plant = in_layer(
        &e,
        "Office plant needs water every Friday",
        &[],
        Layer::Core,
    );
    let who = in_layer(
        &e,
        "The user is called Ada and answers in German",
        &["identity"],
        Layer::Core,
    );
    let near = in_layer(
        &e,
        "The billing service deploy failed on staging",
        &[],
        Layer::Working,
    );
    let far = in_layer(&e, "Grandma bakes apple pie", &[], Layer::Working);
    // Premises: how close each is to the context under the test embedder.
    let ctx = "the billing service deploy";
    assert!(cosine(ctx, &deploy.content) >= crate::thresholds::RESUME_CORE_THRESHOLD);
    assert!(cosine(ctx, &who.content) < crate::thresholds::RESUME_CORE_THRESHOLD);
    assert!(cosine(ctx, &plant.content) < 0.01 && cosine(ctx, &far.content) < 0.01);
    let all = resume(&e, None);
    assert_eq!(all.core.len(), 3);
    assert_eq!(all.recent.len(), 2);

    let block = resume(&e, Some("the billing service deploy"));
    let ids = |ms: &[Memory]| ms.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    assert!(ids(&block.core).contains(&deploy.id), "{:?}", block.core);
    assert!(
        !ids(&block.core).contains(&plant.id),
        "irrelevant Core is left out"
    );
    assert!(
        ids(&block.core).contains(&who.id),
        "identity is boosted by {}",
        crate::thresholds::RESUME_HIGH_RELEVANCE
    );
    assert_eq!(
        ids(&block.recent),
        vec![near.id.clone()],
        "{:?}",
        block.recent
    );
    assert!(!ids(&block.recent).contains(&far.id));
}

#[test]
fn a_core_over_its_budget_is_shown_as_its_summary_while_unchanged() {
    let e = engine();
    let mut core = Vec::new();
    for i in 0..80 {
        let text = format!(
            "Rule {i}: before release {i} the team reviews the changelog, the migration notes, \
             the rollback plan and the on-call rota for service number {i} in full"
        );
        core.push(in_layer(&e, &text, &[], Layer::Core));
    }
    // With the LLM off: the texts that fit, and how many did not.
    let off = resume(&e, None);
    assert!(off.core.len() < 80);
    assert!(
        off.text.contains("more in Core, over its budget"),
        "{}",
        off.text
    );

    e.ports().llm.script(
        LlmLevel::Auto,
        LlmComponent::Compress,
        r#"{"summary": "Every release: changelog, migration notes, rollback plan, on-call rota reviewed in full (rules 0-79)."}"#,
    );
    let r = consolidate(&e, false);
    assert!(
        r.warnings.iter().all(|w| !w.contains("Core summary")),
        "{r:?}"
    );
    let summarised = resume(&e, None);
    assert!(
        summarised.text.contains("rules 0-79"),
        "{}",
        summarised.text
    );
    let asked = llm_calls(&e, LlmComponent::Compress);
    consolidate(&e, false);
    assert_eq!(
        llm_calls(&e, LlmComponent::Compress),
        asked,
        "an unchanged Core is not summarised twice"
    );

    // A Core memory changes: the stale summary is not shown.
    e.ports().clock.advance_hours(1);
    e.update(
        "default",
        &core[0].id,
        MemoryPatch {
            importance: Some(0.9),
            ..Default::default()
        },
    )
    .expect("edit");
    let stale = resume(&e, None);
    assert!(!stale.text.contains("rules 0-79"), "{}", stale.text);
    assert!(stale.text.contains("more in Core"));
}

/// Without a context, Recent is read a page at a time until the section's
/// budget is passed: across several pages (and rows of the same time, in
/// id order) it shows exactly the prefix one read of every row would.
#[test]
fn recent_read_in_pages_shows_the_prefix_that_fits() {
    let e = engine();
    for i in 0..200 {
        in_layer(
            &e,
            &format!("Memo {i:03} of the weekly notes"),
            &[],
            Layer::Working,
        );
    }
    let all = crate::ports::Storage::list_memories(
        &e.ports().storage,
        &ListQuery {
            namespaces: vec!["default".into()],
            layers: vec![Layer::Buffer, Layer::Working],
            by_modified: true,
            limit: 500,
            ..Default::default()
        },
    )
    .expect("list");
    let mut used = 0;
    let expected: Vec<&str> = all
        .iter()
        .take_while(|m| {
            used += crate::text::estimate_tokens(&m.content);
            used <= crate::thresholds::RESUME_RECENT_TOKENS
        })
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        expected.len() > 64,
        "the budget spans pages: {}",
        expected.len()
    );
    assert!(expected.len() < all.len(), "and cuts the list");
    let text = resume(&e, None).text;
    let section = text
        .split("=== Recent (24h) ===\n")
        .nth(1)
        .expect("a Recent section");
    let shown: Vec<&str> = section
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_once("] ").map_or(l, |(_, t)| t))
        .collect();
    assert_eq!(shown, expected);
}
