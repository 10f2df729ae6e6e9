//! Session context in recall (`read/dialogue.rs`): a turn gains from its
//! session's best match, memories do not; and what a question asks for
//! (`read/question.rs`): the dates it names and the kind of answer, each
//! named in the notes; and the BM25 of a turn only the vector channel found,
//! read below the fused list's cut (`FTS_SCORE_DEPTH`); and the reply to a
//! question that matched, found by the turn order ingest stamps.

use super::support::*;
use crate::model::*;
use crate::ports::{Embedder, Ports, Storage};
use crate::thresholds::{CHANNEL_MIN, REPLY_WEIGHT, SESSION_TURN_KEY, SESSION_WEIGHT};

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
        .find(|n| n.starts_with("session context:"))
        .map(String::as_str)
        .unwrap_or("")
}

#[test]
fn a_turn_gains_from_its_sessions_best_match() {
    let e = engine();
    say(
        &e,
        "s1",
        "caroline",
        "Tell me which band you saw at the concert.",
    );
    say(
        &e,
        "s1",
        "melanie",
        "It was a band I loved, amazing concert!",
    );
    say(&e, "s2", "melanie", "I loved that band, amazing!");
    let r = ask(&e, "which band did melanie see at the concert", false);
    // (No question mark: the reply term of the test below stays out.)
    let question = hit(&r, "Tell me which band");
    let same_session = hit(&r, "It was a band");
    let other_session = hit(&r, "I loved that band");
    // The best of a session gains SESSION_WEIGHT × itself, so its
    // relevance is best × (1 + SESSION_WEIGHT), and every turn of the
    // session gains the same, named with where it came from.
    let best = question
        .explanation
        .relevance
        .max(same_session.explanation.relevance)
        / (1.0 + SESSION_WEIGHT);
    for h in [question, same_session] {
        let n = note(h);
        assert!(
            n.contains(&format!("its session's best match {best:.3}")),
            "{n}"
        );
        assert!(n.contains(&format!("+{:.3}", SESSION_WEIGHT * best)), "{n}");
    }
    // The turn of the other session gains only its own session's best.
    let o = note(other_session);
    assert!(!o.contains(&format!("{best:.3}")), "{o}");
}

#[test]
fn memories_take_no_session_context() {
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

fn said_at(e: &crate::Engine<crate::testing::FakePorts>, session: &str, text: &str, at: Millis) {
    e.ingest(Turn {
        namespace: "default".into(),
        session_id: session.into(),
        role: "ana".into(),
        content: text.into(),
        event_time: Some(at),
        attributes: None,
    })
    .expect("ingest");
}

fn noted<'a>(h: &'a Hit, prefix: &str) -> Option<&'a str> {
    h.explanation
        .notes
        .iter()
        .find(|n| n.starts_with(prefix))
        .map(String::as_str)
}

#[test]
fn a_date_the_question_names_raises_what_happened_then() {
    let e = engine();
    let day = crate::calendar::MS_PER_DAY;
    let oct_2022 = crate::calendar::days_from_civil(2022, 10, 25) * day;
    let may_2023 = crate::calendar::days_from_civil(2023, 5, 8) * day;
    said_at(
        &e,
        "s1",
        "The concert was wonderful, we danced all night.",
        may_2023,
    );
    said_at(
        &e,
        "s2",
        "The concert was wonderful, we sang all night.",
        oct_2022,
    );
    let r = ask(&e, "how was the concert on October 25, 2022", false);
    let top = &r.hits[0];
    assert!(top.item.content().contains("sang"), "{r:#?}");
    let note = noted(top, "its time falls in a date the query names")
        .unwrap_or_else(|| panic!("no date note: {:?}", top.explanation.notes));
    assert!(note.ends_with(&format!("x{}", crate::thresholds::DATE_MATCH_BOOST)));
    let other = hit(&r, "danced");
    assert!(noted(other, "its time falls").is_none());
    assert!(top.explanation.relevance > other.explanation.relevance);
}

#[test]
fn a_when_question_raises_the_turn_that_names_a_time() {
    let e = engine();
    say(&e, "s1", "ana", "The pottery class is fun and messy.");
    say(&e, "s2", "ana", "I joined the pottery class last week.");
    let r = ask(&e, "when did ana join the pottery class", false);
    let timed = hit(&r, "last week");
    assert!(
        noted(timed, "the query asks for a time and the text names one").is_some(),
        "{:?}",
        timed.explanation.notes
    );
    assert!(noted(hit(&r, "fun and messy"), "the query asks for").is_none());
    // The same words asked with "what" name no kind of answer.
    let r = ask(&e, "what about ana and the pottery class", false);
    assert!(
        r.hits
            .iter()
            .all(|h| noted(h, "the query asks for").is_none())
    );
}

