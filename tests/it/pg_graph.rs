//! Postgres's HNSW graph holds only the large namespaces' vectors
//! (`host/src/storage/postgres/graph.rs`), in segments
//! (`segments.rs`): a small namespace is searched exactly and never pays
//! the graph's insert; a namespace that reaches `EXACT_MAX_ROWS` vectors
//! is listed, its rows sealed into segments and indexed in the
//! background, and the indexes merged (the merge rules themselves are
//! unit tests of `segments.rs`); a search answers the same before,
//! during and after; a build cut short is done again; the stores from
//! before upgrade in place.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;

use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;
use mnemo_host::Mnemo;

/// The threshold the store lists a namespace at (`EXACT_MAX_ROWS`, the
/// SQLite store's `ANN_MIN_ROWS`).
pub(crate) const LARGE: i64 = 20_000;

/// The rows at which the open segment is sealed and indexed (`ANN_FLUSH_AT`).
pub(crate) const FLUSH: usize = mnemo_host::storage::ann::ANN_FLUSH_AT;

const BIG: [&str; 8] = [
    "Alice's sister lives in Lisbon and teaches piano",
    "The quarterly report is due on Friday",
    "Our cat Miso hates the vacuum cleaner",
    "The boiler was serviced in March by Tomas",
    "Train to Porto leaves at 7:40 from platform 3",
    "Grandma's recipe uses twice the butter",
    "The Wi-Fi password is on the fridge",
    "Carlos prefers window seats on long flights",
];

const QUERIES: [&str; 4] = [
    "where does the sister live",
    "when is the report due",
    "what does the cat dislike",
    "who serviced the boiler",
];

pub(crate) fn open_pg(url: &str, dir: &std::path::Path) -> Mnemo {
    let mut c = common::config(dir);
    c.db_path = url.into();
    Mnemo::open(&c).unwrap()
}

/// The vector channel's hits for each query in `ns`.
pub(crate) fn searches(m: &Mnemo, ns: &[&str]) -> Vec<Vec<String>> {
    let texts: Vec<String> = QUERIES.iter().map(|q| q.to_string()).collect();
    let vectors = m.ports().embeddings.embed_batch(&texts).unwrap();
    let filter = SearchFilter {
        namespaces: ns.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };
    vectors
        .iter()
        .map(|v| {
            let hits = m
                .ports()
                .store
                .vector_search(Target::Memories, v, &filter, 5)
                .unwrap();
            hits.into_iter().map(|h| h.id).collect()
        })
        .collect()
}

pub(crate) fn one_i64(db: &mut postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).unwrap().get(0)
}

/// Vectors of `ns` in a segment a valid index holds, and outside.
fn sides(db: &mut postgres::Client, ns: &str) -> (i64, i64) {
    let r = db
        .query_one(
            "SELECT COUNT(*) FILTER (WHERE i.ok), COUNT(*) FILTER (WHERE NOT i.ok) FROM ( \
               SELECT EXISTS (SELECT 1 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
                 WHERE x.indisvalid AND c.relname ~ '^vec_memories_graph_[0-9]+_[0-9]+$' \
                 AND v.seg BETWEEN split_part(c.relname, '_', 4)::int AND split_part(c.relname, '_', 5)::int) AS ok \
               FROM vec_memories v WHERE v.namespace = $1) i",
            &[&ns],
        )
        .unwrap();
    (r.get(0), r.get(1))
}

