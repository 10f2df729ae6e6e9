//! The derived full-text index (`host/src/storage/text/`) against FTS5 on
//! real SQLite files: in a store of one namespace it ranks bit-for-bit as
//! FTS5's `bm25()` does; in a store of many, a namespace ranks as FTS5
//! would if it were alone; it follows writes from every connection, inside
//! and outside transactions (and forgets a rolled-back one); a partition
//! the change log no longer reaches is rebuilt; a store killed with
//! SIGKILL mid-write reopens (from its saved partitions) with an index
//! exact with its tables.

use mnemo_core::model::*;
use mnemo_host::storage::SqliteStore;

pub(crate) const WORDS: [&str; 24] = [
    "garden",
    "gardens",
    "gardening",
    "piano",
    "pianos",
    "running",
    "ran",
    "runs",
    "river",
    "violin",
    "hiking",
    "bread",
    "stars",
    "coffee",
    "market",
    "school",
    "winter",
    "travel",
    "friends",
    "music",
    "chess",
    "ocean",
    "forest",
    "the",
];

/// A deterministic generator (an LCG), so every run stores the same texts.
pub(crate) struct Seq(pub(crate) u64);

impl Seq {
    pub(crate) fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }

    pub(crate) fn words(&mut self, n: usize, vocab: &[&str]) -> String {
        (0..n)
            .map(|_| vocab[self.next(vocab.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub(crate) fn memory(i: usize, ns: &str, text: String, tags: Vec<String>) -> Memory {
    let mut m = Memory::new(format!("{ns}_{i:05}"), ns.into(), text, i as i64, 0);
    m.tags = tags;
    m
}

/// `n` memories of `ns`, some tagged, written as one transaction.
pub(crate) fn fill(s: &SqliteStore, ns: &str, n: usize, seed: u64, vocab: &[&str]) {
    let mut g = Seq(seed);
    s.connection().execute_batch("BEGIN").unwrap();
    for i in 0..n {
        let len = 3 + g.next(14);
        let text = format!("{}. {}!", g.words(len, vocab), g.words(2, vocab));
        let tags = if i % 5 == 0 {
            vec![vocab[g.next(vocab.len())].to_string()]
        } else {
            vec![]
        };
        s.insert_memory(&memory(i, ns, text, tags)).unwrap();
    }
    s.connection().execute_batch("COMMIT").unwrap();
}

pub(crate) fn queries(seed: u64, vocab: &[&str]) -> Vec<Vec<String>> {
    let mut g = Seq(seed);
    let mut out: Vec<Vec<String>> = (0..120)
        .map(|_| {
            (0..1 + g.next(5))
                .map(|_| vocab[g.next(vocab.len())].to_string())
                .collect()
        })
        .collect();
    // Stems shared by two terms, a term of no token, an absent word.
    out.push(vec!["garden".into(), "gardening".into(), "?!".into()]);
    out.push(vec!["nothing-like-it".into()]);
    out.push(vec!["zzz".into(), "the".into()]);
    out
}

pub(crate) fn filter(ns: &str) -> SearchFilter {
    SearchFilter {
        namespaces: vec![ns.into()],
        ..Default::default()
    }
}

/// Every query's hits as (id, score's bits).
pub(crate) type Answers = Vec<Vec<(String, u32)>>;

/// Every query's hits as (id, score's bits).
pub(crate) fn answers(
    s: &SqliteStore,
    target: Target,
    qs: &[Vec<String>],
    f: &SearchFilter,
) -> Answers {
    qs.iter()
        .map(|q| {
            s.fts_search(target, q, f, 10, 0.35)
                .unwrap()
                .into_iter()
                .map(|h| (h.id, h.score.to_bits()))
                .collect()
        })
        .collect()
}

/// Fails on the first query whose answers differ, naming it.
pub(crate) fn same(
    qs: &[Vec<String>],
    indexed: &[Vec<(String, u32)>],
    fts5: &[Vec<(String, u32)>],
) {
    for ((q, a), b) in qs.iter().zip(indexed).zip(fts5) {
        assert_eq!(a, b, "query {q:?}: the index, then FTS5");
    }
    assert_eq!(indexed.len(), fts5.len());
}

/// The same answers from the index and from FTS5.
fn both_ways(
    s: &SqliteStore,
    target: Target,
    qs: &[Vec<String>],
    f: &SearchFilter,
) -> (Answers, Answers) {
    s.set_text_index(true);
    let indexed = answers(s, target, qs, f);
    assert!(s.text_status().partitions >= 1, "the index answered");
    s.set_text_index(false);
    let fts5 = answers(s, target, qs, f);
    s.set_text_index(true);
    (indexed, fts5)
}

#[test]
fn one_namespace_ranks_bit_for_bit_like_fts5() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("one.db")).unwrap();
    fill(&s, "a", 800, 7, &WORDS);
    let qs = queries(11, &WORDS);
    let (indexed, fts5) = both_ways(&s, Target::Memories, &qs, &filter("a"));
    assert!(indexed.iter().filter(|h| h.len() == 10).count() > 100);
    same(&qs, &indexed, &fts5);
    // A filter that drops most of the best rows: the index reads on past
    // its first shortlist, as FTS5's statement does.
    let late = SearchFilter {
        since: Some(760),
        ..filter("a")
    };
    let (indexed, fts5) = both_ways(&s, Target::Memories, &qs, &late);
    assert!(indexed.iter().any(|h| !h.is_empty()));
    same(&qs, &indexed, &fts5);
}

#[test]
fn episodes_weigh_the_turn_before_like_fts5() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("turns.db")).unwrap();
    let mut g = Seq(3);
    for i in 0..400 {
        let len = 4 + g.next(10);
        s.insert_episode(&Episode {
            id: format!("e_{i:04}"),
            namespace: "a".into(),
            session_id: format!("s{}", i / 20),
            source_role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
            content: g.words(len, &WORDS),
            event_time: i as i64,
            created_at: i as i64,
            valid_until: None,
            invalid_reason: None,
            attributes: "{}".into(),
        })
        .unwrap();
    }
    let qs = queries(5, &WORDS);
    let (indexed, fts5) = both_ways(&s, Target::Episodes, &qs, &filter("a"));
    assert!(indexed.iter().filter(|h| h.len() == 10).count() > 100);
    same(&qs, &indexed, &fts5);
}

