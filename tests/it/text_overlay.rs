//! A write transaction's searches see each of its own writes, each read
//! once (`host/src/storage/text/own.rs`): after every write the index
//! answers bit for bit as FTS5 does on a twin database given the same
//! writes — also after a savepoint or a whole transaction rolled back,
//! when the rows and change numbers written next repeat those it undid.
//! Transactions end here as `Transaction::finish` ends them: the SQL and
//! `SqliteStore::ending`.

use mnemo_core::model::*;
use mnemo_host::storage::SqliteStore;

use super::text_index::{Seq, WORDS, answers, fill, filter, memory, queries, same};

/// Two databases given the same writes: one searched through the index,
/// one through FTS5.
struct Twins {
    _dir: tempfile::TempDir,
    index: SqliteStore,
    fts5: SqliteStore,
    qs: Vec<Vec<String>>,
}

impl Twins {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let index = SqliteStore::open(&dir.path().join("index.db")).unwrap();
        let fts5 = SqliteStore::open(&dir.path().join("fts5.db")).unwrap();
        fts5.set_text_index(false);
        for s in [&index, &fts5] {
            fill(s, "a", 300, 21, &WORDS);
        }
        let qs = queries(17, &WORDS);
        let twins = Self {
            _dir: dir,
            index,
            fts5,
            qs,
        };
        // Built outside a transaction, so the ones below search it.
        twins.check("built");
        assert_eq!(twins.index.text_status().partitions, 1);
        twins
    }

    /// The same write on both.
    fn write(&self, f: impl Fn(&SqliteStore)) {
        f(&self.index);
        f(&self.fts5);
    }

    fn sql(&self, sql: &str) {
        self.write(|s| s.connection().execute_batch(sql).unwrap());
    }

    fn check(&self, when: &str) {
        let f = filter("a");
        let indexed = answers(&self.index, Target::Memories, &self.qs, &f);
        let fts5 = answers(&self.fts5, Target::Memories, &self.qs, &f);
        assert!(
            indexed.iter().any(|a| !a.is_empty()),
            "{when}: the queries find rows"
        );
        same(&self.qs, &indexed, &fts5);
        // Dedup's two searches at once: the index ranks on a second
        // thread while this one searches the vectors, and answers alike.
        let beside: Vec<Vec<(String, u32)>> = self
            .qs
            .iter()
            .map(|q| {
                let v = [1.0, 0.0, 0.0];
                let (_, best) = self
                    .index
                    .near_search(Target::Memories, Some(&v), q, &f, 10, 0.35)
                    .unwrap();
                best.into_iter()
                    .map(|h| (h.id, h.score.to_bits()))
                    .collect()
            })
            .collect();
        same(&self.qs, &beside, &fts5);
        assert_eq!(self.index.text_status().building, 0, "{when}");
    }
}

fn insert(i: usize, text: &str) -> impl Fn(&SqliteStore) {
    let m = memory(i, "a", text.to_string(), vec![]);
    move |s: &SqliteStore| s.insert_memory(&m).unwrap()
}

fn edit(id: &str, text: &str) -> impl Fn(&SqliteStore) {
    let (id, text) = (id.to_string(), text.to_string());
    move |s: &SqliteStore| {
        s.connection()
            .execute(
                "UPDATE memories SET content = ?1 WHERE id = ?2",
                [&text, &id],
            )
            .unwrap();
    }
}

#[test]
fn a_write_transaction_searches_each_of_its_writes_like_fts5() {
    let t = Twins::new();
    let mut g = Seq(9);
    t.write(|s| s.begin_immediate().unwrap());
    for i in 0..16 {
        let len = 4 + g.next(8);
        t.write(insert(300 + i, &g.words(len, &WORDS)));
        if i % 4 == 3 {
            // A row of its own written again.
            t.write(edit(&format!("a_{:05}", 298 + i), &g.words(5, &WORDS)));
        }
        if i % 5 == 4 {
            // A committed row rewritten.
            t.write(edit(&format!("a_{i:05}"), &g.words(3, &WORDS)));
        }
        t.check(&format!("write {i}"));
    }
    // A savepoint rolled back (as a failed call's `Transaction` does),
    // then other texts in the same rows under the same change numbers.
    t.sql("SAVEPOINT core_call");
    t.write(insert(400, "zephyr chess ocean"));
    t.check("in the savepoint");
    t.sql("ROLLBACK TO core_call; RELEASE core_call");
    t.write(|s| s.ending(true, false));
    for i in 0..3 {
        t.write(insert(500 + i, &g.words(6, &WORDS)));
        t.check("after the savepoint");
    }
    t.sql("COMMIT");
    t.write(|s| s.ending(false, true));
    t.check("committed");
    // A whole transaction rolled back, and the next one writing other
    // texts where it wrote.
    t.write(|s| s.begin_immediate().unwrap());
    t.write(insert(600, "violin violin river"));
    t.check("before the rollback");
    t.sql("ROLLBACK");
    t.write(|s| s.ending(false, false));
    t.write(|s| s.begin_immediate().unwrap());
    t.write(insert(700, "bread market bread"));
    t.check("after the rollback");
    t.sql("COMMIT");
    t.write(|s| s.ending(false, true));
    t.check("at the end");
}
