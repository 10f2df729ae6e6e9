//! The derived full-text index on Postgres (`host/src/storage/postgres/
//! text.rs`) against BM25 in SQL, on a real Postgres: a namespace ranks as
//! SQL ranks it in a database of that namespace alone; every server's
//! index follows the writes of every connection, including a transaction
//! that commits after a later one was read; a transaction's own writes
//! count inside it and are forgotten on rollback; a namespace move and a
//! delete leave the partition; a partition the pruned log no longer
//! reaches is rebuilt; a new server builds its index from the tables, and
//! one killed with SIGKILL mid-write restarts with an index exact with
//! them.

#![allow(clippy::unwrap_used)]

use mnemo_core::model::*;
use mnemo_host::runtime::Locks;
use mnemo_host::storage::PgStore;

use crate::common;
use crate::text_index::{Seq, WORDS, filter, queries};

/// Hits as (id, score).
type Answers = Vec<Vec<(String, f32)>>;

fn memory(i: usize, ns: &str, text: String, tags: Vec<String>) -> Memory {
    let mut m = Memory::new(format!("{ns}_{i:05}"), ns.into(), text, i as i64, 0);
    m.tags = tags;
    m
}

fn text(g: &mut Seq, vocab: &[&str]) -> String {
    let len = 3 + g.next(14);
    format!("{}. {}!", g.words(len, vocab), g.words(2, vocab))
}

/// `n` memories of `ns` from index `from`, some tagged, one transaction.
fn fill(s: &PgStore, ns: &str, from: usize, n: usize, seed: u64, vocab: &[&str]) {
    let mut g = Seq(seed);
    assert!(!s.begin(Some(&Locks::one(ns))).unwrap());
    for i in from..from + n {
        let body = text(&mut g, vocab);
        let tags = if i % 5 == 0 {
            vec![vocab[g.next(vocab.len())].to_string()]
        } else {
            vec![]
        };
        s.insert_memory(&memory(i, ns, body, tags)).unwrap();
    }
    s.end(false, true).unwrap();
}

fn answers(s: &PgStore, target: Target, qs: &[Vec<String>], f: &SearchFilter) -> Answers {
    qs.iter()
        .map(|q| {
            s.fts_search(target, q, f, 10, 0.35)
                .unwrap()
                .into_iter()
                .map(|h| (h.id, h.score))
                .collect()
        })
        .collect()
}

/// The index's answers, then SQL's, on the same connection.
fn both_ways(s: &PgStore, qs: &[Vec<String>], f: &SearchFilter) -> (Answers, Answers) {
    s.set_text_index(true);
    let indexed = answers(s, Target::Memories, qs, f);
    assert!(s.text_status().partitions >= 1, "the index answered");
    s.set_text_index(false);
    let sql = answers(s, Target::Memories, qs, f);
    s.set_text_index(true);
    (indexed, sql)
}

/// Fails on the first query whose answers differ (ids, and scores but for
/// the last bits of the sum's rounding), naming it.
fn same(qs: &[Vec<String>], indexed: &Answers, sql: &Answers) {
    assert_eq!(indexed.len(), sql.len());
    for ((q, a), b) in qs.iter().zip(indexed).zip(sql) {
        let ids = |h: &Vec<(String, f32)>| h.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(a), ids(b), "query {q:?}: the index, then SQL");
        for ((_, x), (_, y)) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-5 * x.abs().max(1.0),
                "query {q:?}: score {x} against SQL's {y}"
            );
        }
    }
}

fn store() -> (String, PgStore) {
    let url = common::postgres::fresh_database();
    let s = PgStore::open(&url).unwrap();
    (url, s)
}