#[test]
fn a_namespace_ranks_as_if_it_were_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = SqliteStore::open(&dir.path().join("mixed.db")).unwrap();
    let alone = SqliteStore::open(&dir.path().join("alone.db")).unwrap();
    // Another tenant whose texts lean on other words: in one FTS5 table its
    // rows move every shared term's idf and the average length.
    fill(&mixed, "b", 1500, 99, &WORDS[..8]);
    fill(&mixed, "a", 500, 7, &WORDS);
    fill(&alone, "a", 500, 7, &WORDS);
    let qs = queries(13, &WORDS);
    mixed.set_text_index(true);
    let indexed = answers(&mixed, Target::Memories, &qs, &filter("a"));
    alone.set_text_index(false);
    let fts5_alone = answers(&alone, Target::Memories, &qs, &filter("a"));
    same(&qs, &indexed, &fts5_alone);
    mixed.set_text_index(false);
    let fts5_mixed = answers(&mixed, Target::Memories, &qs, &filter("a"));
    assert_ne!(
        fts5_mixed, fts5_alone,
        "the other tenant moves FTS5's ranking"
    );
}

#[test]
fn follows_writes_from_every_connection_and_forgets_a_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("w.db")).unwrap();
    let reader = s.reader().unwrap();
    fill(&s, "a", 300, 21, &WORDS);
    let qs = queries(17, &WORDS);
    let check = |who: &SqliteStore| {
        let (indexed, fts5) = both_ways(who, Target::Memories, &qs, &filter("a"));
        same(&qs, &indexed, &fts5);
    };
    // Built, then kept in step through the log: new rows, edited texts and
    // tags, a row gone, a row moved to another namespace.
    reader.set_text_index(true);
    answers(&reader, Target::Memories, &qs, &filter("a"));
    let mut g = Seq(5);
    for i in 300..340 {
        s.insert_memory(&memory(i, "a", g.words(6, &WORDS), vec![]))
            .unwrap();
    }
    let conn = s.connection();
    conn.execute(
        "UPDATE memories SET content = 'violin violin violin' WHERE id = 'a_00007'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE memories SET tags = '[\"ocean\"]' WHERE id = 'a_00008'",
        [],
    )
    .unwrap();
    conn.execute("DELETE FROM memories WHERE id = 'a_00009'", [])
        .unwrap();
    let hits = reader
        .fts_search(Target::Memories, &["violin".into()], &filter("a"), 3, 0.0)
        .unwrap();
    assert_eq!(hits[0].id, "a_00007");
    // A row moved to another namespace leaves one partition for the other.
    conn.execute(
        "UPDATE memories SET content = 'wombat', namespace = 'b' WHERE id = 'a_00010'",
        [],
    )
    .unwrap();
    let wombat = |ns: &str| {
        let hits = reader.fts_search(Target::Memories, &["wombat".into()], &filter(ns), 3, 0.0);
        hits.unwrap().into_iter().map(|h| h.id).collect::<Vec<_>>()
    };
    assert_eq!(
        (wombat("a"), wombat("b")),
        (vec![], vec!["a_00010".to_string()])
    );
    conn.execute(
        "UPDATE memories SET namespace = 'a' WHERE id = 'a_00010'",
        [],
    )
    .unwrap();
    assert_eq!(wombat("a"), ["a_00010"]);
    check(&reader);
    check(&s);
    // Inside a transaction, its own writes count; after a rollback, they
    // never did.
    let zephyr = || {
        s.insert_memory(&memory(900, "a", "zephyr zephyr chess".into(), vec![]))
            .unwrap();
        conn.execute(
            "UPDATE memories SET content = 'zephyr' WHERE id = 'a_00011'",
            [],
        )
        .unwrap();
    };
    conn.execute_batch("BEGIN").unwrap();
    zephyr();
    let hits = s
        .fts_search(Target::Memories, &["zephyr".into()], &filter("a"), 5, 0.0)
        .unwrap();
    let mut ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["a_00011", "a_00900"]);
    s.set_text_index(false);
    let fts5 = s
        .fts_search(
            Target::Memories,
            &["zephyr".into(), "chess".into()],
            &filter("a"),
            10,
            0.0,
        )
        .unwrap();
    s.set_text_index(true);
    // (The partition was dropped with the index: build it outside, then
    // write inside a transaction again.)
    conn.execute_batch("ROLLBACK").unwrap();
    answers(&s, Target::Memories, &qs, &filter("a"));
    conn.execute_batch("BEGIN").unwrap();
    zephyr();
    let indexed = s
        .fts_search(
            Target::Memories,
            &["zephyr".into(), "chess".into()],
            &filter("a"),
            10,
            0.0,
        )
        .unwrap();
    assert_eq!(
        indexed
            .iter()
            .map(|h| (&h.id, h.score.to_bits()))
            .collect::<Vec<_>>(),
        fts5.iter()
            .map(|h| (&h.id, h.score.to_bits()))
            .collect::<Vec<_>>()
    );
    conn.execute_batch("ROLLBACK").unwrap();
    assert!(
        s.fts_search(Target::Memories, &["zephyr".into()], &filter("a"), 5, 0.0)
            .unwrap()
            .is_empty()
    );
    check(&s);
    check(&reader);
    // A write transaction (`begin_immediate`, as the server's writes open
    // theirs) applies the changes committed before it and overlays its
    // own — also when it rewrites a row whose committed change is not
    // applied yet; after a rollback the index holds the committed row.
    answers(&s, Target::Memories, &qs, &filter("a"));
    conn.execute(
        "UPDATE memories SET content = 'quince quince' WHERE id = 'a_00012'",
        [],
    )
    .unwrap();
    s.insert_memory(&memory(901, "a", "quince tart".into(), vec![]))
        .unwrap();
    s.begin_immediate().unwrap();
    conn.execute(
        "UPDATE memories SET content = 'quince' WHERE id = 'a_00012'",
        [],
    )
    .unwrap();
    s.insert_memory(&memory(902, "a", "quince jam quince".into(), vec![]))
        .unwrap();
    let q = vec!["quince".to_string(), "jam".to_string()];
    let indexed = s
        .fts_search(Target::Memories, &q, &filter("a"), 10, 0.0)
        .unwrap();
    s.set_text_index(false);
    let fts5 = s
        .fts_search(Target::Memories, &q, &filter("a"), 10, 0.0)
        .unwrap();
    s.set_text_index(true);
    let ids = |h: &[ScoredId]| {
        h.iter()
            .map(|h| (h.id.clone(), h.score.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&indexed).len(), 3);
    assert_eq!(ids(&indexed), ids(&fts5));
    conn.execute_batch("ROLLBACK").unwrap();
    check(&s);
    check(&reader);
}