/// The names of `vec_memories`'s segment indexes, valid or not.
pub(crate) fn segment_indexes(db: &mut postgres::Client) -> Vec<(String, bool)> {
    db.query(
        "SELECT c.relname::text, x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid \
         WHERE x.indrelid = 'vec_memories'::regclass AND c.relname ~ '^vec_memories_graph_' ORDER BY c.relname",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

fn valid(names: &[&str]) -> Vec<(String, bool)> {
    names.iter().map(|n| (n.to_string(), true)).collect()
}

/// `n` vectors of `ns` that no memory owns (rows from 1,000,000,001, past
/// any real one and the crowd's before): they count toward the namespace's
/// size, and no search can return them.
pub(crate) fn crowd(db: &mut postgres::Client, ns: &str, n: i64) {
    db.execute(
        "INSERT INTO vec_memories (row, namespace, embedding) \
         SELECT b.last + i, $1, (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 384) WHERE i > 0)::vector \
         FROM generate_series(1, $2::bigint) i, \
           (SELECT COALESCE(MAX(row), 1000000000) AS last FROM vec_memories \
            WHERE row BETWEEN 1000000000 AND 1999999999) b",
        &[&ns, &n],
    )
    .unwrap();
}

pub(crate) fn fill(m: &mut Mnemo) {
    for text in BIG {
        common::remember(m, "big", text);
    }
    for text in &BIG[..3] {
        common::remember(m, "small", &format!("{text} (small)"));
    }
    m.backfill_all(16, |_| {}).unwrap();
}

/// Rounds of the backfill leader until no build runs or is due, and
/// fewer than a segment's rows wait in the open one.
pub(crate) fn settle(m: &Mnemo) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let round = m.ports().store.grow_graphs().unwrap();
        let s = m.ports().store.ann_status().unwrap();
        if round.building == 0 && s.building == 0 && s.fresh < FLUSH {
            return;
        }
        assert!(Instant::now() < deadline, "the graph did not settle: {s:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_namespace_moves_into_segments_and_answers_the_same_throughout() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_pg(&url, dir.path());
    let mut db = common::postgres::connect(&url);
    fill(&mut m);
    let (big, small) = (searches(&m, &["big"]), searches(&m, &["small"]));
    assert!(big.iter().all(|h| !h.is_empty()));
    assert_eq!(sides(&mut db, "big"), (0, 8), "small namespaces stay out");
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FROM vec_memories WHERE seg IS NOT NULL"
        ),
        0
    );

    // Under the threshold nothing is listed; at it, the namespace is, its
    // rows join the open segment, which is sealed and indexed.
    crowd(&mut db, "big", LARGE - 9);
    m.ports().store.grow_graphs().unwrap();
    assert_eq!(one_i64(&mut db, "SELECT COUNT(*) FROM vec_graph"), 0);
    // The survey counts the rows past its watermark: one more row of `big`.
    db.execute(
        "INSERT INTO vec_memories (row, namespace, embedding) SELECT 2000000000, 'big', embedding \
         FROM vec_memories WHERE row = 1000000001",
        &[],
    )
    .unwrap();
    let round = m.ports().store.grow_graphs().unwrap();
    assert_eq!(round.moved, LARGE as u64, "every row of `big` joins");
    assert_eq!(
        db.query_one(
            "SELECT namespace FROM vec_graph WHERE target = 'memories'",
            &[]
        )
        .unwrap()
        .get::<_, String>(0),
        "big"
    );
    settle(&m);
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_1"]));
    assert_eq!(sides(&mut db, "big"), (LARGE, 0));
    assert_eq!(sides(&mut db, "small"), (0, 3));
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!(
        (
            status.graphs,
            status.segments,
            status.building,
            status.points,
            status.fresh
        ),
        (1, 1, 0, LARGE as usize, 0),
        "/health and /metrics show the graph"
    );
    // (The crowd's random vectors leave a graph no path to the real rows:
    // the searches through one are compared once the crowd leaves.)

    // Rows arriving wait in the open segment, searched exactly, until it
    // holds a segment's worth: then it is sealed and indexed beside the
    // first, which serves throughout; once nothing more is due, the two
    // are merged into one index, built beside them, and they are dropped
    // (the new one holds more than a seventh of the first's rows).
    crowd(&mut db, "big", FLUSH as i64 - 1);
    assert_eq!(m.ports().store.grow_graphs().unwrap().building, 0);
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!((status.building, status.fresh), (0, FLUSH - 1));
    crowd(&mut db, "big", 1);
    assert_eq!(m.ports().store.grow_graphs().unwrap().building, 1);
    assert!(
        segment_indexes(&mut db).contains(&("vec_memories_graph_1_1".into(), true)),
        "the first index serves while the second builds"
    );
    settle(&m);
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_2"]));
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!(
        (
            status.segments,
            status.building,
            status.points,
            status.fresh
        ),
        (1, 0, LARGE as usize + FLUSH, 0)
    );

    // The crowd leaves; the real rows are split: four in the first
    // segment, four moved to the open one (as a write over them would).
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    db.batch_execute("VACUUM vec_memories").unwrap();
    db.execute(
        "UPDATE vec_memories SET seg = (SELECT seg FROM vec_segments WHERE target = 'memories' AND rows IS NULL) \
         WHERE row IN (SELECT row FROM vec_memories WHERE namespace = 'big' ORDER BY row LIMIT 4)",
        &[],
    )
    .unwrap();
    assert_eq!(sides(&mut db, "big"), (4, 4));
    assert_eq!(searches(&m, &["big"]), big, "half in the open segment");
    assert_eq!(searches(&m, &["small"]), small);

    // No write pays the graph's insert: a listed namespace's new vector
    // is written into the open segment and found there; a small one's
    // stays outside. Both are found, alone and with no filter.
    let new_big = common::remember(&mut m, "big", "The dentist moved to Rua Augusta");
    let new_small = common::remember(&mut m, "small", "The dentist moved to Rua Augusta");
    m.backfill_all(16, |_| {}).unwrap();
    assert_eq!(sides(&mut db, "big"), (4, 5));
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FROM vec_memories WHERE namespace = 'big' AND seg = \
             (SELECT seg FROM vec_segments WHERE target = 'memories' AND rows IS NULL)"
        ),
        5,
        "written into the open segment"
    );
    assert_eq!(sides(&mut db, "small"), (0, 4));
    let texts = vec!["where is the dentist now".to_string()];
    let v = m.ports().embeddings.embed_batch(&texts).unwrap().remove(0);
    let nearest = |namespaces: &[&str]| -> Vec<String> {
        let f = SearchFilter {
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        };
        let hits = m
            .ports()
            .store
            .vector_search(Target::Memories, &v, &f, 2)
            .unwrap();
        hits.into_iter().map(|h| h.id).collect()
    };
    let (new_big, new_small) = (new_big.memory.id, new_small.memory.id);
    assert_eq!(nearest(&["big"])[0], new_big);
    assert_eq!(nearest(&["small"])[0], new_small);
    let mut both = nearest(&[]);
    both.sort();
    let mut want = vec![new_big.clone(), new_small.clone()];
    want.sort();
    assert_eq!(both, want, "with no filter, both sides");
}

