//! Dialogue context in recall (`read/dialogue.rs`): a reply gains from the
//! matching turn before it, every turn from its session's best match, and
//! memories from neither.

use super::support::*;
use crate::model::*;
use crate::thresholds::{SESSION_WEIGHT, TURN_BEFORE_WEIGHT};

fn ask(e: &crate::Engine<crate::testing::FakePorts>, q: &str, both: bool) -> RecallResponse {
    e.recall(RecallRequest {
        query: q.into(),
        episodes_only: !both,
        include_episodes: both,
        limit: 20,
        dry: true,
        ..Default::default()
    })
    .expect("recall")
}

fn hit<'a>(r: &'a RecallResponse, text: &str) -> &'a Hit {
    r.hits
        .iter()
        .find(|h| h.item.content().contains(text))
        .unwrap_or_else(|| panic!("no hit for {text:?} in {r:#?}"))
}

fn note(h: &Hit) -> &str {
    h.explanation
        .notes
        .iter()
        .find(|n| n.starts_with("dialogue context:"))
        .map(String::as_str)
        .unwrap_or("")
}

#[test]
fn a_reply_gains_from_the_matching_question_before_it() {
    let e = engine();
    say(
        &e,
        "s1",
        "caroline",
        "Which band did you see at the concert?",
    );
    say(
        &e,
        "s1",
        "melanie",
        "It was Matt Patterson, he was amazing!",
    );
    say(
        &e,
        "s2",
        "melanie",
        "I bought new shoes for the concert season.",
    );
    let r = ask(&e, "which band did melanie see at the concert", false);
    let question = hit(&r, "Which band");
    let reply = hit(&r, "Matt Patterson");
    let best = question.explanation.relevance / (1.0 + SESSION_WEIGHT);
    // The question is the session's best match, alone before itself: it
    // gains the session term only.
    assert!(note(question).contains("its session's best match"));
    assert!(!note(question).contains("the turn before"));
    // The reply gains both terms, each named with what it came from.
    let n = note(reply);
    assert!(
        n.contains(&format!("the turn before ({}) matches", question.item.id())),
        "{n}"
    );
    let gained = TURN_BEFORE_WEIGHT * best + SESSION_WEIGHT * best;
    assert!(
        n.contains(&format!("+{:.3}", TURN_BEFORE_WEIGHT * best)),
        "{n}"
    );
    let base = reply.explanation.relevance - gained;
    assert!(base >= 0.0, "the reply's own relevance is {base}");
    // The turn of another session takes nothing from this one.
    let other = hit(&r, "new shoes");
    assert!(!note(other).contains("the turn before"), "{}", note(other));
}

#[test]
fn memories_take_no_dialogue_context() {
    let e = engine();
    remember(
        &e,
        "Melanie saw Matt Patterson at the concert",
        &[],
        Kind::Episodic,
    );
    say(
        &e,
        "s1",
        "caroline",
        "Which band did you see at the concert?",
    );
    say(
        &e,
        "s1",
        "melanie",
        "Matt Patterson at the concert, amazing!",
    );
    let r = ask(&e, "matt patterson concert", true);
    let memory = r
        .hits
        .iter()
        .find(|h| matches!(h.item, Item::Memory(_)))
        .expect("the memory is a hit");
    assert_eq!(note(memory), "");
    let episodes: Vec<&Hit> = r
        .hits
        .iter()
        .filter(|h| matches!(h.item, Item::Episode(_)))
        .collect();
    assert_eq!(episodes.len(), 2);
    assert!(episodes.iter().all(|h| !note(h).is_empty()));
}
