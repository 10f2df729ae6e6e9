//! Structured output that survives small models (issue 17, item 5), end to
//! end: the LLM is a scripted OpenAI-compatible server on 127.0.0.1 that
//! answers an LLM step (the accurate NER pass, seed 003's 02:00 task) with
//! each kind of garbage local models send. What can be read without
//! guessing is repaired in the core (`core/src/prompts/repair.rs`); what
//! cannot is shown to the model once; a second bad answer is a typed error
//! that links nothing and leaves the item for the next run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::llm_server::{Reply, Scripted, chat_reply, tool_reply, tool_reply_text};
use mnemo_core::model::*;
use mnemo_host::Mnemo;
use mnemo_host::llm::LlmConfig;

const GOOD: &str = r#"{"entities": [{"text": "Caroline", "type": "person"}]}"#;

/// A store whose accurate NER is the LLM, with one turn to enrich.
fn store(s: &Scripted, dir: &std::path::Path) -> Mnemo {
    let mut cfg = common::config(dir);
    cfg.ner.accurate = vec!["regex".into()];
    cfg.llm = LlmConfig {
        level: LlmLevel::Auto,
        ..common::scripted_llm(&s.base)
    };
    let mut m = Mnemo::open(&cfg).unwrap();
    m.ingest(Turn {
        session_id: "s".into(),
        role: "user".into(),
        content: "Caroline moved to Paris last spring".into(),
        ..Default::default()
    })
    .unwrap();
    m
}

/// One enrichment run: what it did, what was asked, and the store.
struct Run {
    report: EnrichReport,
    asked: Vec<serde_json::Value>,
    m: Mnemo,
    s: Scripted,
    _dir: tempfile::TempDir,
}

/// An enrichment run over `replies`.
fn enrich_with(replies: Vec<Reply>) -> Run {
    let s = Scripted::start();
    let dir = tempfile::tempdir().unwrap();
    let mut m = store(&s, dir.path());
    for r in replies {
        s.push(r);
    }
    let report = m.enrich(10).unwrap();
    let asked = s.requests().into_iter().map(|r| r.body).collect();
    Run {
        report,
        asked,
        m,
        s,
        _dir: dir,
    }
}

fn linked_caroline(m: &mut Mnemo) -> bool {
    m.entity_info("", "caroline", 5)
        .unwrap()
        .first()
        .is_some_and(|p| p.entity.entity_type == EntityType::Person && p.episodes.len() == 1)
}

#[test]
fn answers_around_the_json_are_repaired_in_one_call() {
    let cases = [
        (
            "a fenced answer instead of the tool call",
            chat_reply(&format!("```json\n{GOOD}\n```"), "stop"),
        ),
        (
            "a think block before it",
            chat_reply(
                &format!("<think>Caroline is a name. {{maybe}}</think>\n{GOOD}"),
                "stop",
            ),
        ),
        (
            "prose around it",
            chat_reply(
                &format!("Sure! Here are the entities:\n{GOOD}\nLet me know."),
                "stop",
            ),
        ),
        (
            "trailing commas in the tool's arguments",
            tool_reply_text(
                "record_entities",
                r#"{"entities": [{"text": "Caroline", "type": "person",},],}"#,
            ),
        ),
        (
            "the call written out as text",
            chat_reply(
                &format!(r#"{{"name": "record_entities", "arguments": {GOOD}}}"#),
                "stop",
            ),
        ),
    ];
    for (what, reply) in cases {
        let mut run = enrich_with(vec![reply]);
        assert_eq!(run.report.linked, 1, "{what}: {:?}", run.report);
        assert_eq!(run.asked.len(), 1, "{what}: one call, no retry");
        assert!(linked_caroline(&mut run.m), "{what}");
    }
}

#[test]
fn an_echoed_schema_is_shown_to_the_model_once_and_the_retry_is_used() {
    let echo = r#"{"type": "object", "properties": {"entities": {"type": "array"}}, "required": ["entities"]}"#;
    let mut run = enrich_with(vec![
        chat_reply(echo, "stop"),
        tool_reply("record_entities", serde_json::from_str(GOOD).unwrap()),
    ]);
    let asked = &run.asked;
    assert_eq!(run.report.linked, 1, "{:?}", run.report);
    assert_eq!(asked.len(), 2);
    let retry = asked[1]["messages"].as_array().unwrap();
    assert_eq!(
        retry.len(),
        4,
        "the first answer and the error follow the question"
    );
    assert_eq!(retry[2]["role"], "assistant");
    assert_eq!(retry[2]["content"], echo);
    let told = retry[3]["content"].as_str().unwrap();
    assert!(
        told.contains("schema was echoed") && told.contains("`record_entities`"),
        "{told}"
    );
    assert_eq!(
        asked[1]["tool_choice"], asked[0]["tool_choice"],
        "still a forced call"
    );
    assert!(linked_caroline(&mut run.m));
}

#[test]
fn two_bad_answers_are_a_typed_error_that_keeps_the_item_for_the_next_run() {
    let Run {
        report,
        asked,
        mut m,
        s,
        _dir,
    } = enrich_with(vec![
        chat_reply(
            "<think>Let me list the entities. There is Caroline, a person, and",
            "stop",
        ),
        chat_reply("I am not able to produce JSON.", "stop"),
    ]);
    assert_eq!(
        (report.examined, report.linked),
        (1, 0),
        "nothing linked, nothing half-done"
    );
    assert_eq!(asked.len(), 2, "one retry, no more");
    assert!(!linked_caroline(&mut m));
    let usage = m.ports().store.usage(10).unwrap();
    let ner: Vec<&str> = usage
        .iter()
        .filter(|u| u.component == "ner")
        .map(|u| u.outcome.as_str())
        .collect();
    assert_eq!(ner.len(), 2, "both calls are in the ledger: {ner:?}");
    // The next run leaves it alone while its backoff runs (no call)...
    let waiting = m.enrich(10).unwrap();
    assert_eq!((waiting.examined, waiting.linked), (1, 0));
    assert_eq!(s.requests().len(), 2, "no call within the backoff");
    // ... and once it is due again (here by hand) asks, and enriches it.
    assert_eq!(m.retry_waiting(None, None).unwrap(), 1);
    s.push(tool_reply(
        "record_entities",
        serde_json::from_str(GOOD).unwrap(),
    ));
    let again = m.enrich(10).unwrap();
    assert_eq!((again.examined, again.linked), (1, 1));
    assert!(linked_caroline(&mut m));
}
