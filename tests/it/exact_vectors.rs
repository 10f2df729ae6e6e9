//! The exact vector partitions in memory (`host/src/storage/exact.rs`)
//! against sqlite-vec's own KNN on a real SQLite file: the same hits and
//! the same score bits, seen from the writer and from a reader, after new,
//! replaced and deleted vectors and a row moved to another namespace;
//! inside a batch its own writes count, and after its rollback they never
//! did.

use mnemo_core::model::*;
use mnemo_host::storage::{SqliteStore, Store};

const DIM: u32 = 24;

/// A deterministic vector for `seed` (xorshift), some of whose parts are
/// negative.
fn vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2_000) as f32 / 1_000.0 - 1.0
        })
        .collect()
}

fn memory(s: &SqliteStore, i: u64, ns: &str) {
    let m = Memory::new(format!("m{i:05}"), ns.into(), format!("memory {i}"), 0, 0);
    s.insert_memory(&m).unwrap();
    s.put_vector(Target::Memories, &m.id, &vector(i)).unwrap();
}

fn filter(ns: &str) -> SearchFilter {
    SearchFilter {
        namespaces: vec![ns.into()],
        ..Default::default()
    }
}

/// sqlite-vec's answer, as `vector_search` asked it before the exact
/// partitions: a KNN of `limit × 3` in the namespace's partition, the
/// filter, then score and id.
fn sqlite_vec(s: &SqliteStore, v: &[f32], ns: &str, limit: u32) -> Vec<(String, u32)> {
    let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut stmt = s
        .connection()
        .prepare(
            "SELECT x.id, 1.0 - knn.distance FROM \
             (SELECT rowid, distance FROM vec_memories WHERE embedding MATCH ?1 AND k = ?2 AND namespace = ?3) knn \
             JOIN memories x ON x.rowid = knn.rowid \
             WHERE x.valid_until IS NULL AND x.namespace = ?3",
        )
        .unwrap();
    let mut hits: Vec<(String, f32)> = stmt
        .query_map(rusqlite::params![blob, limit * 3, ns], |r| {
            Ok((r.get(0)?, r.get::<_, f64>(1)? as f32))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    hits.truncate(limit as usize);
    hits.into_iter().map(|(id, s)| (id, s.to_bits())).collect()
}

fn exact(s: &SqliteStore, v: &[f32], ns: &str, limit: u32) -> Vec<(String, u32)> {
    s.vector_search(Target::Memories, v, &filter(ns), limit)
        .unwrap()
        .into_iter()
        .map(|h| (h.id, h.score.to_bits()))
        .collect()
}

/// Every query agrees with sqlite-vec, from `who`.
fn agree(who: &SqliteStore, label: &str) {
    for q in 0..30u64 {
        let v = vector(10_000 + q);
        for ns in ["a", "b"] {
            for limit in [1, 5, 12] {
                assert_eq!(
                    exact(who, &v, ns, limit),
                    sqlite_vec(who, &v, ns, limit),
                    "{label}: query {q} in {ns}, limit {limit}"
                );
            }
        }
    }
}

#[test]
fn the_exact_partitions_answer_as_sqlite_vec_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("x.db")).unwrap();
    s.lock_embedder("test-model", DIM).unwrap();
    let reader = s.reader().unwrap();
    s.connection().execute_batch("BEGIN").unwrap();
    for i in 0..1_500 {
        memory(&s, i, if i % 3 == 0 { "b" } else { "a" });
    }
    s.connection().execute_batch("COMMIT").unwrap();
    agree(&s, "filled");
    agree(&reader, "filled, reader");

    // Replaced and deleted vectors, a soft-deleted row, a row moved.
    for i in (0..1_500).step_by(13) {
        s.put_vector(Target::Memories, &format!("m{i:05}"), &vector(50_000 + i))
            .unwrap();
    }
    for i in (5..1_500).step_by(17) {
        s.delete_vector(Target::Memories, &format!("m{i:05}"))
            .unwrap();
    }
    let conn = s.connection();
    conn.execute(
        "UPDATE memories SET valid_until = 1 WHERE id = 'm00004'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE memories SET namespace = 'b' WHERE id = 'm00007'",
        [],
    )
    .unwrap();
    s.put_vector(Target::Memories, "m00007", &vector(10_001))
        .unwrap();
    agree(&s, "edited");
    agree(&reader, "edited, reader");
    let nearest = |who: &SqliteStore, ns: &str| exact(who, &vector(10_001), ns, 1)[0].0.clone();
    assert_eq!(nearest(&reader, "b"), "m00007");
    assert_ne!(nearest(&reader, "a"), "m00007");

    // Inside a batch its own writes count; after its rollback they never
    // did, for the writer and for the reader.
    let store = Store::Sqlite(Box::new(s));
    let Store::Sqlite(s) = &store else {
        unreachable!()
    };
    store.begin_batch().unwrap();
    memory(s, 2_000, "a");
    s.put_vector(Target::Memories, "m00008", &vector(10_002))
        .unwrap();
    assert_eq!(exact(s, &vector(2_000), "a", 1)[0].0, "m02000");
    assert_eq!(exact(s, &vector(10_002), "a", 1)[0].0, "m00008");
    agree(s, "in a batch");
    agree(&reader, "beside a batch");
    store.end_batch(false).unwrap();
    // Later writes take the rolled-back ones' rows and change numbers.
    for i in 2_001..2_004 {
        memory(s, i, "a");
    }
    assert_ne!(exact(s, &vector(10_002), "a", 1)[0].0, "m00008");
    assert_eq!(exact(s, &vector(2_001), "a", 1)[0].0, "m02001");
    agree(s, "rolled back");
    agree(&reader, "rolled back, reader");
}
