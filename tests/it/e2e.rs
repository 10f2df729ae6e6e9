//! End to end through the real core component in wasmtime over a real SQLite
//! file: remember → recall, dedup, soft delete → restore, namespaces,
//! validation, episodes, the embedding lock, filters and paging — and proof
//! that the ranking is the component's. (Export/import, fading, CJK, the
//! HNSW graph and scheduled runs: `e2e_store.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_host::Mnemo;
use mnemo_host::config::EmbedderChoice;
use mnemo_host::native::NativeMnemo;
use mnemo_host::runtime::CallError;
use mnemo_host::storage::VectorState;

#[test]
fn remember_then_recall_through_the_component() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    assert_eq!(m.version().unwrap(), env!("CARGO_PKG_VERSION"));
    let dark = remember(&mut m, "", "The user prefers dark mode in every editor");
    remember(
        &mut m,
        "",
        "Deploys happen on Fridays after the code review",
    );
    remember(&mut m, "", "The cat is called Miso");
    assert!(dark.created);
    assert_eq!(dark.memory.layer, Layer::Buffer);

    // Every engine operation is one call into the component: none is done in the host.
    let before = m.calls;
    let r = recall(&mut m, "", "which editor mode does the user prefer?");
    assert_eq!(m.calls, before + 1);
    assert_eq!(r.hits[0].item.id(), dark.memory.id);
    assert!(r.channels_run.contains(&Channel::Fts));
    assert!(r.channels_run.contains(&Channel::Vector));
    let ex = &r.hits[0].explanation;
    // Scoring computed in the core: Buffer bonus 0.9, both text channels blended.
    assert!((ex.layer_bonus - 0.9).abs() < 1e-6);
    assert!(
        ex.notes.iter().any(|n| n.starts_with("blend")),
        "{:?}",
        ex.notes
    );
    let expected =
        ((0.2 * ex.importance + 0.2 * ex.recency + 0.6 * ex.relevance) * ex.layer_bonus).min(1.0);
    assert!((r.hits[0].score - expected).abs() < 1e-5);
    // Seed 004's own cosine-led relevance, on request.
    let seed = m
        .recall(RecallRequest {
            query: "which editor mode does the user prefer?".into(),
            relevance: Relevance::Semantic,
            dry: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(seed.hits[0].item.id(), dark.memory.id);
    assert!(
        seed.hits[0]
            .explanation
            .notes
            .iter()
            .any(|n| n.starts_with("dual-hit boost")),
        "{:?}",
        seed.hits[0].explanation.notes
    );
    // Stored for real: the row is in the SQLite file.
    assert_eq!(count(&m, "SELECT COUNT(*) FROM memories"), 3);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM vec_memories"), 3);
}

#[test]
fn component_and_native_core_rank_identically() {
    let dir = tempfile::tempdir().unwrap();
    // One "now" for both cores: recency is part of a score, and the two
    // recalls run milliseconds apart, which on a slow store (Postgres in
    // CI) was enough to move a score's last digit.
    let now = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(1_790_000_000_000));
    let at_now = || {
        let mut c = config(dir.path());
        c.clock = mnemo_host::clock::HostClock::driven(now.clone());
        c
    };
    let mut m = Mnemo::open(&at_now()).unwrap();
    for text in [
        "Caroline went to the LGBTQ support group on Tuesday",
        "Melanie painted a sunrise over the lake",
        "Caroline is researching adoption agencies",
        "The team ships the release every second Friday",
        "Melanie's kids love the beach and camping",
        "Support groups helped Caroline a lot",
    ] {
        remember(&mut m, "", text);
    }
    let queries = [
        "Caroline support group",
        "what did Melanie paint",
        "release schedule",
        "camping with kids",
    ];
    let wasm: Vec<Vec<(String, f32)>> = queries
        .iter()
        .map(|q| {
            m.recall(RecallRequest {
                query: q.to_string(),
                dry: true,
                ..Default::default()
            })
            .unwrap()
            .hits
            .iter()
            .map(|h| (h.item.id().to_string(), h.score))
            .collect()
        })
        .collect();
    drop(m);
    let native = NativeMnemo::open(&at_now()).unwrap();
    for (q, expected) in queries.iter().zip(&wasm) {
        let got: Vec<(String, f32)> = native
            .engine
            .recall(RecallRequest {
                query: q.to_string(),
                dry: true,
                ..Default::default()
            })
            .unwrap()
            .hits
            .iter()
            .map(|h| (h.item.id().to_string(), h.score))
            .collect();
        assert!(!got.is_empty());
        assert_eq!(&got, expected, "query {q}");
    }
}