#[test]
fn a_partition_the_log_no_longer_reaches_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("p.db")).unwrap();
    fill(&s, "a", 200, 1, &WORDS);
    let qs = queries(2, &WORDS);
    answers(&s, Target::Memories, &qs, &filter("a"));
    s.insert_memory(&memory(500, "a", "quokka".into(), vec![]))
        .unwrap();
    // As if the writer had pruned past the partition's mark: the change
    // above is gone from the log.
    let conn = s.connection();
    let last: i64 = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'text_changes'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute("DELETE FROM text_changes", []).unwrap();
    conn.execute(
        "INSERT OR REPLACE INTO metadata(key, value) VALUES ('text_changes_pruned', ?1)",
        [last.to_string()],
    )
    .unwrap();
    assert_eq!(
        s.fts_search(Target::Memories, &["quokka".into()], &filter("a"), 5, 0.0)
            .unwrap()[0]
            .id,
        "a_00500"
    );
    let (indexed, fts5) = both_ways(&s, Target::Memories, &qs, &filter("a"));
    same(&qs, &indexed, &fts5);
}

/// A server killed with SIGKILL while two clients write and one searches
/// (so partitions are loaded and replaying the log) restarts with an index
/// exact with its table: every acknowledged memory is the first full-text
/// hit for its code word, through the restarted server and through a store
/// opened beside it, where the index and FTS5 answer alike.
#[test]
fn a_server_killed_mid_write_restarts_with_an_exact_index() {
    use crate::common::server::*;

    // Every partition saved (`text_save_min_rows`), so the restart loads
    // one saved mid-write and replays the log after it.
    let save = [("MNEMO_TEXT_SAVE_MIN_ROWS", "1")];
    let saved = |s: &Server| {
        std::fs::read_dir(s.dir().join("m.db.text")).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().ends_with(".fts"))
        })
    };
    let (dir, acked) =
        killed_mid_write(start_with(tempfile::tempdir().unwrap(), None, &save), saved);
    let server = start_with(dir, None, &save);
    crate::text_file::wait_loaded(&server.base);
    each_word_finds_its_memory(&server.base, &acked);
    let beside = SqliteStore::open(&server.dir().join("m.db")).unwrap();
    // (Each code word alone: a word in every row ties hundreds of rows,
    // and FTS5's statement keeps an arbitrary 200 of a tie.)
    let qs = word_queries(&acked);
    let (indexed, fts5) = both_ways(&beside, Target::Memories, &qs, &filter("default"));
    same(&qs, &indexed, &fts5);
    for ((_, id), hits) in acked.iter().zip(&indexed) {
        assert_eq!(&hits[0].0, id);
    }
}

