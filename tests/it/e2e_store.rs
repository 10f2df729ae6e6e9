//! End to end over a real SQLite file, continued: export/import, nightly
//! fading, CJK search, the HNSW graph against the exact search, BM25 and
//! very common terms, and the scheduled runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;

#[test]
fn export_import_round_trip_is_lossless_and_import_dedups() {
    let a_dir = tempfile::tempdir().unwrap();
    let mut a = open(a_dir.path());
    a.remember(RememberRequest {
        content: "Deploy with `make release` then tag".into(),
        kind: Some(Kind::Procedural),
        tags: vec!["ops".into(), "deploy".into()],
        importance: Some(0.8),
        attributes: Some(r#"{"origin":"runbook"}"#.into()),
        ..Default::default()
    })
    .unwrap();
    remember(&mut a, "", "Caroline lives in Lisbon");
    remember(&mut a, "", "Caroline lives in Lisbon"); // reinforced
    let gone = remember(&mut a, "", "an obsolete note").memory;
    a.delete("", &gone.id, "obsolete").unwrap();
    remember(&mut a, "proj", "project-only memory");
    let t = |s: &str, text: &str| Turn {
        session_id: s.into(),
        role: "user".into(),
        content: text.into(),
        ..Default::default()
    };
    a.ingest(t("s1", "We met Melanie at the museum")).unwrap();
    a.ingest(t("s2", "Melanie painted the lake")).unwrap();
    a.enrich(50).unwrap();
    a.backfill_all(64, |_| {}).unwrap();
    let fact = |object: &str, exclusive| FactInput {
        subject: "Caroline".into(),
        predicate: "lives in".into(),
        object: object.into(),
        exclusive,
        ..Default::default()
    };
    a.add_fact(fact("Lisbon", false)).unwrap();
    let porto = a.add_fact(fact("Porto", true)).unwrap();
    assert_eq!(porto.superseded.len(), 1, "the history is part of the data");

    let mut dump = Vec::new();
    let c = mnemo_host::transfer::export(&a, &mut dump, None, true).unwrap();
    assert_eq!((c.memories, c.episodes, c.sessions, c.facts), (4, 2, 2, 2));
    assert!(c.entities >= 2 && c.vectors == 6, "{c:?}");

    let b_dir = tempfile::tempdir().unwrap();
    let mut b = open(b_dir.path());
    let ci = mnemo_host::transfer::import(&mut b, &dump[..], |_, _| {}).unwrap();
    assert_eq!(ci.created, 4 + 2 + 2 + c.entities + 2);
    assert_eq!((ci.existing, ci.merged, ci.vectors), (0, 0, 6));
    {
        let (sa, sb) = (&a.ports().store, &b.ports().store);
        // Attributes travel as JSON objects: the same object, its keys in
        // the order JSON gives them (key order carries nothing).
        let json = |a: &str| -> String {
            serde_json::from_str::<serde_json::Value>(a)
                .unwrap()
                .to_string()
        };
        let canonical = |ms: Vec<Memory>| -> Vec<Memory> {
            ms.into_iter()
                .map(|m| Memory {
                    attributes: json(&m.attributes),
                    ..m
                })
                .collect()
        };
        assert_eq!(
            canonical(sa.all_memories(None).unwrap()),
            canonical(sb.all_memories(None).unwrap()),
            "memories, trash included, field for field"
        );
        let canonical_episodes = |es: Vec<Episode>| -> Vec<Episode> {
            es.into_iter()
                .map(|e| Episode {
                    attributes: json(&e.attributes),
                    ..e
                })
                .collect()
        };
        assert_eq!(
            canonical_episodes(sa.all_episodes(None).unwrap()),
            canonical_episodes(sb.all_episodes(None).unwrap()),
            "episodes field for field (`session_turn` and `enriched_at` included)"
        );
        assert_eq!(
            sa.all_sessions(None).unwrap(),
            sb.all_sessions(None).unwrap()
        );
        assert_eq!(
            sa.all_entities(None).unwrap(),
            sb.all_entities(None).unwrap()
        );
        assert_eq!(
            sa.all_facts(None).unwrap(),
            sb.all_facts(None).unwrap(),
            "facts, superseded ones included, field for field"
        );
        let ids: Vec<String> = sa
            .all_memories(None)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(
            sa.get_vectors(Target::Memories, &ids).unwrap(),
            sb.get_vectors(Target::Memories, &ids).unwrap()
        );
    }
    assert_eq!(
        b.entity_info("", "melanie", 10).unwrap()[0].episodes.len(),
        2
    );

    // Importing again changes nothing.
    let again = mnemo_host::transfer::import(&mut b, &dump[..], |_, _| {}).unwrap();
    assert_eq!(again.created, 0);
    assert_eq!(b.ports().store.all_memories(None).unwrap().len(), 4);

    // Into a store that already knows a text: folded, not doubled.
    let c_dir = tempfile::tempdir().unwrap();
    let mut cm = open(c_dir.path());
    let own = remember(&mut cm, "", "Caroline lives in Lisbon").memory;
    let own_fact = cm.add_fact(fact("Porto", false)).unwrap().fact;
    let ci = mnemo_host::transfer::import(&mut cm, &dump[..], |_, _| {}).unwrap();
    assert_eq!(ci.merged, 2, "the memory and the current fact");
    let current = cm
        .query_facts(FactQuery {
            entity: Some("Caroline".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(current.len(), 1, "{current:?}");
    assert_eq!(current[0].id, own_fact.id);
    let kept = cm.get("", &own.id).unwrap();
    assert_eq!(kept.repetition_count, 2, "its own 0 + the import's 1 + 1");
    assert_eq!(cm.stats(None).unwrap().active, 3);

    // A bad line anywhere: nothing of the file is written.
    let d_dir = tempfile::tempdir().unwrap();
    let mut d = open(d_dir.path());
    let mut broken = dump.clone();
    broken.extend_from_slice(b"{\"kind\": \"memory\", \"oops\": 1}\n");
    let err = mnemo_host::transfer::import(&mut d, &broken[..], |_, _| {}).unwrap_err();
    assert!(format!("{err:#}").contains("line"), "{err:#}");
    assert_eq!(count(&d, "SELECT COUNT(*) FROM memories"), 0);
    assert_eq!(count(&d, "SELECT COUNT(*) FROM episodes"), 0);
}

#[test]
fn nightly_fading_moves_forgotten_facts_to_the_trash() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let fresh = remember(&mut m, "", "a fact learned just now").memory;
    // A fact last touched 100 days ago (import keeps times): 0.1/day → e^-10.
    let day = 86_400_000;
    let mut old = fresh.clone();
    old.id = "mem_old".into();
    old.content = "a fact nobody asked about for months".into();
    old.created_at -= 100 * day;
    old.modified_at = old.created_at;
    m.import(ImportItem::Memory(MemoryLine {
        memory: old,
        vector: None,
    }))
    .unwrap();
    let r = m.fade_as_configured().unwrap();
    assert_eq!((r.examined, r.pruned), (2, 1));
    let trashed = m
        .list(ListRequest {
            deleted: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(trashed[0].id, "mem_old");
    assert_eq!(trashed[0].invalid_reason.as_deref(), Some("faded"));
    assert!(m.get("", &fresh.id).unwrap().confidence > 0.99);
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM audit_log WHERE action = 'fade'"),
        1
    );
    m.restore("", "mem_old").unwrap();
}

#[test]
fn chinese_japanese_and_korean_are_found_by_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    let zh = common::remember(&mut m, "default", "我的猫喜欢在窗台上晒太阳").memory;
    let ja = common::remember(&mut m, "default", "東京の会社で働いています").memory;
    let ko = common::remember(&mut m, "default", "주말마다 서울에서 등산을 해요").memory;
    common::remember(&mut m, "default", "Unrelated English note about tea");
    for (query, want) in [("猫 晒太阳", &zh), ("東京", &ja), ("서울", &ko)] {
        let r = common::recall(&mut m, "default", query);
        let fts_ids: Vec<&str> = r
            .hits
            .iter()
            .filter(|h| {
                h.explanation
                    .channels
                    .iter()
                    .any(|c| c.channel == Channel::Fts)
            })
            .map(|h| h.item.id())
            .collect();
        assert_eq!(
            fts_ids.first(),
            Some(&want.id.as_str()),
            "{query}: {fts_ids:?}"
        );
    }
    // The index keeps up with edits (the trigger segments the new text).
    m.update(
        "default",
        &zh.id,
        MemoryPatch {
            content: Some("我的狗喜欢在公园里跑步".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let r = common::recall(&mut m, "default", "公园 跑步");
    assert_eq!(r.hits[0].item.id(), zh.id);
    assert_eq!(common::count(&m, "SELECT COUNT(*) FROM memories_fts"), 4);
}

#[test]
fn the_hnsw_graph_answers_like_the_exact_search_and_follows_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.ann_min_rows = Some(50);
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    let a = [
        "tea", "chess", "rust", "garden", "piano", "hiking", "bread", "stars", "river", "violin",
        "maps", "clay", "tennis",
    ];
    let b = [
        "morning", "practice", "lessons", "weekend", "friends", "winter", "travel", "books",
        "coffee", "music", "market", "school", "dinner", "garage", "ocean", "forest", "city",
    ];
    let c = [
        "quietly", "often", "rarely", "together", "alone", "happily", "slowly", "daily", "badly",
        "gladly", "late", "early", "twice", "again", "soon", "never", "always", "later", "first",
    ];
    for i in 0..160 {
        let text = format!(
            "{} {} {} {}",
            a[i % a.len()],
            b[(i * 7) % b.len()],
            c[(i * 11) % c.len()],
            a[(i * 5 + 3) % a.len()]
        );
        common::remember(&mut m, "default", &text);
    }
    let ask = |m: &mut mnemo_host::Mnemo, q: &str| -> Vec<String> {
        m.recall(RecallRequest {
            query: q.into(),
            dry: true,
            ..Default::default()
        })
        .unwrap()
        .hits
        .iter()
        .map(|h| h.item.id().to_string())
        .collect()
    };
    m.ports().store.set_ann_min_rows(None);
    let exact = ask(&mut m, "piano practice");
    m.ports().store.set_ann_min_rows(Some(50));
    ask(&mut m, "piano practice"); // starts the build
    let graphs = m.ports().store.ann_wait();
    assert_eq!(graphs.len(), 1);
    assert_eq!(graphs[0].0, 160);
    let approx = ask(&mut m, "piano practice");
    let shared = exact.iter().filter(|id| approx.contains(id)).count();
    assert!(
        shared * 10 >= exact.len() * 9,
        "{shared} of {}",
        exact.len()
    );
    // A memory written after the build is found through the fresh list.
    let new = common::remember(&mut m, "default", "a brand new note about violins").memory;
    assert!(ask(&mut m, "violins").contains(&new.id));
    // Deleted memories never come back from the graph.
    m.delete("default", &new.id, "test").unwrap();
    assert!(!ask(&mut m, "violins").contains(&new.id));
}

/// `n` memories of `default`, `mem_00000`…, their texts from `text`,
/// inserted straight into the store in one transaction (no dedup).
fn stored_as_is(m: &mut mnemo_host::Mnemo, n: usize, text: impl Fn(usize) -> String) {
    m.atomically(mnemo_host::runtime::Locks::All, |m| -> anyhow::Result<()> {
        for i in 0..n {
            let mem = Memory::new(format!("mem_{i:05}"), "default".into(), text(i), 0, 0);
            m.ports().store.insert_memory(&mem)?;
        }
        Ok(())
    })
    .unwrap();
}

fn in_default() -> SearchFilter {
    SearchFilter {
        namespaces: vec!["default".into()],
        ..Default::default()
    }
}

#[test]
fn very_common_terms_do_not_drive_the_bm25_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    stored_as_is(&mut m, 5_100, |i| {
        if i % 1000 == 0 {
            format!("weather report {i} mentions zephyr")
        } else {
            format!("weather report {i}")
        }
    });
    let filter = in_default();
    let store = &m.ports().store;
    let terms = vec!["weather".to_string(), "zephyr".to_string()];
    let hits = store
        .fts_search(Target::Memories, &terms, &filter, 20, 0.0)
        .unwrap();
    assert_eq!(hits.len(), 6, "only the rarer term ranks: {hits:?}");
    // A query of nothing but common terms still answers.
    let hits = store
        .fts_search(Target::Memories, &["weather".to_string()], &filter, 20, 0.0)
        .unwrap();
    assert_eq!(hits.len(), 20);
}

/// A term in at least half the index's rows (FTS5's idf floored to 1e-6)
/// leaves a query that has informative terms: the rows holding only it are
/// not candidates while the informative terms fill the limit; when they do
/// not, those rows rank after. 300 rows (the index's row count is a
/// two-byte varint): `alpha` in 150 of them (exactly half: left out of the
/// first pass), `beta` in 149 (kept). On both backends
/// (`MNEMO_TEST_BACKEND`).
#[test]
fn terms_in_half_the_rows_do_not_drive_the_bm25_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    stored_as_is(&mut m, 300, |i| match i {
        0..150 => format!("alpha note {i}"),
        150..299 => format!("beta note {i}"),
        _ => "gamma note".to_string(),
    });
    let filter = in_default();
    let store = &m.ports().store;
    let search = |terms: &[&str], limit: u32| {
        let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
        store
            .fts_search(Target::Memories, &terms, &filter, limit, 0.0)
            .unwrap()
    };
    let beta = |id: &str| ("mem_00150".."mem_00299").contains(&id);
    // 149 `beta` rows fill a limit of 100: `alpha` is not searched.
    let hits = search(&["alpha", "beta"], 100);
    assert_eq!(hits.len(), 100);
    assert!(hits.iter().all(|h| beta(&h.id)), "{hits:?}");
    // A limit of 400: the `beta` rows, then the `alpha` ones.
    let hits = search(&["alpha", "beta"], 400);
    assert_eq!(hits.len(), 299);
    assert!(hits[..149].iter().all(|h| beta(&h.id)), "{hits:?}");
    assert!(hits[149..].iter().all(|h| h.id.as_str() < "mem_00150"));
    // `note` (every row) and `alpha` are both common: nothing informative
    // is left, so the query keeps them all.
    assert_eq!(search(&["note", "alpha"], 400).len(), 300);
    // One informative term of three, then the rest.
    let hits = search(&["note", "alpha", "gamma"], 1);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "mem_00299");
    assert_eq!(search(&["note", "alpha", "gamma"], 400).len(), 300);
}

#[test]
fn scheduled_runs_do_the_work_and_log_their_outcome() {
    use mnemo_host::scheduler::{self, Task};
    use mnemo_host::storage::DecisionFilter;
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    remember(&mut m, "", "The user keeps bees on the roof");
    let first = scheduler::run(&mut m, Task::Interval);
    assert!(first.starts_with("ok: epoch"), "{first}");
    // Seed 004: the interval skips a cycle when nothing was written since.
    let idle = scheduler::run(&mut m, Task::Interval);
    assert_eq!(idle, "skipped: nothing written since the last cycle");
    // Writes are told from the cycle's own by millisecond timestamps.
    std::thread::sleep(std::time::Duration::from_millis(5));
    remember(&mut m, "", "The bees swarmed in May");
    assert!(scheduler::run(&mut m, Task::Interval).starts_with("ok"));
    for task in [Task::Consolidate, Task::Fade, Task::Enrich, Task::Reflect] {
        let outcome = scheduler::run(&mut m, task);
        assert!(outcome.starts_with("ok"), "{}: {outcome}", task.name());
    }
    let log = m
        .ports()
        .store
        .decision_log(&DecisionFilter {
            action: Some("scheduled".into()),
            limit: 20,
            ..Default::default()
        })
        .unwrap();
    let runs: Vec<(&str, bool)> = log
        .iter()
        .rev()
        .map(|e| (e.target_id.as_str(), e.detail.starts_with("ok")))
        .collect();
    assert_eq!(
        runs,
        [
            ("interval", true),
            ("interval", false),
            ("interval", true),
            ("consolidate", true),
            ("fade", true),
            ("enrich", true),
            ("reflect", true),
        ]
    );
    assert_eq!(log[5].detail, idle, "the outcome is what is logged");
}
