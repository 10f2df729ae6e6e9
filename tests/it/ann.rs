//! The HNSW index across a kill -9 (`host/src/storage/ann_{store,file}.rs`),
//! over real HTTP against the real binary: a graph built by one server is
//! saved, loaded by the next one at start (no rebuild, no search needed
//! first), and agrees with the table about everything written after it was
//! saved — new vectors, edited ones, deleted ones — as the exact search on
//! a copy of the same database shows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::server::*;
use serde_json::{Value, json};

/// A text of made-up words that no other one shares much with.
fn text(i: usize) -> String {
    const S: [&str; 16] = [
        "ka", "lo", "mi", "ren", "tor", "vel", "sa", "dun", "pri", "mo", "zen", "tal", "qui",
        "bra", "nor", "fi",
    ];
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!(
                "{}{}{}",
                S[(x % 16) as usize],
                S[((x >> 8) % 16) as usize],
                S[((x >> 16) % 16) as usize]
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn health(s: &Server) -> Value {
    call(ureq::get(&format!("{}/health", s.base)), None).1
}

fn store(s: &Server, texts: &[String]) -> Vec<String> {
    let body = json!({"memories": texts.iter().map(|t| json!({"content": t})).collect::<Vec<_>>()});
    let (st, v) = post(s, "/memories/batch", body);
    assert_eq!(st, 201, "{v}");
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory"]["id"].as_str().unwrap().to_string())
        .collect()
}

/// A server on a copy of the database in `dir`, searching exactly.
fn exact_copy(dir: &tempfile::TempDir) -> Server {
    let exact_dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
    {
        if f.path().is_file() {
            std::fs::copy(f.path(), exact_dir.path().join(f.file_name())).unwrap();
        }
    }
    let mut exact_env = vec![("MNEMO_ANN_MIN_ROWS", "off")];
    exact_env.extend(NO_CRON);
    start_with(exact_dir, None, &exact_env)
}

/// Waits until no segment is being built and the partition has a graph.
fn settled(s: &Server) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let h = health(s);
        if h["ann"]["graphs"] == 1 && h["ann"]["building"] == 0 {
            return h["ann"].clone();
        }
        assert!(Instant::now() < deadline, "{h}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn top_ids(s: &Server, q: &str) -> Vec<String> {
    let (st, v) = post(s, "/recall", json!({"query": q, "dry": true, "limit": 5}));
    assert_eq!(st, 200, "{v}");
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_saved_graph_is_used_after_a_kill_and_agrees_with_the_table() {
    let mut env = vec![("MNEMO_ANN_MIN_ROWS", "200")];
    env.extend(NO_CRON);
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let first: Vec<String> = (0..300).map(text).collect();
    let ids = store(&s, &first);
    assert_eq!(ids.len(), 300);
    // The first search of the partition starts the build.
    top_ids(&s, &first[0]);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(health(&s)["ann"]["graphs"] == 1 && health(&s)["ann"]["building"] == 0) {
        assert!(Instant::now() < deadline, "{}", health(&s));
        std::thread::sleep(Duration::from_millis(50));
    }
    let saved = std::fs::read_dir(s.dir().join("m.db.ann")).unwrap().count();
    assert_eq!(saved, 1, "one graph file");
    // (The graph may have been built before the last rows came: those are
    // fresh beside it.)
    let before = health(&s)["ann"].clone();
    let (points, fresh) = (
        before["points"].as_u64().unwrap(),
        before["fresh"].as_u64().unwrap(),
    );
    assert_eq!(points + fresh, 300, "{before}");

    // After the save: new vectors, edited ones, deleted ones.
    let later: Vec<String> = (300..320).map(text).collect();
    store(&s, &later);
    let mut edited = Vec::new();
    for (n, id) in ids.iter().take(5).enumerate() {
        let content = format!("rewritten {n}: the violin tunnel orchid glacier");
        let (st, v) = call(
            ureq::patch(&format!("{}/memories/{id}", s.base)),
            Some(&json!({"content": content}).to_string()),
        );
        assert_eq!(st, 200, "{v}");
        edited.push(content);
    }
    let deleted: Vec<String> = ids[5..10].to_vec();
    for id in &deleted {
        let (st, _) = call(ureq::delete(&format!("{}/memories/{id}", s.base)), None);
        assert_eq!(st, 200);
    }
    let dir = s.crash();
    let exact = exact_copy(&dir);

    let s = start_with(dir, None, &env);
    // Serving at once, from the file: no build, no search needed first.
    let h = health(&s);
    assert_eq!(
        (h["ann"]["graphs"].as_u64(), h["ann"]["building"].as_u64()),
        (Some(1), Some(0)),
        "{h}"
    );
    assert_eq!(h["ann"]["points"], points, "{h}");
    assert_eq!(
        h["ann"]["fresh"],
        fresh + 25,
        "20 new and 5 edited vectors: {h}"
    );

    // Every text still stored finds the memory the exact search finds
    // first (the graph is approximate further down, where its build's
    // timing shows). The first ten texts were edited away or deleted: what
    // ranks first for them is noise in both, but a deleted memory never
    // appears, even for its own text.
    let mut queries: Vec<String> = later.clone();
    queries.extend(edited.iter().cloned());
    queries.extend(first[10..60].iter().cloned());
    for q in &queries {
        let got = top_ids(&s, q);
        assert_eq!(got[0], top_ids(&exact, q)[0], "{q}");
        assert!(got.iter().all(|id| !deleted.contains(id)), "{q}");
    }
    for q in &first[..10] {
        assert!(top_ids(&s, q).iter().all(|id| !deleted.contains(id)), "{q}");
    }
    // Each edited memory is found by its new text (its fresh vector).
    for (n, q) in edited.iter().enumerate() {
        assert_eq!(top_ids(&s, q)[0], ids[n], "{q}");
    }
}

#[test]
fn segments_grow_the_index_without_a_rebuild_and_survive_a_kill() {
    let mut env = vec![("MNEMO_ANN_MIN_ROWS", "200"), ("MNEMO_ANN_FLUSH_AT", "40")];
    env.extend(NO_CRON);
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let mut texts: Vec<String> = (0..300).map(text).collect();
    let mut ids = store(&s, &texts);
    top_ids(&s, &texts[0]);
    settled(&s);
    // Four rounds of 50 new memories: each passes the flush size, so each
    // becomes a segment of its own (and four small ones merge).
    for round in 0..4 {
        let more: Vec<String> = (300 + round * 50..350 + round * 50).map(text).collect();
        ids.extend(store(&s, &more));
        texts.extend(more);
        settled(&s);
    }
    let before = settled(&s);
    let segments = before["segments"].as_u64().unwrap();
    assert!(segments >= 2, "{before}");
    assert_eq!(
        before["points"].as_u64().unwrap() + before["fresh"].as_u64().unwrap(),
        500,
        "{before}"
    );
    let files = std::fs::read_dir(s.dir().join("m.db.ann")).unwrap().count();
    assert_eq!(files as u64, segments, "one file per segment");
    // Written after the last segment: an edit and a delete.
    let edited = "rewritten: the violin tunnel orchid glacier".to_string();
    let (st, v) = call(
        ureq::patch(&format!("{}/memories/{}", s.base, ids[400])),
        Some(&json!({"content": edited}).to_string()),
    );
    assert_eq!(st, 200, "{v}");
    let (st, _) = call(
        ureq::delete(&format!("{}/memories/{}", s.base, ids[450])),
        None,
    );
    assert_eq!(st, 200);
    let dir = s.crash();
    let exact = exact_copy(&dir);

    let s = start_with(dir, None, &env);
    let after = health(&s)["ann"].clone();
    assert_eq!(after["segments"], segments, "loaded, not rebuilt: {after}");
    assert_eq!(after["building"], 0, "{after}");
    // Texts 400 and 450 were edited away and deleted: what ranks first for
    // them is noise in both searches, so only the deletion is checked.
    for (n, q) in texts.iter().enumerate().step_by(10) {
        let got = top_ids(&s, q);
        if n != 400 && n != 450 {
            assert_eq!(got[0], top_ids(&exact, q)[0], "{q}");
        }
        assert!(!got.contains(&ids[450]), "{q}");
    }
    assert_eq!(top_ids(&s, &edited)[0], top_ids(&exact, &edited)[0]);
    assert_eq!(top_ids(&s, &edited)[0], ids[400]);
}
