//! Postgres's HNSW graph holds only the large namespaces' vectors
//! (`host/src/storage/postgres/graph.rs`): a small namespace is searched
//! exactly and never pays the graph's insert; a namespace that reaches
//! `EXACT_MAX_ROWS` vectors is listed and moved in, in the background; a
//! search answers the same before, during and after the move; a store
//! from before (one graph over every vector) upgrades in place.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;

use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;
use mnemo_host::Mnemo;

/// The threshold the store lists a namespace at (`EXACT_MAX_ROWS`, the
/// SQLite store's `ANN_MIN_ROWS`).
const LARGE: i64 = 20_000;

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

fn open_pg(url: &str, dir: &std::path::Path) -> Mnemo {
    let mut c = common::config(dir);
    c.db_path = url.into();
    Mnemo::open(&c).unwrap()
}

/// The vector channel's hits for each query in `ns`.
fn searches(m: &Mnemo, ns: &[&str]) -> Vec<Vec<String>> {
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

fn one_i64(db: &mut postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).unwrap().get(0)
}

/// Vectors of `ns` in the graph and outside it.
fn sides(db: &mut postgres::Client, ns: &str) -> (i64, i64) {
    let r = db
        .query_one(
            "SELECT COUNT(*) FILTER (WHERE graph), COUNT(*) FILTER (WHERE NOT graph) \
             FROM vec_memories WHERE namespace = $1",
            &[&ns],
        )
        .unwrap();
    (r.get(0), r.get(1))
}