/// (code word, memory id) of each memory a server acknowledged.
pub(crate) type Acked = Vec<(String, String)>;

/// Two clients write memories, each with a code word, and one recalls,
/// until `server` is killed with SIGKILL 1.2 s in (and once `ready`): its
/// data folder, and what it acknowledged.
pub(crate) fn killed_mid_write(
    server: crate::common::server::Server,
    ready: impl Fn(&crate::common::server::Server) -> bool,
) -> (tempfile::TempDir, Acked) {
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Acked>> = Arc::default();
    let mut threads = Vec::new();
    for who in 0..2 {
        let (base, stop, acked) = (server.base.clone(), stop.clone(), acked.clone());
        threads.push(std::thread::spawn(move || {
            for n in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let word = format!("zq{who}x{n}");
                let r = ureq::post(&format!("{base}/memories")).send_json(json!({
                    "content": format!("Writer {who} wrote note {n} about {word}"),
                    "skip_dedup": true,
                }));
                match r {
                    Ok(r) => {
                        let v: serde_json::Value = r.into_json().unwrap();
                        let id = v["id"].as_str().unwrap().to_string();
                        acked.lock().unwrap().push((word, id));
                    }
                    Err(_) => break,
                }
            }
        }));
    }
    let (base, stop2) = (server.base.clone(), stop.clone());
    threads.push(std::thread::spawn(move || {
        while !stop2.load(Ordering::SeqCst) {
            let q = json!({"query": "writer note", "dry": true, "limit": 5});
            if ureq::post(&format!("{base}/recall")).send_json(q).is_err() {
                break;
            }
        }
    }));
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready(&server) {
        assert!(
            std::time::Instant::now() < until,
            "not ready to be killed in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dir = server.crash();
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 10, "{} acknowledged", acked.len());
    println!("{} memories acknowledged before the kill", acked.len());
    (dir, acked)
}

