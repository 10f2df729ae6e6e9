//! A sealed segment no index serves yet is held in the server's memory
//! (`host/src/storage/postgres/tail.rs`) once no write can enter it any
//! more, and ranked there: not while a transaction that wrote into it
//! before the seal is open, at once after; a row that leaves it is read
//! from the table; it is let go once its index serves. Searches answer
//! as a server that holds nothing does, throughout.

#![allow(clippy::unwrap_used)]

use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;
use mnemo_host::Mnemo;

use crate::common;
use crate::pg_graph::{
    FLUSH, LARGE, crowd, fill, one_i64, open_pg, searches, segment_indexes, settle,
};

/// The nearest memories of `ns` to `text` (the vector channel, 3 hits).
fn nearest(m: &Mnemo, ns: &str, text: &str) -> Vec<String> {
    let v = m
        .ports()
        .embeddings
        .embed_batch(&[text.to_string()])
        .unwrap()
        .remove(0);
    let f = SearchFilter {
        namespaces: vec![ns.to_string()],
        ..Default::default()
    };
    let hits = m
        .ports()
        .store
        .vector_search(Target::Memories, &v, &f, 3)
        .unwrap();
    hits.into_iter().map(|h| h.id).collect()
}

/// The id of `big`'s memory whose text starts with `start`.
fn big_memory(db: &mut postgres::Client, start: &str) -> String {
    db.query_one(
        "SELECT id FROM memories WHERE namespace = 'big' AND starts_with(content, $1)",
        &[&start],
    )
    .unwrap()
    .get(0)
}

fn row_of(db: &mut postgres::Client, id: &str) -> i64 {
    db.query_one("SELECT seq FROM memories WHERE id = $1", &[&id])
        .unwrap()
        .get(0)
}

/// Rewrites `row`'s vector to `from`'s, into the open segment, as the
/// store's own write does.
const REWRITE: &str = "UPDATE vec_memories SET embedding = (SELECT embedding FROM vec_memories WHERE row = $2), \
     seg = (SELECT seg FROM vec_segments WHERE target = 'memories' AND rows IS NULL) WHERE row = $1";

#[test]
fn a_sealed_segment_is_held_once_no_write_can_enter_it() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_pg(&url, dir.path());
    let mut db = common::postgres::connect(&url);
    fill(&mut m);
    // The dentist's vector, in a namespace of its own, lent below to a
    // memory of `big` that is about something else.
    let dentist = common::remember(&mut m, "lender", "The dentist moved to Rua Augusta");
    m.backfill_all(16, |_| {}).unwrap();
    let train = big_memory(&mut db, "Train");
    let (train_row, dentist_row) = (row_of(&mut db, &train), row_of(&mut db, &dentist.memory.id));
    let query = "where is the dentist now";
    assert_ne!(nearest(&m, "big", query)[0], train);

    // `big` is listed, its rows sealed into segment 1 and indexed; more
    // wait in the open segment, 2.
    crowd(&mut db, "big", LARGE - 8);
    settle(&m);
    crowd(&mut db, "big", FLUSH as i64 - 1);
    m.ports().store.grow_graphs().unwrap();
    assert_eq!(
        one_i64(&mut db, "SELECT COUNT(*) FROM vec_memories WHERE seg = 2"),
        FLUSH as i64 - 1
    );

    // A write into segment 2, open while it is sealed: the segment is not
    // final until it ends (its build waits for it too).
    let mut writer = common::postgres::connect(&url);
    let mut t = writer.transaction().unwrap();
    t.execute(REWRITE, &[&train_row, &dentist_row]).unwrap();
    crowd(&mut db, "big", 1);
    assert_eq!(m.ports().store.grow_graphs().unwrap().building, 1);
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FROM vec_segments WHERE target = 'memories' AND seg = 2 AND rows IS NOT NULL \
             AND cardinality(waits) = 1"
        ),
        1,
        "sealed, with the open write kept"
    );
    m.ports().store.tail_catch_up().unwrap();
    assert_eq!(
        m.ports().store.tail_status(),
        (0, 0),
        "not while it is open"
    );
    assert_ne!(nearest(&m, "big", query)[0], train);

    // A transaction begun after the seal holds the build (at its next
    // wait) but is not waited for: once the write commits, the segment is
    // held, and the rewritten vector is found from memory.
    let mut later = common::postgres::connect(&url);
    let mut hold = later.transaction().unwrap();
    hold.batch_execute("LOCK TABLE vec_memories IN ROW EXCLUSIVE MODE")
        .unwrap();
    t.commit().unwrap();
    m.ports().store.tail_catch_up().unwrap();
    assert_eq!(m.ports().store.tail_status(), (1, FLUSH + 1));
    assert_eq!(
        segment_indexes(&mut db),
        vec![
            ("vec_memories_graph_1_1".to_string(), true),
            ("vec_memories_graph_2_2".to_string(), false)
        ],
        "the index still builds"
    );
    assert_eq!(nearest(&m, "big", query)[0], train, "found in memory");
    // A server that holds the segment and one that holds nothing, so reads
    // it from the table, both new (each counts the rows outside the
    // indexes at its first search): the same answers.
    let (held, bare) = (open_pg(&url, dir.path()), open_pg(&url, dir.path()));
    held.ports().store.tail_catch_up().unwrap();
    assert_eq!(held.ports().store.tail_status(), (1, FLUSH + 1));
    assert_eq!(bare.ports().store.tail_status(), (0, 0));
    assert_eq!(searches(&held, &["big"]), searches(&bare, &["big"]));
    assert_eq!(nearest(&held, "big", query), nearest(&bare, "big", query));

    // A row that leaves the held segment (rewritten into the open one) is
    // read from the table, not from its old vector in memory.
    let boiler = big_memory(&mut db, "The boiler");
    let boiler = row_of(&mut db, &boiler);
    db.execute(REWRITE, &[&train_row, &boiler]).unwrap();
    assert_ne!(nearest(&held, "big", query)[0], train);
    assert!(nearest(&held, "big", "who serviced the boiler").contains(&train));
    assert_eq!(searches(&held, &["big"]), searches(&bare, &["big"]));
    assert_eq!(nearest(&held, "big", query), nearest(&bare, "big", query));

    // Once its index serves, the segment is let go.
    hold.commit().unwrap();
    settle(&m);
    held.ports().store.tail_catch_up().unwrap();
    assert_eq!(held.ports().store.tail_status(), (0, 0));
    assert_eq!(searches(&held, &["big"]), searches(&bare, &["big"]));
}