/// A build cut short — the server killed while its concurrent build ran,
/// which leaves the index invalid, or before it started — is done again
/// by the next leader, and every search answers the same in between.
#[test]
fn a_segment_index_left_invalid_or_missing_is_built_again() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut db = common::postgres::connect(&url);
    let before = {
        let mut m = open_pg(&url, dir.path());
        fill(&mut m);
        crowd(&mut db, "big", LARGE);
        settle(&m);
        (searches(&m, &["big"]), searches(&m, &["small"]))
    };
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_1"]));
    assert_eq!(sides(&mut db, "big"), (LARGE + 8, 0));

    // Killed while the concurrent build ran: the index is there, invalid.
    db.batch_execute(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'vec_memories_graph_1_1'::regclass",
    )
    .unwrap();
    let m = open_pg(&url, dir.path());
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!(
        (status.building, status.points, status.fresh),
        (1, 0, LARGE as usize + 8),
        "an invalid index serves nothing"
    );
    assert_eq!(searches(&m, &["big"]), before.0, "searched without it");
    settle(&m);
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_1"]));
    assert_eq!(searches(&m, &["big"]), before.0);
    drop(m);

    // A build that fails (its concurrent build cancelled here) leaves the
    // index invalid; the next one drops it and builds it. A transaction writing the table holds the build in its
    // first wait (a concurrent build waits for every writer before it),
    // and meanwhile a server starts: its start creates no index it finds,
    // so it takes no lock the build holds.
    let m = open_pg(&url, dir.path());
    db.batch_execute("DROP INDEX vec_memories_graph_1_1")
        .unwrap();
    let mut holder = common::postgres::connect(&url);
    let mut writing = holder.transaction().unwrap();
    writing
        .batch_execute("LOCK TABLE vec_memories IN ROW EXCLUSIVE MODE")
        .unwrap();
    m.ports().store.grow_graphs().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while one_i64(
        &mut db,
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%' AND state = 'active'",
    ) == 0
    {
        assert!(Instant::now() < deadline, "no concurrent build started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let other = open_pg(&url, dir.path());
    assert_eq!(searches(&other, &["small"]), before.1);
    drop(other);
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%' AND state = 'active'"
        ),
        1,
        "the build waited through a server's start"
    );
    writing.rollback().unwrap();
    assert_eq!(searches(&m, &["big"]), before.0, "searched without it");
    settle(&m);
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_1"]));
    assert_eq!(searches(&m, &["big"]), before.0);
    drop(m);

    // Killed before its build: a server's start does not build it (that
    // would hold the table for the whole build); the leader does.
    db.batch_execute("DROP INDEX vec_memories_graph_1_1")
        .unwrap();
    let m = open_pg(&url, dir.path());
    assert!(segment_indexes(&mut db).is_empty(), "not built at start");
    assert_eq!(m.ports().store.ann_status().unwrap().building, 1);
    assert_eq!(searches(&m, &["big"]), before.0, "searched without it");
    assert_eq!(searches(&m, &["small"]), before.1);
    settle(&m);
    assert_eq!(segment_indexes(&mut db), valid(&["vec_memories_graph_1_1"]));
    assert_eq!(sides(&mut db, "big"), (LARGE + 8, 0));
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    assert_eq!(searches(&m, &["big"]), before.0);
    assert_eq!(searches(&m, &["small"]), before.1);
}

