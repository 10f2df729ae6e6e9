//! The storage contract: what every implementation of the `Storage` port
//! must do, checked the same way against each. `all` runs every check, each
//! on a fresh store from `fresh`, and panics with the check's name and the
//! difference. The core runs it against `MemStorage`; the host runs it
//! against its SQLite store (`tests/it/contract.rs`), so the fake the core's
//! tests rely on cannot drift from the real database.
//!
//! Vectors are `DIM`-dimensional: a real store must be locked to that
//! dimension before the suite runs.

mod graph;

use graph::{enrichment, entities, facts, meta, stats, tag_counts, versions};

use crate::model::*;
use crate::ports::Storage;

/// The dimension of the vectors the suite stores.
pub const DIM: usize = 8;

const NS: &str = "contract";
const OTHER: &str = "elsewhere";
const HOUR: Millis = 3_600_000;

type Check<S> = (&'static str, fn(&S));

/// Runs every check of the contract, each on a fresh store.
pub fn all<S: Storage>(mut fresh: impl FnMut() -> S) {
    let checks: &[Check<S>] = &[
        ("a memory comes back field for field", memory_round_trip),
        (
            "find_exact reads active memories of the namespaces",
            find_exact,
        ),
        ("listing filters, orders and pages", listing),
        (
            "the cycle's candidate filters and the namespaces",
            candidate_filters,
        ),
        ("touch bumps access; renewal does not", touch),
        ("episodes and sessions", dialogue),
        ("full text search", full_text),
        ("vectors and their search", vectors),
        ("entities, aliases and links", entities),
        ("enrichment candidates", enrichment),
        ("facts and their history", facts),
        ("tag counts", tag_counts),
        ("stats", stats),
        ("metadata and the decision log", meta),
        ("versions of memories", versions),
    ];
    for (name, check) in checks {
        let store = fresh();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&store)));
        if let Err(e) = outcome {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("storage contract: `{name}` failed: {why}");
        }
    }
}

fn memory(id: &str, ns: &str, content: &str, at: Millis) -> Memory {
    Memory::new(id.into(), ns.into(), content.into(), at, 0)
}

fn ids(ms: &[Memory]) -> Vec<&str> {
    ms.iter().map(|m| m.id.as_str()).collect()
}

