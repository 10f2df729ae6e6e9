//! The storage contract suite (`mnemo_core::testing::contract`) against the
//! real stores: a SQLite file and a Postgres database, the same checks the
//! core's in-memory fake passes.

use crate::common;

use mnemo_core::testing::contract;
use mnemo_host::storage::{PgStore, SqliteStore};

#[test]
fn the_sqlite_store_keeps_the_storage_contract() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    contract::all(|| {
        n += 1;
        let store = SqliteStore::open(&dir.path().join(format!("contract-{n}.db"))).unwrap();
        store
            .lock_embedder("contract", contract::DIM as u32)
            .unwrap();
        store
    });
}

#[test]
fn the_postgres_store_keeps_the_storage_contract() {
    contract::all(|| {
        let store = PgStore::open(&common::postgres::fresh_database()).unwrap();
        store
            .lock_embedder("contract", contract::DIM as u32)
            .unwrap();
        store
    });
}

/// The namespaces are listed from memories and episodes alike, in order,
/// each once (a loose index scan on either backend; MNEMO_TEST_BACKEND
/// picks it).
#[test]
fn namespaces_are_listed_from_memories_and_episodes() {
    use mnemo_core::model::{RememberRequest, Turn};
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    for ns in ["b", "a", "a"] {
        m.remember(RememberRequest {
            content: format!("a note in {ns}"),
            namespace: ns.into(),
            ..Default::default()
        })
        .unwrap();
    }
    for ns in ["c", "a"] {
        m.ingest(Turn {
            namespace: ns.into(),
            session_id: "s".into(),
            role: "user".into(),
            content: format!("a turn in {ns}"),
            ..Default::default()
        })
        .unwrap();
    }
    assert_eq!(m.ports().store.namespaces().unwrap(), ["a", "b", "c"]);
}