#[test]
fn pg_a_namespace_ranks_as_sql_ranks_it_alone() {
    let (_, mixed) = store();
    let (_, alone) = store();
    fill(&mixed, "b", 0, 1500, 99, &WORDS[..8]);
    fill(&mixed, "a", 0, 500, 7, &WORDS);
    fill(&alone, "a", 0, 500, 7, &WORDS);
    let qs = queries(13, &WORDS);
    // In a database of one namespace, the index and SQL agree.
    let (indexed_alone, sql_alone) = both_ways(&alone, &qs, &filter("a"));
    assert!(indexed_alone.iter().filter(|h| h.len() == 10).count() > 60);
    same(&qs, &indexed_alone, &sql_alone);
    // Beside another tenant, the namespace ranks as it did alone; SQL's
    // whole-table statistics move.
    let (indexed_mixed, sql_mixed) = both_ways(&mixed, &qs, &filter("a"));
    same(&qs, &indexed_mixed, &sql_alone);
    assert_ne!(sql_mixed, sql_alone, "the other tenant moves SQL's ranking");
}

/// The index's answers on `s` equal SQL's on `check` (text index off).
fn agrees(s: &PgStore, check: &PgStore, qs: &[Vec<String>], ns: &str) {
    check.set_text_index(false);
    let indexed = answers(s, Target::Memories, qs, &filter(ns));
    let sql = answers(check, Target::Memories, qs, &filter(ns));
    same(qs, &indexed, &sql);
}