/// The layout's indexes, by name.
fn indexes(db: &mut postgres::Client) -> Vec<String> {
    db.query(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'vec_memories' ORDER BY indexname",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

const SEGMENTED: [&str; 4] = [
    "vec_memories_graph_1_1",
    "vec_memories_loose",
    "vec_memories_pkey",
    "vec_memories_seg",
];

/// The layouts before segments upgrade in place: one HNSW index over
/// every vector (round 2), and one over the rows flagged `graph`. A large
/// namespace's rows become segment 1, whose index the leader builds; a
/// small one's leave the graph.
#[test]
fn a_store_with_one_graph_upgrades_in_place() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let mut m = open_pg(&url, dir.path());
        fill(&mut m);
        (searches(&m, &["big"]), searches(&m, &["small"]))
    };
    // One HNSW index over every vector, a covering index over every row.
    // A namespace of `LARGE` vectors (rows no memory owns: no search
    // returns them), written before the old index is built over the real
    // rows alone — the upgrade reads only its name, and a test need not
    // build it twice.
    let mut db = common::postgres::connect(&url);
    db.batch_execute(
        "DROP INDEX vec_memories_loose; DROP INDEX vec_memories_seg; DROP TABLE vec_graph; \
         DROP TABLE vec_segments; ALTER TABLE vec_memories DROP COLUMN seg;",
    )
    .unwrap();
    crowd(&mut db, "big", LARGE);
    db.batch_execute(
        "CREATE INDEX vec_memories_hnsw ON vec_memories USING hnsw (embedding vector_cosine_ops) \
           WHERE row < 1000000000; \
         CREATE INDEX vec_memories_namespace_cover ON vec_memories (namespace) INCLUDE (row, embedding);",
    )
    .unwrap();
    let m = open_pg(&url, dir.path());
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FROM vec_graph WHERE namespace = 'big'"
        ),
        1
    );
    assert_eq!(
        one_i64(&mut db, "SELECT COUNT(*) FROM vec_memories WHERE seg = 1"),
        LARGE + 8
    );
    assert_eq!(searches(&m, &["small"]), before.1, "before its index");
    settle(&m);
    assert_eq!(
        sides(&mut db, "big"),
        (LARGE + 8, 0),
        "a large namespace is in"
    );
    assert_eq!(sides(&mut db, "small"), (0, 3), "a small one is out");
    assert_eq!(indexes(&mut db), SEGMENTED);
    drop(m);

    // One HNSW index over the rows flagged `graph`.
    db.batch_execute(
        "DROP INDEX vec_memories_graph_1_1; DROP INDEX vec_memories_loose; DROP INDEX vec_memories_seg; \
         DROP TABLE vec_segments; ALTER TABLE vec_memories ADD COLUMN graph BOOLEAN NOT NULL DEFAULT false; \
         UPDATE vec_memories SET graph = seg IS NOT NULL; ALTER TABLE vec_memories DROP COLUMN seg; \
         CREATE INDEX vec_memories_graph ON vec_memories USING hnsw (embedding vector_cosine_ops) \
           WHERE graph AND row < 1000000000; \
         CREATE INDEX vec_memories_loose ON vec_memories (namespace) INCLUDE (row, embedding) WHERE NOT graph;",
    )
    .unwrap();
    let m = open_pg(&url, dir.path());
    assert_eq!(
        one_i64(&mut db, "SELECT COUNT(*) FROM vec_memories WHERE seg = 1"),
        LARGE + 8
    );
    settle(&m);
    assert_eq!(sides(&mut db, "big"), (LARGE + 8, 0));
    assert_eq!(sides(&mut db, "small"), (0, 3));
    assert_eq!(indexes(&mut db), SEGMENTED);
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    db.batch_execute("VACUUM vec_memories").unwrap();
    assert_eq!(searches(&m, &["big"]), before.0);
    assert_eq!(searches(&m, &["small"]), before.1);
}
