//! The server keeps the topic trees fresh without a consolidation (seed 004
//! §6.4): rebuilt once writes have been quiet for 5 seconds, and at start
//! when none is cached. Waits are bounded polls, not timing assertions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::cli::mnemo;
use common::server::*;
use serde_json::json;

#[test]
fn writes_rebuild_the_topic_trees_after_a_quiet_window() {
    let s = start(None);
    let (_, v) = call(ureq::get(&format!("{}/topics", s.base)), None);
    assert_eq!(v["topics"], json!([]), "an empty store has no topics");
    for text in [
        "The deploy pipeline runs on Jenkins every night",
        "The deploy pipeline on Jenkins failed last night",
        "Grandma's apple pie needs cinnamon and butter",
    ] {
        let (st, _) = post(&s, "/memories", json!({ "content": text }));
        assert_eq!(st, 201);
    }
    let topics = topics_eventually(&s);
    assert!(!topics.is_empty(), "no topics without a consolidation");
}

#[test]
fn a_store_without_a_tree_gets_one_at_start() {
    let dir = tempfile::tempdir().unwrap();
    for text in [
        "The user's cat is called Miso",
        "Miso the cat likes the balcony",
    ] {
        let out = mnemo(dir.path(), &["remember", text]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = start_in(dir, None);
    assert!(!topics_eventually(&s).is_empty());
}
