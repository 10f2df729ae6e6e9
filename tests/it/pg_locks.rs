//! Writes on Postgres serialize per namespace, not per database (issue
//! 43): a write in one namespace commits while another namespace's write
//! lock is held open; a write in the held namespace waits for it; a
//! whole-store write holds every namespace; inside one server, the
//! writes of namespaces on other writers commit while one waits. Waits are
//! watched in `pg_locks`, not timed.

#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common;

use mnemo_host::Mnemo;
use mnemo_host::runtime::Locks;
use mnemo_host::storage::PgStore;

fn open_pg(url: &str, dir: &std::path::Path) -> Mnemo {
    let mut c = common::config(dir);
    c.db_path = url.into();
    Mnemo::open(&c).unwrap()
}

/// Advisory locks some connection of this database waits for.
fn waiting(url: &str) -> i64 {
    common::postgres::connect(url)
        .query_one(
            "SELECT COUNT(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
             WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0)
}

/// Waits until a write waits for a lock (or fails the test after 30 s).
fn until_waiting(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while waiting(url) == 0 {
        assert!(
            Instant::now() < deadline,
            "no write came to wait for the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A remember in `namespace` on its own thread (its own connection); the
/// outcome comes back on the channel.
fn remember_in(
    url: &str,
    dir: &std::path::Path,
    namespace: &str,
    text: &str,
) -> mpsc::Receiver<bool> {
    let (tx, rx) = mpsc::channel();
    let (url, dir, namespace, text) = (
        url.to_string(),
        dir.to_path_buf(),
        namespace.to_string(),
        text.to_string(),
    );
    std::thread::spawn(move || {
        let mut m = open_pg(&url, &dir);
        let r = m.remember(mnemo_core::model::RememberRequest {
            namespace,
            content: text,
            ..Default::default()
        });
        if let Err(e) = &r {
            eprintln!("remember failed: {e}");
        }
        let _ = tx.send(r.is_ok());
    });
    rx
}

#[test]
fn a_write_in_one_namespace_does_not_wait_for_another() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    drop(open_pg(&url, dir.path())); // the schema
    let holder = PgStore::open(&url).unwrap();

    // Namespace a's write lock held open by another connection.
    assert!(!holder.begin(Some(&Locks::one("tenant-a"))).unwrap());
    // b's write commits while it is held (a wait would end in the 5 s lock
    // timeout, an error) …
    let b = remember_in(&url, dir.path(), "tenant-b", "Bob's sister lives in Oslo");
    assert!(
        b.recv_timeout(Duration::from_secs(60)).unwrap(),
        "b's write failed"
    );
    assert_eq!(waiting(&url), 0);
    // … and so does one in `default`.
    let d = remember_in(&url, dir.path(), "", "The office closes at six");
    assert!(d.recv_timeout(Duration::from_secs(60)).unwrap());
    // a's own write waits for it, then commits once it ends.
    let a = remember_in(
        &url,
        dir.path(),
        "tenant-a",
        "Alice's sister lives in Lisbon",
    );
    until_waiting(&url);
    assert!(a.try_recv().is_err(), "a's write ran beside a's lock");
    holder.end(false, true).unwrap();
    assert!(
        a.recv_timeout(Duration::from_secs(60)).unwrap(),
        "a's write failed"
    );

    // A whole-store write holds every namespace: b waits for it too.
    assert!(!holder.begin(Some(&Locks::All)).unwrap());
    let b = remember_in(&url, dir.path(), "tenant-b", "Bob moved to Bergen");
    until_waiting(&url);
    assert!(
        b.try_recv().is_err(),
        "b's write ran beside a whole-store write"
    );
    holder.end(false, true).unwrap();
    assert!(b.recv_timeout(Duration::from_secs(60)).unwrap());

    // A namespace's write waits for nothing once every lock is released.
    let m = open_pg(&url, dir.path());
    let stats = m.ports().store.namespaces().unwrap();
    assert_eq!(stats, ["default", "tenant-a", "tenant-b"]);
}

/// A scheduled cycle on a shared database goes namespace by namespace, each
/// claimed once across the servers (`scheduler::Claims`), so each cycle
/// holds one namespace's lock and the servers share the namespaces.
#[test]
fn scheduled_cycles_are_claimed_per_namespace() {
    use mnemo_host::scheduler::{Claims, Task};
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_pg(&url, dir.path());
    for ns in ["tenant-a", "tenant-b", "tenant-c"] {
        common::remember(&mut m, ns, &format!("{ns} prefers tea"));
    }
    let a = Claims::open(std::path::Path::new(&url)).unwrap();
    let b = Claims::open(std::path::Path::new(&url)).unwrap();
    let namespaces = a.split(Task::Consolidate).unwrap();
    assert_eq!(namespaces, ["tenant-a", "tenant-b", "tenant-c"]);
    assert!(
        a.split(Task::Fade).is_none(),
        "fading is one whole-store run"
    );
    // Two servers take turns claiming: each namespace runs once.
    let slot = 1_000;
    let taken: Vec<(bool, bool)> = namespaces
        .iter()
        .map(|ns| {
            let by_a = a.claim_in(Task::Consolidate, ns, slot);
            (by_a, b.claim_in(Task::Consolidate, ns, slot))
        })
        .collect();
    assert_eq!(taken, vec![(true, false); 3]);
    assert!(
        b.claim_in(Task::Consolidate, "tenant-a", slot + 1),
        "the next minute is free"
    );
    assert!(
        b.claim_in(Task::Interval, "tenant-a", slot),
        "each task is claimed apart"
    );
    // The namespace's own cycle runs under its own lock and looks at its
    // memories only.
    let r = m
        .consolidate(mnemo_core::model::ConsolidateRequest {
            namespace: Some("tenant-a".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.examined, 1, "{r:?}");
}

/// Inside one `mnemo serve` on Postgres: while a write of tenant-a waits
/// for its namespace's lock, the writes of the namespaces that go to the
/// server's other writers (`server::writer_of`) commit; those on a's writer
/// wait behind it, and all commit once the lock is released.
#[test]
fn one_server_writes_other_namespaces_while_one_waits() {
    use crate::common::server::{post, start_on};
    use mnemo_host::config::DEFAULT_PG_WRITERS;
    use mnemo_host::server::writer_of;
    use serde_json::json;

    let url = common::postgres::fresh_database();
    let s = start_on(tempfile::tempdir().unwrap(), &url, None, &[]);
    let base = s.base.clone();
    let remember = move |ns: &str, text: &str| {
        let (st, v) = common::server::call(
            ureq::post(&format!("{base}/memories")).set("Content-Type", "application/json"),
            Some(&json!({"namespace": ns, "content": text}).to_string()),
        );
        assert_eq!(st, 201, "{ns}: {v}");
    };
    let holder = PgStore::open(&url).unwrap();
    assert!(!holder.begin(Some(&Locks::one("tenant-a"))).unwrap());
    let a = {
        let remember = remember.clone();
        std::thread::spawn(move || remember("tenant-a", "Alice's sister lives in Lisbon"))
    };
    until_waiting(&url);

    let writer_a = writer_of("tenant-a", DEFAULT_PG_WRITERS);
    let (others, same): (Vec<String>, Vec<String>) = (0..12)
        .map(|i| format!("tenant-{i}"))
        .partition(|ns| writer_of(ns, DEFAULT_PG_WRITERS) != writer_a);
    assert!(
        !others.is_empty() && !same.is_empty(),
        "{others:?} {same:?}"
    );
    // (a few: a's write gives up after the 5 s lock timeout)
    for ns in others.iter().take(3) {
        remember(ns, &format!("{ns} keeps its notes in Markdown"));
        assert!(!a.is_finished(), "a's write ran beside a's lock");
    }
    assert_eq!(waiting(&url), 1, "a's write still waits");
    // One on a's writer queues behind it.
    let queued = {
        let (remember, ns) = (remember.clone(), same[0].clone());
        std::thread::spawn(move || remember(&ns, "queued behind tenant-a"))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(!queued.is_finished(), "a write on a's writer ran beside it");
    holder.end(false, true).unwrap();
    a.join().unwrap();
    queued.join().unwrap();
    let (st, v) = post(
        &s,
        "/recall",
        json!({"namespace": "tenant-a", "query": "Alice's sister"}),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v.to_string().contains("Lisbon"), "{v}");
}

/// A write that waits out the lock timeout (another connection holds its
/// namespace's lock for longer) is refused as unavailable (503, retryable),
/// writes nothing, and succeeds when retried after the lock is released.
#[test]
fn a_write_that_waits_out_the_lock_is_a_503_that_wrote_nothing() {
    use crate::common::server::{call, post, start_on};
    use serde_json::json;

    let url = common::postgres::fresh_database();
    let s = start_on(tempfile::tempdir().unwrap(), &url, None, &[]);
    let holder = PgStore::open(&url).unwrap();
    assert!(!holder.begin(Some(&Locks::one("tenant-a"))).unwrap());
    let body = json!({"namespace": "tenant-a", "content": "Alice's sister lives in Lisbon"});
    let (st, v) = post(&s, "/memories", body.clone());
    assert_eq!(st, 503, "{v}");
    assert_eq!(v["error"]["code"], "unavailable", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("lock timeout"),
        "{v}"
    );
    holder.end(false, true).unwrap();
    let list = |s: &common::server::Server| {
        call(
            ureq::get(&format!("{}/memories?namespace=tenant-a", s.base)),
            None,
        )
    };
    let (st, v) = list(&s);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["memories"].as_array().map(Vec::len), Some(0), "{v}");
    let (st, v) = post(&s, "/memories", body);
    assert_eq!(st, 201, "{v}");
    assert_eq!(list(&s).1["memories"].as_array().map(Vec::len), Some(1));
}

/// What a read causes (its access counts) waits out a namespace's lock held
/// past the lock timeout, and is written by a later attempt once the lock
/// is released, not dropped (`server/effects.rs`).
#[test]
fn a_reads_access_count_outlasts_a_held_lock() {
    use crate::common::server::{call, post, start_on};
    use serde_json::json;

    let url = common::postgres::fresh_database();
    let s = start_on(tempfile::tempdir().unwrap(), &url, None, &[]);
    let (st, kept) = post(
        &s,
        "/memories",
        json!({"namespace": "tenant-a", "content": "The office plants are watered on Mondays"}),
    );
    assert_eq!(st, 201, "{kept}");
    let id = kept["id"].as_str().unwrap().to_string();
    let holder = PgStore::open(&url).unwrap();
    assert!(!holder.begin(Some(&Locks::one("tenant-a"))).unwrap());
    let (st, r) = post(
        &s,
        "/recall",
        json!({"namespace": "tenant-a", "query": "office plants watered"}),
    );
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["hits"][0]["id"], id.as_str(), "{r}");
    // The flush waits for the lock; past the 5 s timeout its first attempt
    // fails and the next one waits in turn.
    until_waiting(&url);
    std::thread::sleep(Duration::from_millis(5_500));
    let stored = |s: &common::server::Server| {
        call(
            ureq::get(&format!("{}/memories/{id}", s.base)).set("X-Namespace", "tenant-a"),
            None,
        )
        .1
    };
    assert_eq!(stored(&s)["access_count"], 0, "not written while held");
    holder.end(false, true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while stored(&s)["access_count"] != 1 {
        assert!(Instant::now() < deadline, "{}", stored(&s));
        std::thread::sleep(Duration::from_millis(50));
    }
}