/// Recall of each code word through the server at `base` finds its memory
/// first.
pub(crate) fn each_word_finds_its_memory(base: &str, acked: &Acked) {
    use crate::common::server::call;
    use serde_json::json;
    for (word, id) in acked {
        let (status, v) = call(
            ureq::post(&format!("{base}/recall")),
            Some(&json!({"query": word, "dry": true, "limit": 3}).to_string()),
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["hits"][0]["id"], json!(id), "{word}: {v}");
    }
}

/// Each code word alone, with a word of no row.
pub(crate) fn word_queries(acked: &Acked) -> Vec<Vec<String>> {
    acked
        .iter()
        .map(|(w, _)| vec![w.clone(), "nowhere".into()])
        .collect()
}

/// After a bulk write (`transfer::import` calls it), a namespace past the
/// inline size has its partition built in the background before any
/// search asks; a small one waits for its first search, as before.
#[test]
fn a_bulk_write_has_its_large_partitions_built_before_a_search() {
    use mnemo_host::storage::text::TEXT_INLINE_BUILD_ROWS;
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("warm.db")).unwrap();
    s.set_text_index(true);
    fill(&s, "big", TEXT_INLINE_BUILD_ROWS as usize + 1, 5, &WORDS);
    let reader = s.reader().unwrap();
    reader.set_text_index(true);
    reader.text_warm(Target::Memories, "big");
    reader.text_warm(Target::Memories, "nobody");
    let status = reader.text_status();
    assert_eq!(status.partitions + status.building, 1, "only the large one");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while reader.text_status().partitions == 0 {
        assert!(std::time::Instant::now() < deadline, "the builder built it");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let qs = queries(41, &WORDS);
    let (indexed, fts5) = both_ways(&reader, Target::Memories, &qs, &filter("big"));
    same(&qs, &indexed, &fts5);
}