#[test]
fn duplicates_reinforce_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let mut m = open(dir.path());
        let a = remember(&mut m, "", "Alice lives in Lisbon, Portugal");
        let b = remember(&mut m, "", "Alice lives in Lisbon, Portugal");
        let c = remember(&mut m, "", "alice lives in lisbon portugal!");
        assert!(!b.created && !c.created);
        assert_eq!(b.dedup_reason.as_deref(), Some("exact"));
        assert_eq!(c.memory.id, a.memory.id);
        a.memory.id
    };
    let mut m = open(dir.path());
    let stored = m.get("", &id).unwrap();
    assert_eq!(stored.repetition_count, 2);
    assert!(
        stored
            .attributes
            .contains("alice lives in lisbon portugal!"),
        "restatement kept as provenance"
    );
    assert_eq!(m.stats(None).unwrap().active, 1);
    assert_eq!(
        count(
            &m,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'reinforce'"
        ),
        2
    );
}

#[test]
fn near_but_distinct_facts_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let pairs = [
        ("Alice likes red", "Alice likes blue"),
        (
            "My favourite colour for the new kitchen walls is red",
            "My favourite colour for the new kitchen walls is blue",
        ),
        (
            "The meeting moved to Monday at 10am",
            "The meeting moved to Tuesday at 10am",
        ),
    ];
    for (a, b) in pairs {
        assert!(remember(&mut m, "", a).created);
        assert!(remember(&mut m, "", b).created, "{b} was folded into {a}");
    }
    assert_eq!(m.stats(None).unwrap().active, 6);
}

#[test]
fn soft_delete_keeps_the_row_and_restore_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let mem = remember(&mut m, "", "The staging password rotates monthly").memory;
    let deleted = m.delete("", &mem.id, "rotated away").unwrap();
    assert!(deleted.valid_until.is_some());
    assert!(recall(&mut m, "", "staging password").hits.is_empty());
    assert_eq!(
        count(
            &m,
            "SELECT COUNT(*) FROM memories WHERE invalid_reason = 'rotated away'"
        ),
        1
    );
    let trash = m
        .list(ListRequest {
            deleted: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(trash.len(), 1);
    assert!(matches!(
        m.delete("", &mem.id, ""),
        Err(CallError::Core(CoreError::Conflict(_)))
    ));
    m.restore("", &mem.id).unwrap();
    assert_eq!(recall(&mut m, "", "staging password").hits.len(), 1);
    assert_eq!(
        count(
            &m,
            "SELECT COUNT(*) FROM audit_log WHERE action IN ('delete', 'restore')"
        ),
        2
    );
}

#[test]
fn nothing_of_one_namespace_reaches_another() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let mut alpha_ids = Vec::new();
    for i in 0..30 {
        alpha_ids.push(
            remember(
                &mut m,
                "alpha",
                &format!("alpha secret launch code number {i}"),
            )
            .memory
            .id,
        );
    }
    remember(&mut m, "beta", "beta launch plan");
    remember(&mut m, "default", "shared launch checklist");
    for q in ["launch", "alpha secret launch code", "number 7", "secret"] {
        for h in recall(&mut m, "beta", q).hits {
            assert!(
                !alpha_ids.contains(&h.item.id().to_string()),
                "beta saw {}",
                h.item.content()
            );
            assert!(!h.item.content().contains("alpha"));
        }
    }
    // A project namespace also reads `default`.
    let beta = recall(&mut m, "beta", "launch");
    assert_eq!(beta.hits.len(), 2);
    for id in &alpha_ids[..3] {
        assert!(matches!(
            m.get("beta", id),
            Err(CallError::Core(CoreError::NotFound(_)))
        ));
        assert!(matches!(
            m.delete("beta", id, ""),
            Err(CallError::Core(CoreError::NotFound(_)))
        ));
    }
    assert!(
        m.list(ListRequest {
            namespace: "beta".into(),
            ..Default::default()
        })
        .unwrap()
        .iter()
        .all(|x| x.namespace == "beta")
    );
    assert_eq!(m.stats(Some("alpha")).unwrap().active, 30);
    assert_eq!(m.stats(Some("beta")).unwrap().active, 1);
}