#[test]
fn a_turn_only_the_vectors_found_keeps_its_words() {
    let e = engine();
    let query = "which band played the concert";
    // More turns than the fused list holds match every query word, so the
    // full-text list ranks the one that matches only "band" below its cut.
    for i in 0..CHANNEL_MIN + 5 {
        say(&e, "s1", "caroline", &format!("band played concert {i}"));
    }
    let quiet = e
        .ingest(Turn {
            namespace: "default".into(),
            session_id: "s2".into(),
            role: "melanie".into(),
            content: "that band, wow".into(),
            event_time: None,
            attributes: None,
        })
        .expect("ingest")
        .episode;
    // Only this turn has a vector, the query's own: the vector channel's first.
    let qv = e.ports().embedder().embed(&[query.into()]).expect("embed");
    e.ports()
        .storage()
        .put_vector(Target::Episodes, &quiet.id, &qv[0])
        .expect("vector");
    let r = e
        .recall(RecallRequest {
            query: query.into(),
            episodes_only: true,
            limit: 10,
            dry: true,
            ..Default::default()
        })
        .expect("recall");
    let h = hit(&r, "that band, wow");
    assert!(
        h.explanation
            .channels
            .iter()
            .all(|c| c.channel == Channel::Vector),
        "found by the vector channel only: {:?}",
        h.explanation.channels
    );
    let notes = h.explanation.notes.join(" | ");
    // Every strong turn ranks above it: it is the next one.
    let below = format!(
        "bm25 read below the fused list's cut (rank {})",
        CHANNEL_MIN + 6
    );
    assert!(notes.contains(&below), "{notes}");
    // One word against the best turn's three plus half of the three of the
    // turn before it (EPISODE_CONTEXT_WEIGHT): 1 / 4.5, not 0.
    assert!(notes.contains("bm25 0.222"), "{notes}");
}

#[test]
fn the_reply_to_a_question_that_matched_gains_from_it() {
    let e = engine();
    say(&e, "s1", "ana", "What did you paint for the fair?");
    say(&e, "s1", "ben", "A sunset over the lake, in oils.");
    say(&e, "s1", "ben", "It took me three weekends.");
    let r = ask(&e, "what did ben paint for the fair", false);
    let question = hit(&r, "What did you paint");
    let reply = hit(&r, "A sunset");
    let asked = question.explanation.relevance
        - noted(question, "session context")
            .map_or(0.0, |_| SESSION_WEIGHT * question.explanation.relevance);
    let note = noted(reply, "replies to a question that matched")
        .unwrap_or_else(|| panic!("no reply note: {:?}", reply.explanation.notes));
    let bonus: f32 = note.rsplit('+').next().unwrap().parse().unwrap();
    assert!(
        bonus > 0.0 && bonus <= REPLY_WEIGHT * asked + 1e-3,
        "{note}"
    );
    // The turn after the reply follows no question; the question itself
    // follows nothing.
    assert!(noted(question, "replies to").is_none());
    if let Some(later) = r
        .hits
        .iter()
        .find(|h| h.item.content().contains("three weekends"))
    {
        assert!(noted(later, "replies to").is_none());
    }
}

#[test]
fn ingest_stamps_each_turns_place_in_its_session() {
    let e = engine();
    let turn = |session: &str, attributes: Option<&str>| {
        e.ingest(Turn {
            namespace: "default".into(),
            session_id: session.into(),
            role: "ana".into(),
            content: "hello there".into(),
            event_time: None,
            attributes: attributes.map(Into::into),
        })
        .expect("ingest")
        .episode
    };
    let place = |ep: &Episode| {
        serde_json::from_str::<serde_json::Value>(&ep.attributes).expect("json")[SESSION_TURN_KEY]
            .as_u64()
    };
    assert_eq!(place(&turn("a", None)), Some(1));
    assert_eq!(place(&turn("b", None)), Some(1));
    let second = turn("a", Some(r#"{"dia_id":"D1:2"}"#));
    assert_eq!(place(&second), Some(2));
    assert!(second.attributes.contains("D1:2"));
    // A place the caller gave is kept.
    assert_eq!(place(&turn("a", Some(r#"{"session_turn":9}"#))), Some(9));
}