/// `n` vectors of `ns` that no memory owns (rows from 1,000,000,001, past
/// any real one and the crowd's before): they count toward the namespace's
/// size, and no search can return them.
fn crowd(db: &mut postgres::Client, ns: &str, n: i64) {
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

fn fill(m: &mut Mnemo) {
    for text in BIG {
        common::remember(m, "big", text);
    }
    for text in &BIG[..3] {
        common::remember(m, "small", &format!("{text} (small)"));
    }
    m.backfill_all(16, |_| {}).unwrap();
}

/// Rounds of the backfill leader until nothing waits and the index
/// serves (a rebuild runs on its own connection between rounds).
fn settle(m: &Mnemo) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        m.ports().store.grow_graphs().unwrap();
        let s = m.ports().store.ann_status().unwrap();
        if s.building == 0 && s.fresh == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the graph did not settle: {s:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The object id of `vec_memories_graph` (a rebuild makes a new one).
fn index_oid(db: &mut postgres::Client) -> u32 {
    db.query_one("SELECT to_regclass('vec_memories_graph')::oid", &[])
        .unwrap()
        .get(0)
}

/// Whether `vec_memories_graph` exists and is valid.
fn index_valid(db: &mut postgres::Client) -> bool {
    db.query_opt(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('vec_memories_graph')",
        &[],
    )
    .unwrap()
    .is_some_and(|r| r.get::<_, bool>(0))
}

#[test]
fn a_namespace_moves_into_the_graph_and_answers_the_same_throughout() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_pg(&url, dir.path());
    let mut db = common::postgres::connect(&url);
    fill(&mut m);
    let (big, small) = (searches(&m, &["big"]), searches(&m, &["small"]));
    assert!(big.iter().all(|h| !h.is_empty()));
    assert_eq!(sides(&mut db, "big"), (0, 8), "small namespaces stay out");

    // Under the threshold nothing is listed; at it, the namespace is, and
    // as the graph is empty its rows go in by a rebuild (a bulk build).
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
    let moved = m.ports().store.grow_graphs().unwrap();
    assert_eq!(moved, 0, "a rebuild, not batches");
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
    assert!(index_valid(&mut db));
    assert_eq!(sides(&mut db, "big"), (LARGE, 0));
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!(
        (status.graphs, status.building, status.points, status.fresh),
        (1, 0, LARGE as usize, 0),
        "/health and /metrics show the graph"
    );
    // (The crowd's random vectors leave the graph no path to the real
    // rows: the searches through it are compared once the crowd leaves.
    // A rebuild's states in between, the index missing or invalid, are
    // searched in the next test.)

    // A third of the graph's rows arrive: while rows arrive, batches (a
    // rebuild waits for the backlog to match the graph). A leader that
    // finds a backlog it has not seen grow (a new one, here) counts it as
    // settled: more than a seventh of the graph waits (a batch round moves
    // far fewer than the 3,300 that would leave), so a rebuild.
    crowd(&mut db, "big", LARGE / 3);
    assert!(m.ports().store.grow_graphs().unwrap() > 0, "batches first");
    assert!(index_valid(&mut db));
    drop(m);
    let mut m = open_pg(&url, dir.path());
    let built = index_oid(&mut db);
    assert_eq!(m.ports().store.grow_graphs().unwrap(), 0, "then a rebuild");
    settle(&m);
    assert!(index_valid(&mut db));
    assert_ne!(index_oid(&mut db), built, "a new index");
    assert_eq!(sides(&mut db, "big").1, 0);

    // Rows that arrive after a rebuild are a backlog still growing (the
    // rebuild marked every row that waited when it began): more than a
    // seventh of the graph, less than all of it, so batches.
    crowd(&mut db, "big", LARGE / 5);
    let built = index_oid(&mut db);
    assert!(
        m.ports().store.grow_graphs().unwrap() > 0,
        "batches after a rebuild"
    );
    settle(&m);
    assert_eq!(index_oid(&mut db), built, "the same index throughout");

    // The crowd leaves; the real rows are split across both sides: a few
    // rows wait, and batches move them (the index stays).
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    db.batch_execute("VACUUM vec_memories").unwrap();
    db.execute(
        "UPDATE vec_memories SET graph = false WHERE namespace = 'big'",
        &[],
    )
    .unwrap();
    db.execute(
        "UPDATE vec_memories SET graph = true WHERE row IN \
         (SELECT row FROM vec_memories WHERE namespace = 'big' ORDER BY row LIMIT 4)",
        &[],
    )
    .unwrap();
    assert_eq!(sides(&mut db, "big"), (4, 4));
    assert_eq!(searches(&m, &["big"]), big, "half moved");
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!((status.building, status.points, status.fresh), (1, 4, 4));
    assert_eq!(m.ports().store.grow_graphs().unwrap(), 4, "by batches");
    assert!(index_valid(&mut db));
    assert_eq!(sides(&mut db, "big"), (8, 0));
    let status = m.ports().store.ann_status().unwrap();
    assert_eq!(
        (status.graphs, status.building, status.points, status.fresh),
        (1, 0, 8, 0)
    );
    assert_eq!(searches(&m, &["big"]), big, "all moved");
    assert_eq!(searches(&m, &["small"]), small);

    // No write pays the graph's insert: a listed namespace's new vector
    // is written outside and found there, then moved in. Both
    // namespaces' are found, alone and with no filter.
    let new_big = common::remember(&mut m, "big", "The dentist moved to Rua Augusta");
    let new_small = common::remember(&mut m, "small", "The dentist moved to Rua Augusta");
    m.backfill_all(16, |_| {}).unwrap();
    assert_eq!(sides(&mut db, "big"), (8, 1));
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
    for moved in [false, true] {
        assert_eq!(nearest(&["big"])[0], new_big, "moved: {moved}");
        assert_eq!(nearest(&["small"])[0], new_small);
        let mut both = nearest(&[]);
        both.sort();
        let mut want = vec![new_big.clone(), new_small.clone()];
        want.sort();
        assert_eq!(both, want, "with no filter, both sides");
        if !moved {
            assert_eq!(m.ports().store.grow_graphs().unwrap(), 1);
            assert_eq!(sides(&mut db, "big"), (9, 0));
        }
    }
}

/// A rebuild that stopped half way — the server killed while the index
/// was dropped, or while its concurrent build ran (which leaves it
/// invalid) — is finished by the next leader, and every search answers
/// the same in between.
#[test]
fn a_graph_index_left_missing_or_invalid_is_built_again() {
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
    assert!(index_valid(&mut db));
    assert_eq!(sides(&mut db, "big"), (LARGE + 8, 0));

    // Killed while the concurrent build ran: the index is there, invalid.
    db.batch_execute(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'vec_memories_graph'::regclass",
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
    assert!(index_valid(&mut db));
    assert_eq!(searches(&m, &["big"]), before.0);
    drop(m);

    // A rebuild that fails (its concurrent build cancelled here, as a
    // container's small shared memory fails pgvector's parallel build)
    // leaves the index invalid; the next one, without parallel workers,
    // builds it.
    let m = open_pg(&url, dir.path());
    db.batch_execute("DROP INDEX vec_memories_graph").unwrap();
    m.ports().store.grow_graphs().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let cancelled: bool = db
            .query_one(
                "SELECT COALESCE(bool_or(pg_cancel_backend(pid)), false) FROM pg_stat_activity \
                 WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND state = 'active'",
                &[],
            )
            .unwrap()
            .get(0);
        if cancelled {
            break;
        }
        assert!(Instant::now() < deadline, "no concurrent build to cancel");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(searches(&m, &["big"]), before.0, "searched without it");
    settle(&m);
    assert!(index_valid(&mut db));
    assert_eq!(searches(&m, &["big"]), before.0);
    drop(m);

    // Killed after the drop: a server's start does not build it (that
    // would hold the table for the whole build); the leader does.
    db.batch_execute("DROP INDEX vec_memories_graph").unwrap();
    let m = open_pg(&url, dir.path());
    assert!(!index_valid(&mut db), "not built at start");
    assert_eq!(m.ports().store.ann_status().unwrap().building, 1);
    assert_eq!(searches(&m, &["big"]), before.0, "searched without it");
    assert_eq!(searches(&m, &["small"]), before.1);
    settle(&m);
    assert!(index_valid(&mut db));
    assert_eq!(sides(&mut db, "big"), (LARGE + 8, 0));
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    assert_eq!(searches(&m, &["big"]), before.0);
    assert_eq!(searches(&m, &["small"]), before.1);
}

#[test]
fn a_store_with_one_graph_over_every_vector_upgrades_in_place() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let mut m = open_pg(&url, dir.path());
        fill(&mut m);
        (searches(&m, &["big"]), searches(&m, &["small"]))
    };
    // The layout before: no `graph` flag, one HNSW index over every
    // vector, a covering index over every row. A namespace of `LARGE`
    // vectors (rows no memory owns: no search returns them), written
    // before the old index is built over the real rows alone — the
    // upgrade reads only its name, and a test need not build it twice.
    let mut db = common::postgres::connect(&url);
    db.batch_execute(
        "DROP INDEX vec_memories_graph; DROP INDEX vec_memories_loose; DROP TABLE vec_graph; \
         ALTER TABLE vec_memories DROP COLUMN graph;",
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
        sides(&mut db, "big"),
        (LARGE + 8, 0),
        "a large namespace is in"
    );
    assert_eq!(sides(&mut db, "small"), (0, 3), "a small one is out");
    assert_eq!(
        one_i64(
            &mut db,
            "SELECT COUNT(*) FROM vec_graph WHERE namespace = 'big'"
        ),
        1
    );
    let indexes: Vec<String> = db
        .query(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'vec_memories' ORDER BY indexname",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        indexes,
        [
            "vec_memories_graph",
            "vec_memories_loose",
            "vec_memories_pkey"
        ]
    );
    db.batch_execute("DELETE FROM vec_memories WHERE row >= 1000000000")
        .unwrap();
    db.batch_execute("VACUUM vec_memories").unwrap();
    assert_eq!(searches(&m, &["big"]), before.0);
    assert_eq!(searches(&m, &["small"]), before.1);
}