fn scored(hits: &[ScoredId]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

fn unit(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    v[i % DIM] = 1.0;
    v
}

fn filter(ns: &str) -> SearchFilter {
    SearchFilter {
        namespaces: vec![ns.into()],
        ..Default::default()
    }
}

fn memory_round_trip<S: Storage>(s: &S) {
    let mut m = Memory {
        kind: Kind::Procedural,
        layer: Layer::Working,
        importance: 0.75,
        confidence: 0.5,
        decay_rate: 0.0,
        access_count: 3,
        repetition_count: 2,
        last_accessed: Some(5 * HOUR),
        event_time: 2 * HOUR,
        created_epoch: 7,
        session_id: Some("s1".into()),
        source: Some("api".into()),
        source_role: Some("user".into()),
        tags: vec!["b".into(), "a".into()],
        attributes: r#"{"k":1}"#.into(),
        source_ids: vec!["ep_1".into(), "mem_0".into()],
        supersedes: Some("mem_old".into()),
        ..memory("mem_1", NS, "always run the tests before pushing", 4 * HOUR)
    };
    s.insert_memory(&m).unwrap();
    let got = s.get_memories(&["mem_1".into(), "missing".into()]).unwrap();
    assert_eq!(got, vec![m.clone()], "inserted row read back");
    m.content = "always run every test before pushing".into();
    m.valid_until = Some(6 * HOUR);
    m.invalid_reason = Some("merged".into());
    m.superseded_by = Some("mem_2".into());
    m.modified_at = 6 * HOUR;
    s.update_memory(&m).unwrap();
    assert_eq!(
        s.get_memories(&["mem_1".into()]).unwrap(),
        vec![m],
        "updated row"
    );
}

fn find_exact<S: Storage>(s: &S) {
    s.insert_memory(&memory("mem_a", NS, "likes red", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_b", OTHER, "likes blue", HOUR))
        .unwrap();
    let mut gone = memory("mem_c", NS, "likes green", HOUR);
    gone.valid_until = Some(2 * HOUR);
    s.insert_memory(&gone).unwrap();
    let found = s.find_exact(&[NS.into()], "likes red").unwrap();
    assert_eq!(found.map(|m| m.id), Some("mem_a".into()));
    assert!(
        s.find_exact(&[NS.into()], "likes blue").unwrap().is_none(),
        "other namespace"
    );
    assert!(
        s.find_exact(&[NS.into()], "likes green").unwrap().is_none(),
        "deleted"
    );
    assert!(
        s.find_exact(&[NS.into()], "likes").unwrap().is_none(),
        "exact only"
    );
}

fn listing<S: Storage>(s: &S) {
    for (i, (layer, kind, tag)) in [
        (Layer::Buffer, Kind::Semantic, "x"),
        (Layer::Working, Kind::Procedural, "y"),
        (Layer::Core, Kind::Semantic, "x"),
        (Layer::Buffer, Kind::Episodic, "z"),
    ]
    .into_iter()
    .enumerate()
    {
        let at = (i as Millis + 1) * HOUR;
        let mut m = memory(&format!("mem_{i}"), NS, &format!("memory number {i}"), at);
        m.layer = layer;
        m.kind = kind;
        m.tags = vec![tag.into()];
        // Modified in the reverse order of creation.
        m.modified_at = (10 - i as Millis) * HOUR;
        s.insert_memory(&m).unwrap();
    }
    let mut gone = memory("mem_gone", NS, "in the trash", 9 * HOUR);
    gone.valid_until = Some(9 * HOUR);
    s.insert_memory(&gone).unwrap();
    s.insert_memory(&memory("mem_other", OTHER, "elsewhere", 9 * HOUR))
        .unwrap();
    let q = |f: &dyn Fn(&mut ListQuery)| {
        let mut q = ListQuery {
            namespaces: vec![NS.into()],
            limit: 100,
            ..Default::default()
        };
        f(&mut q);
        s.list_memories(&q).unwrap()
    };
    assert_eq!(
        ids(&q(&|_| {})),
        ["mem_3", "mem_2", "mem_1", "mem_0"],
        "active, newest creation first"
    );
    assert_eq!(ids(&q(&|q| q.state = ListState::Deleted)), ["mem_gone"]);
    assert_eq!(q(&|q| q.state = ListState::All).len(), 5);
    assert_eq!(
        ids(&q(&|q| q.layers = vec![Layer::Buffer])),
        ["mem_3", "mem_0"]
    );
    assert_eq!(
        ids(&q(&|q| q.kinds = vec![Kind::Semantic])),
        ["mem_2", "mem_0"]
    );
    assert_eq!(ids(&q(&|q| q.tags = vec!["x".into()])), ["mem_2", "mem_0"]);
    assert_eq!(
        ids(&q(&|q| q.by_modified = true)),
        ["mem_0", "mem_1", "mem_2", "mem_3"],
        "newest modification first"
    );
    assert_eq!(
        ids(&q(&|q| {
            q.by_modified = true;
            q.layers = vec![Layer::Core, Layer::Buffer];
            q.limit = 2;
            q.offset = 1;
        })),
        ["mem_2", "mem_3"],
        "newest modification first across several layers, paged"
    );
    assert_eq!(
        ids(&q(&|q| q.modified_since = Some(9 * HOUR))),
        ["mem_1", "mem_0"]
    );
    assert_eq!(
        ids(&q(&|q| {
            q.limit = 2;
            q.offset = 1;
        })),
        ["mem_2", "mem_1"],
        "paging"
    );
    let all_ns = s
        .list_memories(&ListQuery {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all_ns.len(), 5, "no namespace: every namespace");
    assert_eq!(
        s.active_namespaces().unwrap(),
        [NS, OTHER],
        "namespaces with an active memory"
    );
}

/// The filters a consolidation cycle reads its candidates with.
fn candidate_filters<S: Storage>(s: &S) {
    for (i, (importance, tags, source)) in [
        (0.9, vec!["a"], None),
        (0.5, vec!["b", "c"], Some("session")),
        (0.6, vec![], None),
        (0.2, vec!["c"], Some("api")),
    ]
    .into_iter()
    .enumerate()
    {
        let mut m = memory(
            &format!("mem_{i}"),
            NS,
            &format!("memory {i}"),
            (i as Millis + 1) * HOUR,
        );
        m.importance = importance;
        m.tags = tags.into_iter().map(String::from).collect();
        m.source = source.map(String::from);
        s.insert_memory(&m).unwrap();
    }
    let mut gone = memory("mem_gone", OTHER, "in the trash", 9 * HOUR);
    gone.valid_until = Some(9 * HOUR);
    s.insert_memory(&gone).unwrap();
    let q = |f: &dyn Fn(&mut ListQuery)| {
        let mut q = ListQuery {
            limit: 100,
            ..Default::default()
        };
        f(&mut q);
        ids(&s.list_memories(&q).unwrap()).join(",")
    };
    assert_eq!(q(&|q| q.min_importance = Some(0.6)), "mem_2,mem_0");
    assert_eq!(
        q(&|q| q.any_tags = vec!["a".into(), "c".into()]),
        "mem_3,mem_1,mem_0"
    );
    assert_eq!(
        q(&|q| {
            q.any_tags = vec!["c".into()];
            q.tags = vec!["b".into()];
        }),
        "mem_1"
    );
    assert_eq!(q(&|q| q.source = Some("session".into())), "mem_1");
    assert_eq!(
        s.active_namespaces().unwrap(),
        [NS],
        "a trashed memory holds none"
    );
}

fn touch<S: Storage>(s: &S) {
    s.insert_memory(&memory("mem_t", NS, "touch me", HOUR))
        .unwrap();
    s.touch_memories(&["mem_t".into()], 3 * HOUR).unwrap();
    s.touch_memories(&["mem_t".into()], 4 * HOUR).unwrap();
    let m = s.get_memories(&["mem_t".into()]).unwrap().remove(0);
    assert_eq!((m.access_count, m.last_accessed), (2, Some(4 * HOUR)));
    // Renewal stamps the attributes only: no access, no modification.
    s.renew_memories(&["mem_t".into(), "missing".into()], 6 * HOUR)
        .unwrap();
    let r = s.get_memories(&["mem_t".into()]).unwrap().remove(0);
    let attrs: serde_json::Value = serde_json::from_str(&r.attributes).unwrap();
    assert_eq!(attrs["renewed_at"].as_i64(), Some(6 * HOUR));
    assert_eq!(
        (r.access_count, r.last_accessed, r.modified_at),
        (m.access_count, m.last_accessed, m.modified_at)
    );
}

fn episode(id: &str, session: &str, content: &str, at: Millis) -> Episode {
    Episode {
        id: id.into(),
        namespace: NS.into(),
        session_id: session.into(),
        source_role: "user".into(),
        content: content.into(),
        event_time: at,
        created_at: at,
        valid_until: None,
        invalid_reason: None,
        attributes: "{}".into(),
    }
}

fn session(id: &str, ns: &str, consolidated_at: Option<Millis>) -> Session {
    Session {
        id: id.into(),
        namespace: ns.into(),
        first_seen_at: HOUR,
        last_seen_at: 2 * HOUR,
        turn_count: 2,
        consolidated_at,
        consolidated_turns: if consolidated_at.is_some() { 2 } else { 0 },
    }
}

fn dialogue<S: Storage>(s: &S) {
    let e = episode("ep_1", "s1", "hello there", HOUR);
    s.insert_episode(&e).unwrap();
    s.insert_episode(&episode("ep_2", "s1", "general kenobi", 2 * HOUR))
        .unwrap();
    s.insert_episode(&episode("ep_3", "s1", "you are a bold one", 3 * HOUR))
        .unwrap();
    assert_eq!(
        s.get_episodes(&["ep_1".into(), "nope".into()]).unwrap(),
        vec![e]
    );
    let turns = s.session_episodes(NS, "s1", 1, 10).unwrap();
    assert_eq!(
        turns.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        ["ep_2", "ep_3"],
        "dialogue order, from the offset"
    );
    assert_eq!(s.session_episodes(NS, "s1", 0, 1).unwrap().len(), 1);

    let open = session("s1", NS, None);
    s.put_session(&open).unwrap();
    s.put_session(&session("s2", NS, Some(3 * HOUR))).unwrap();
    s.put_session(&session("s3", OTHER, None)).unwrap();
    assert_eq!(s.get_session(NS, "s1").unwrap(), Some(open.clone()));
    assert_eq!(
        s.get_session(OTHER, "s1").unwrap(),
        None,
        "sessions are per namespace"
    );
    let pending = |ns: &str, exclude: Option<&str>| {
        let mut v: Vec<String> = s
            .pending_sessions(ns, exclude)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        v.sort();
        v
    };
    assert_eq!(pending(NS, None), ["s1"]);
    assert!(pending(NS, Some("s1")).is_empty());
    assert_eq!(
        pending("", None),
        ["s1", "s3"],
        "empty namespace: every namespace"
    );
    let mut later = open;
    later.turn_count = 5;
    s.put_session(&later).unwrap();
    assert_eq!(
        s.get_session(NS, "s1").unwrap().map(|s| s.turn_count),
        Some(5)
    );
}

fn full_text<S: Storage>(s: &S) {
    s.insert_memory(&memory("mem_1", NS, "the deploy script lives in ops", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_2", NS, "the deploy runs at five", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_3", NS, "lunch was pasta", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_4", OTHER, "deploy elsewhere", HOUR))
        .unwrap();
    let mut gone = memory("mem_5", NS, "deploy script from the trash", HOUR);
    gone.valid_until = Some(2 * HOUR);
    s.insert_memory(&gone).unwrap();
    let terms = |t: &[&str]| t.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let hits = s
        .fts_search(
            Target::Memories,
            &terms(&["deploy", "script"]),
            &filter(NS),
            10,
            0.5,
        )
        .unwrap();
    assert_eq!(
        scored(&hits),
        ["mem_1", "mem_2"],
        "both terms first; active, this namespace"
    );
    assert!(
        hits[0].score > hits[1].score && hits[1].score > 0.0,
        "higher is better"
    );
    let one = s
        .fts_search(Target::Memories, &terms(&["deploy"]), &filter(NS), 1, 0.5)
        .unwrap();
    assert_eq!(one.len(), 1, "limit");
    assert!(
        s.fts_search(Target::Memories, &terms(&["nothing"]), &filter(NS), 10, 0.5)
            .unwrap()
            .is_empty()
    );
    // Terms are words, whatever they hold: query syntax, quotes, a NUL
    // (FTS5 once read it as the end of the query: found by `fuzz/`).
    let odd = terms(&[
        "deploy\0\" OR x*",
        "NEAR(a b)",
        "col:*",
        "\"",
        "\0",
        "",
        "script",
    ]);
    let hits = s
        .fts_search(Target::Memories, &odd, &filter(NS), 10, 0.5)
        .unwrap();
    assert_eq!(scored(&hits), ["mem_1"], "{odd:?}");
    s.insert_episode(&episode("ep_1", "s1", "we talked about the harbour", HOUR))
        .unwrap();
    let eps = s
        .fts_search(Target::Episodes, &terms(&["harbour"]), &filter(NS), 10, 0.5)
        .unwrap();
    assert_eq!(scored(&eps), ["ep_1"]);
}

fn vectors<S: Storage>(s: &S) {
    assert!(
        s.vectors_enabled().unwrap(),
        "the suite needs vectors enabled"
    );
    for (i, ns) in [(0, NS), (1, NS), (2, NS), (3, OTHER)] {
        let id = format!("mem_{i}");
        s.insert_memory(&memory(&id, ns, &format!("vector {i}"), HOUR))
            .unwrap();
        s.put_vector(Target::Memories, &id, &unit(i)).unwrap();
    }
    let got = s
        .get_vectors(Target::Memories, &["mem_1".into(), "missing".into()])
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "mem_1");
    assert!(
        got[0]
            .1
            .iter()
            .zip(unit(1))
            .all(|(a, b)| (a - b).abs() < 1e-6)
    );
    let mut query = unit(1);
    query[0] = 0.5;
    let n = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let query: Vec<f32> = query.iter().map(|x| x / n).collect();
    let hits = s
        .vector_search(Target::Memories, &query, &filter(NS), 2)
        .unwrap();
    assert_eq!(
        scored(&hits),
        ["mem_1", "mem_0"],
        "nearest first, this namespace"
    );
    assert!(
        (hits[0].score - 1.0 / n).abs() < 1e-4,
        "score is the cosine: {}",
        hits[0].score
    );
    // A vector replaced is the new one.
    s.put_vector(Target::Memories, "mem_2", &unit(1)).unwrap();
    let hits = s
        .vector_search(Target::Memories, &unit(1), &filter(NS), 3)
        .unwrap();
    assert_eq!(hits.len(), 3);
    assert!(hits[..2].iter().all(|h| h.score > 0.99));
    // A deleted vector is gone from reads and from the search.
    s.delete_vector(Target::Memories, "mem_2").unwrap();
    s.delete_vector(Target::Memories, "no-such-row").unwrap();
    assert!(
        s.get_vectors(Target::Memories, &["mem_2".into()])
            .unwrap()
            .is_empty()
    );
    let hits = s
        .vector_search(Target::Memories, &unit(1), &filter(NS), 3)
        .unwrap();
    assert!(!scored(&hits).contains(&"mem_2"), "{:?}", scored(&hits));
    // Both searches at once answer as each alone.
    let words = vec!["vector".to_string(), "1".to_string()];
    let (near, best) = s
        .near_search(Target::Memories, Some(&query), &words, &filter(NS), 2, 0.0)
        .unwrap();
    let alone = s
        .vector_search(Target::Memories, &query, &filter(NS), 2)
        .unwrap();
    let text = s
        .fts_search(Target::Memories, &words, &filter(NS), 2, 0.0)
        .unwrap();
    assert_eq!(near, alone);
    assert_eq!(best, text);
    assert_eq!(scored(&best)[0], "mem_1", "{best:?}");
    let (none, best) = s
        .near_search(Target::Memories, None, &words, &filter(NS), 2, 0.0)
        .unwrap();
    assert!(none.is_empty(), "no vector, no vector search");
    assert_eq!(best, text);
}
