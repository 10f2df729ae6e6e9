//! Full-text partitions saved beside a SQLite database
//! (`host/src/storage/text/file.rs`) on real files: a reopened store loads
//! a saved partition, replays the writes after its mark and answers as
//! FTS5 does; a file the pruned log no longer reaches is dropped and its
//! partition built from the table (and saved again). The kill -9 test,
//! which restarts a server from a partition saved mid-write, is
//! `text_index.rs`'s.

use mnemo_core::model::*;
use mnemo_host::storage::SqliteStore;
use mnemo_host::storage::text::TextStatus;

use crate::text_index::{WORDS, answers, fill, filter, memory, queries, same};

/// A store saving every partition.
fn open(path: &std::path::Path) -> SqliteStore {
    let s = SqliteStore::open(path).unwrap();
    s.set_text_save_min_rows(Some(1));
    s
}

/// The status once the saved partitions are loaded (or built instead).
fn preloaded(s: &SqliteStore) -> TextStatus {
    s.text_preload();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let st = s.text_status();
        if st.building == 0 {
            return st;
        }
        assert!(std::time::Instant::now() < until, "still loading: {st:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The store at `path` opened again, once its saved partitions are loaded
/// (or built instead), with its status then.
fn reopened(path: &std::path::Path) -> (SqliteStore, TextStatus) {
    let s = open(path);
    let st = preloaded(&s);
    (s, st)
}

/// The first full-text hit of `word` in namespace `a`.
fn first_hit(s: &SqliteStore, word: &str) -> String {
    s.fts_search(Target::Memories, &[word.into()], &filter("a"), 5, 0.0)
        .unwrap()[0]
        .id
        .clone()
}

/// The index's answers, from the partitions it holds now, and those of
/// partitions built anew from the table (turning the index off drops them;
/// a partition this small is then built on the search that needs it). In a
/// store of one namespace, FTS5's too.
fn like_rebuilt(s: &SqliteStore, qs: &[Vec<String>], ns: &str, fts5_too: bool) {
    let indexed = answers(s, Target::Memories, qs, &filter(ns));
    s.set_text_index(false);
    if fts5_too {
        same(qs, &indexed, &answers(s, Target::Memories, qs, &filter(ns)));
    }
    s.set_text_index(true);
    let rebuilt = answers(s, Target::Memories, qs, &filter(ns));
    same(qs, &indexed, &rebuilt);
}

fn files(path: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path.with_extension("db.text"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_saved_partition_is_loaded_and_replays_the_writes_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = open(&path);
    fill(&s, "a", 300, 31, &WORDS);
    fill(&s, "b", 200, 32, &WORDS);
    let qs = queries(33, &WORDS);
    answers(&s, Target::Memories, &qs, &filter("a"));
    answers(&s, Target::Memories, &qs, &filter("b"));
    // The background catch-up saves both (never saved yet).
    s.text_catch_up_all().unwrap();
    assert_eq!(files(&path), ["memories-61.fts", "memories-62.fts"]);
    // After the save: new rows, an edit, a delete and moves both ways.
    let mut g = crate::text_index::Seq(34);
    for i in 300..320 {
        s.insert_memory(&memory(i, "a", g.words(6, &WORDS), vec![]))
            .unwrap();
    }
    let conn = s.connection();
    for sql in [
        "UPDATE memories SET content = 'violin violin quince' WHERE id = 'a_00007'",
        "DELETE FROM memories WHERE id = 'a_00011'",
        "UPDATE memories SET namespace = 'b' WHERE id = 'a_00013'",
        "UPDATE memories SET namespace = 'a' WHERE id = 'b_00005'",
    ] {
        conn.execute(sql, []).unwrap();
    }
    drop(s);

    let (s, st) = reopened(&path);
    // Both from their files, as saved: 500 rows (a rebuild would hold 519).
    assert_eq!((st.loaded, st.partitions, st.rows), (2, 2, 500), "{st:?}");
    assert_eq!(first_hit(&s, "quince"), "a_00007");
    answers(&s, Target::Memories, &qs, &filter("b"));
    let st = s.text_status();
    assert_eq!(
        (st.loaded, st.rows),
        (2, 519),
        "replayed, not rebuilt: {st:?}"
    );
}

#[test]
fn a_saved_partition_the_log_no_longer_reaches_is_built_from_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let s = open(&path);
    fill(&s, "a", 300, 41, &WORDS);
    let qs = queries(42, &WORDS);
    answers(&s, Target::Memories, &qs, &filter("a"));
    s.text_catch_up_all().unwrap();
    let saved = std::fs::read(path.with_extension("db.text").join("memories-61.fts")).unwrap();
    s.insert_memory(&memory(500, "a", "quokka".into(), vec![]))
        .unwrap();
    // As if the writer had pruned past the file's mark.
    let conn = s.connection();
    conn.execute_batch(
        "DELETE FROM text_changes;
         INSERT OR REPLACE INTO metadata(key, value)
           SELECT 'text_changes_pruned', seq FROM sqlite_sequence WHERE name = 'text_changes';",
    )
    .unwrap();
    drop(s);

    let (s, st) = reopened(&path);
    assert_eq!((st.loaded, st.partitions, st.rows), (0, 1, 301), "{st:?}");
    assert_eq!(first_hit(&s, "quokka"), "a_00500");
    like_rebuilt(&s, &qs, "a", true);
    // The build was saved in place of the dropped file.
    let again = std::fs::read(path.with_extension("db.text").join("memories-61.fts")).unwrap();
    assert_ne!(again, saved);
}

/// Waits until the server at `base` has loaded a saved partition and
/// builds none.
pub(crate) fn wait_loaded(base: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, v) = crate::common::server::call(ureq::get(&format!("{base}/health")), None);
        assert_eq!(status, 200, "{v}");
        if v["text"]["loaded"].as_u64() >= Some(1) && v["text"]["building"] == 0 {
            return;
        }
        assert!(std::time::Instant::now() < until, "nothing loaded: {v}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