#[test]
fn pg_follows_every_connection_commit_order_and_rollback() {
    let (url, a) = store();
    let other = a.writer().unwrap();
    let server2 = PgStore::open(&url).unwrap();
    let check = PgStore::open(&url).unwrap();
    let qs = queries(21, &WORDS);
    fill(&a, "a", 0, 300, 1, &WORDS);
    agrees(&server2, &check, &qs, "a");
    assert_eq!(server2.text_status().partitions, 1);

    // A transaction that commits after a later one was read: its change
    // was drawn first, so only its transaction id brings it in.
    assert!(!a.begin(None).unwrap());
    a.insert_memory(&memory(900, "a", "violin violin chess".into(), vec![]))
        .unwrap();
    fill(&other, "a", 300, 40, 2, &WORDS);
    agrees(&server2, &check, &qs, "a");
    a.end(false, true).unwrap();
    agrees(&server2, &check, &qs, "a");
    let violin = answers(
        &server2,
        Target::Memories,
        &[vec!["violin".into()]],
        &filter("a"),
    );
    assert_eq!(violin[0][0].0, "a_00900");

    // Edits, a soft delete, a move out of the namespace and a delete.
    let mut g = Seq(5);
    let mut edited = a.get_memories(&["a_00007".into()]).unwrap().remove(0);
    edited.content = text(&mut g, &WORDS);
    a.update_memory(&edited).unwrap();
    let mut gone = a.get_memories(&["a_00008".into()]).unwrap().remove(0);
    gone.valid_until = Some(1);
    a.update_memory(&gone).unwrap();
    let mut db = common::postgres::connect(&url);
    db.batch_execute(
        "UPDATE memories SET namespace = 'b' WHERE id = 'a_00009'; \
         DELETE FROM memories WHERE id = 'a_00010';",
    )
    .unwrap();
    // From here two namespaces share the tables, so SQL's whole-table
    // statistics no longer are the namespace's: the reference is an index
    // built anew from the tables, by a server opened for each check.
    as_rebuilt(&server2, &url, &qs, "a");
    as_rebuilt(&server2, &url, &qs, "b");

    // Inside a transaction its own rows count; rolled back, they are gone.
    assert!(!server2.begin(Some(&Locks::one("a"))).unwrap());
    server2
        .insert_memory(&memory(901, "a", "ocean ocean ocean forest".into(), vec![]))
        .unwrap();
    let inside = answers(
        &server2,
        Target::Memories,
        &[vec!["ocean".into()]],
        &filter("a"),
    );
    assert_eq!(inside[0][0].0, "a_00901");
    server2.end(false, false).unwrap();
    as_rebuilt(&server2, &url, &qs, "a");
    // Committed, the index inside the transaction answered as one built after.
    assert!(!server2.begin(Some(&Locks::one("a"))).unwrap());
    fill_inside(&server2, "a", 950, 30, 8);
    let inside = answers(&server2, Target::Memories, &qs, &filter("a"));
    server2.end(false, true).unwrap();
    same(&qs, &inside, &rebuilt(&url, &qs, "a"));

    // The background catch-up applies what the searches have not.
    fill(&a, "a", 1000, 20, 9, &WORDS);
    server2.text_catch_up_all().unwrap();
    as_rebuilt(&server2, &url, &qs, "a");
    assert_eq!(
        server2.text_status().rows,
        rows(&url, "a") + rows(&url, "b"),
        "each partition holds its namespace's rows"
    );

    // An idle partition that catch-up marks current while a transaction
    // of its namespace is open (its entry drawn, not visible) still gets
    // that transaction's row once it commits.
    assert!(!a.begin(None).unwrap());
    a.insert_memory(&memory(1100, "b", "chess chess river".into(), vec![]))
        .unwrap();
    fill(&other, "a", 1200, 5, 10, &WORDS);
    server2.text_catch_up_all().unwrap();
    a.end(false, true).unwrap();
    let chess = answers(
        &server2,
        Target::Memories,
        &[vec!["chess".into()]],
        &filter("b"),
    );
    assert_eq!(chess[0][0].0, "b_01100");
    as_rebuilt(&server2, &url, &qs, "b");

    // A partition first needed inside a transaction is built by the
    // server's builder thread, SQL answering meanwhile.
    let server3 = PgStore::open(&url).unwrap();
    assert!(!server3.begin(Some(&Locks::one("a"))).unwrap());
    // (Inside a transaction no partition is built on the connection.)
    answers(&server3, Target::Memories, &qs, &filter("a"));
    let status = server3.text_status();
    assert_eq!(status.partitions + status.building, 1, "queued or built");
    server3.end(false, true).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server3.text_status().partitions == 0 {
        assert!(std::time::Instant::now() < deadline, "the builder built it");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    as_rebuilt(&server3, &url, &qs, "a");
}

/// Answers for `ns` from a server that builds its index now.
fn rebuilt(url: &str, qs: &[Vec<String>], ns: &str) -> Answers {
    let fresh = PgStore::open(url).unwrap();
    let out = answers(&fresh, Target::Memories, qs, &filter(ns));
    assert!(fresh.text_status().partitions >= 1, "the index answered");
    out
}

/// `s`'s index answers as one built anew from the tables.
fn as_rebuilt(s: &PgStore, url: &str, qs: &[Vec<String>], ns: &str) {
    same(
        qs,
        &answers(s, Target::Memories, qs, &filter(ns)),
        &rebuilt(url, qs, ns),
    );
}

/// Inserts inside the caller's open transaction.
fn fill_inside(s: &PgStore, ns: &str, from: usize, n: usize, seed: u64) {
    let mut g = Seq(seed);
    for i in from..from + n {
        s.insert_memory(&memory(i, ns, text(&mut g, &WORDS), vec![]))
            .unwrap();
    }
}

fn rows(url: &str, ns: &str) -> i64 {
    common::postgres::connect(url)
        .query_one("SELECT COUNT(*) FROM memories WHERE namespace = $1", &[&ns])
        .unwrap()
        .get(0)
}

#[test]
fn pg_a_partition_the_pruned_log_no_longer_reaches_is_rebuilt() {
    let (url, a) = store();
    let server2 = PgStore::open(&url).unwrap();
    let check = PgStore::open(&url).unwrap();
    let qs = queries(31, &WORDS);
    fill(&a, "a", 0, 200, 3, &WORDS);
    agrees(&server2, &check, &qs, "a");
    // Writes the partition has not read, then their entries pruned as
    // `prune_text_changes` prunes (it keeps more than a test writes).
    fill(&a, "a", 200, 100, 4, &WORDS);
    assert!(!a.text_prune_due());
    assert_eq!(a.prune_text_changes().unwrap(), 0);
    // A later entry the pruning keeps (a turn's: the memories' statistics
    // stay those of one namespace). The pruned mark's transaction id is
    // left at 0, so only the `seq` gap can tell the partition it missed
    // entries (other transactions on the server hold `xmin` back, which
    // would make the id alone tell it too).
    a.insert_episode(&Episode {
        id: "turn".into(),
        namespace: "a".into(),
        session_id: "s".into(),
        source_role: "user".into(),
        content: "coffee at the market".into(),
        event_time: 1,
        created_at: 1,
        valid_until: None,
        invalid_reason: None,
        attributes: "{}".into(),
    })
    .unwrap();
    common::postgres::connect(&url)
        .batch_execute(
            "INSERT INTO metadata(key, value) \
               SELECT 'text_changes_pruned', max(seq)::text FROM text_changes WHERE target = 'memories'; \
             INSERT INTO metadata(key, value) VALUES ('text_changes_pruned_xid', '0'); \
             DELETE FROM text_changes WHERE target = 'memories';",
        )
        .unwrap();
    // The background catch-up does not mark it current over the gap.
    server2.text_catch_up_all().unwrap();
    agrees(&server2, &check, &qs, "a");
    agrees(&server2, &check, &qs, "a");
    assert_eq!(server2.text_status().rows, 300, "rebuilt from the table");
}

/// A server on Postgres killed with SIGKILL while two clients write and
/// one searches restarts with an index exact with its tables: every
/// acknowledged memory is the first hit for its code word, and a store
/// opened beside it answers from its index as SQL does.
#[test]
fn pg_a_server_killed_mid_write_restarts_with_an_exact_index() {
    use crate::common::server::start_on;
    use crate::text_index::{each_word_finds_its_memory, killed_mid_write, word_queries};

    let url = common::postgres::fresh_database();
    let server = start_on(tempfile::tempdir().unwrap(), &url, None, &[]);
    let (dir, acked) = killed_mid_write(server, |_| true);
    let server = start_on(dir, &url, None, &[]);
    each_word_finds_its_memory(&server.base, &acked);
    let beside = PgStore::open(&url).unwrap();
    let qs = word_queries(&acked);
    let (indexed, sql) = both_ways(&beside, &qs, &filter("default"));
    same(&qs, &indexed, &sql);
    for ((_, id), hits) in acked.iter().zip(&indexed) {
        assert_eq!(&hits[0].0, id);
    }
}

/// After a bulk write (`transfer::import` calls it), a namespace past the
/// inline size has its partition built by the server's builder thread
/// before any search asks; a small one waits for its first search.
#[test]
fn pg_a_bulk_write_has_its_large_partitions_built_before_a_search() {
    use mnemo_host::storage::text::TEXT_INLINE_BUILD_ROWS;
    let (url, s) = store();
    fill(&s, "big", 0, TEXT_INLINE_BUILD_ROWS as usize + 1, 5, &WORDS);
    fill(&s, "small", 0, 20, 6, &WORDS);
    let server = PgStore::open(&url).unwrap();
    server.text_warm(Target::Memories, "big");
    server.text_warm(Target::Memories, "small");
    let status = server.text_status();
    assert_eq!(status.partitions + status.building, 1, "only the large one");
    built(&server);
    // As a server whose first search queued the build (SQL answering it).
    let qs = queries(43, &WORDS);
    let asked = PgStore::open(&url).unwrap();
    answers(&asked, Target::Memories, &qs, &filter("big"));
    built(&asked);
    same(
        &qs,
        &answers(&server, Target::Memories, &qs, &filter("big")),
        &answers(&asked, Target::Memories, &qs, &filter("big")),
    );
}

/// Waits for `s`'s builder thread to have built a partition.
fn built(s: &PgStore) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while s.text_status().partitions == 0 {
        assert!(std::time::Instant::now() < deadline, "the builder built it");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