#[test]
fn invalid_input_is_a_typed_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    remember(&mut m, "", "one good memory");
    let before = count(&m, "SELECT COUNT(*) FROM memories");
    let bad = [
        RememberRequest {
            content: "   ".into(),
            ..Default::default()
        },
        RememberRequest {
            content: "x".repeat(8193),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            tags: (0..21).map(|i| format!("t{i}")).collect(),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            tags: vec!["x".repeat(33)],
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            source: Some("s".repeat(65)),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            namespace: "no spaces".into(),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            importance: Some(-0.1),
            ..Default::default()
        },
    ];
    for req in bad {
        match m.remember(req) {
            Err(CallError::Core(CoreError::InvalidInput(msg))) => assert!(!msg.is_empty()),
            other => panic!("expected invalid input, got {other:?}"),
        }
    }
    let turn = Turn {
        session_id: "".into(),
        role: "user".into(),
        content: "hi".into(),
        ..Default::default()
    };
    assert!(matches!(
        m.ingest(turn),
        Err(CallError::Core(CoreError::InvalidInput(_)))
    ));
    assert!(matches!(
        m.recall(RecallRequest {
            query: "".into(),
            ..Default::default()
        }),
        Err(CallError::Core(CoreError::InvalidInput(_)))
    ));
    assert_eq!(count(&m, "SELECT COUNT(*) FROM memories"), before);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM episodes"), 0);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM sessions"), 0);
}

#[test]
fn fts_syntax_in_queries_is_just_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    remember(&mut m, "", "notes about NEAR and OR operators");
    for q in [
        "\"unbalanced",
        "NEAR(a b)",
        "col:* AND",
        "a OR b NOT c",
        "^start -minus",
        "*",
        "'); DROP TABLE memories; --",
    ] {
        m.recall(RecallRequest {
            query: q.into(),
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    assert_eq!(recall(&mut m, "", "NEAR OR").hits.len(), 1);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM memories"), 1);
}

#[test]
fn episodes_register_sessions_and_are_embedded_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let t = |s: &str, text: &str| Turn {
        session_id: s.into(),
        role: "user".into(),
        content: text.into(),
        ..Default::default()
    };
    let first = m.ingest(t("s1", "I adopted a dog named Biscuit")).unwrap();
    assert!(first.new_session);
    m.ingest(t("s1", "Biscuit loves the park")).unwrap();
    let next = m.ingest(t("s2", "Started pottery classes")).unwrap();
    assert_eq!(next.pending_sessions, ["s1"]);
    assert_eq!(
        count(&m, "SELECT turn_count FROM sessions WHERE id = 's1'"),
        2
    );
    // Hot path: no vectors yet.
    assert_eq!(count(&m, "SELECT COUNT(*) FROM vec_episodes"), 0);
    assert_eq!(m.backfill_all(2, |_| {}).unwrap(), 3);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM vec_episodes"), 3);
    let r = m
        .recall(RecallRequest {
            query: "dog Biscuit".into(),
            episodes_only: true,
            ..Default::default()
        })
        .unwrap();
    assert!(r.channels_run.contains(&Channel::Vector));
    assert!(r.hits[0].item.content().contains("Biscuit"));
    assert!(matches!(r.hits[0].item, Item::Episode(_)));
    // Memories-only recall does not return episodes.
    assert!(recall(&mut m, "", "Biscuit").hits.is_empty());
}

#[test]
fn a_reply_is_found_by_the_question_it_answers_and_a_named_speaker_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let t = |s: &str, role: &str, text: &str| Turn {
        session_id: s.into(),
        role: role.into(),
        content: text.into(),
        ..Default::default()
    };
    m.ingest(t("s1", "Caroline", "Where did you go hiking last weekend?"))
        .unwrap();
    let reply = m
        .ingest(t("s1", "Melanie", "Up to the old quarry with the kids."))
        .unwrap();
    m.ingest(t("s2", "Caroline", "I love painting sunsets"))
        .unwrap();
    let mel = m
        .ingest(t("s3", "Melanie", "I love painting sunsets by the lake"))
        .unwrap();
    m.backfill_all(8, |_| {}).unwrap();
    let ask = |m: &mut Mnemo, q: &str| {
        m.recall(RecallRequest {
            query: q.into(),
            episodes_only: true,
            dry: true,
            ..Default::default()
        })
        .unwrap()
    };

    // The reply shares no word with the query; the question before it does.
    let r = ask(&mut m, "hiking weekend");
    let found = r
        .hits
        .iter()
        .find(|h| h.item.id() == reply.episode.id)
        .expect("the reply is found through its context");
    assert!(
        found
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Fts)
    );

    // Same words, two speakers: the one the query names ranks first, and says why.
    let r = ask(&mut m, "what does Melanie love painting?");
    assert_eq!(r.hits[0].item.id(), mel.episode.id);
    assert!(
        r.hits[0]
            .explanation
            .notes
            .iter()
            .any(|n| n.contains("names the speaker")),
        "{:?}",
        r.hits[0].explanation.notes
    );
    assert!(
        !r.hits[1]
            .explanation
            .notes
            .iter()
            .any(|n| n.contains("names the speaker"))
    );
}

#[test]
fn a_different_embedder_disables_vectors_until_reindexed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut m = open(dir.path());
        remember(&mut m, "", "vectors are locked to one model");
    }
    let mut cfg = config(dir.path());
    cfg.embedder = EmbedderChoice::Hash { dimension: 256 };
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    match m.vector_state() {
        VectorState::Disabled { reason } => {
            assert!(
                reason.contains("256")
                    && reason.contains("384")
                    && reason.contains("mnemo reindex --embeddings"),
                "{reason}"
            )
        }
        other => panic!("expected disabled, got {other:?}"),
    }
    let r = recall(&mut m, "", "locked model");
    assert_eq!(r.hits.len(), 1, "FTS still answers");
    assert!(!r.channels_run.contains(&Channel::Vector));
    assert!(r.warnings.iter().any(|w| w.contains("reindex")));
    m.ports().store.reset_vectors("hash-256", 256).unwrap();
    assert_eq!(m.backfill_all(64, |_| {}).unwrap(), 1);
    assert!(
        recall(&mut m, "", "locked model")
            .channels_run
            .contains(&Channel::Vector)
    );
}

#[test]
fn a_fresh_instance_keeps_the_host_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let id = remember(&mut m, "", "survives re-instantiation").memory.id;
    m.reinstantiate().unwrap();
    assert_eq!(m.get("", &id).unwrap().content, "survives re-instantiation");
}

#[test]
fn filters_paging_and_access_reinforcement() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    m.remember(RememberRequest {
        content: "rust build caching tips".into(),
        tags: vec!["dev".into()],
        kind: Some(Kind::Procedural),
        ..Default::default()
    })
    .unwrap();
    let trip = remember(&mut m, "", "rust coloured autumn trip").memory;
    let dry = |query: &str| RecallRequest {
        query: query.into(),
        dry: true,
        ..Default::default()
    };
    // Tags are a soft boost: the tagged memory leads, the other still comes.
    let r = m
        .recall(RecallRequest {
            tags: vec!["dev".into()],
            ..dry("rust")
        })
        .unwrap();
    assert_eq!(r.hits.len(), 2);
    assert!(r.hits[0].item.content().contains("caching"));
    assert!(
        r.hits[0]
            .explanation
            .notes
            .iter()
            .any(|n| n.starts_with("requested tags"))
    );
    let r = m
        .recall(RecallRequest {
            kinds: vec![Kind::Semantic],
            ..dry("rust")
        })
        .unwrap();
    assert_eq!(r.hits[0].item.id(), trip.id);
    assert!(
        m.recall(RecallRequest {
            layers: vec![Layer::Core],
            ..dry("rust")
        })
        .unwrap()
        .hits
        .is_empty()
    );
    let page = m
        .recall(RecallRequest {
            limit: 1,
            offset: 1,
            ..dry("rust")
        })
        .unwrap();
    assert_eq!(page.hits.len(), 1);
    // Dry recall never touches; a clearly relevant hit is touched.
    m.recall(RecallRequest {
        query: "rust coloured autumn trip".into(),
        dry: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(m.get("", &trip.id).unwrap().access_count, 0);
    let r = recall(&mut m, "", "rust coloured autumn trip");
    assert!(r.hits[0].explanation.relevance > 0.5);
    assert_eq!(m.get("", &trip.id).unwrap().access_count, 1);
}
