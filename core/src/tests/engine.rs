//! Behaviour of the engine against the in-memory fakes.

use crate::model::*;
use crate::testing::FakePorts;
use crate::{CoreError, Engine};

fn engine() -> Engine<FakePorts> {
    Engine::new(FakePorts::default())
}

fn remember(e: &Engine<FakePorts>, ns: &str, text: &str) -> RememberOutcome {
    e.remember(RememberRequest {
        namespace: ns.into(),
        content: text.into(),
        ..Default::default()
    })
    .expect("remember")
}

fn recall(e: &Engine<FakePorts>, ns: &str, q: &str) -> RecallResponse {
    e.recall(RecallRequest {
        namespace: ns.into(),
        query: q.into(),
        ..Default::default()
    })
    .expect("recall")
}

#[test]
fn remember_lands_in_buffer_and_is_recalled() {
    let e = engine();
    let out = remember(&e, "", "The user prefers dark mode in every editor");
    assert!(out.created);
    assert_eq!(out.memory.layer, Layer::Buffer);
    assert_eq!(out.memory.namespace, "default");
    remember(&e, "", "Deploys happen on Fridays after the review");
    let r = recall(&e, "", "which mode does the user prefer?");
    assert_eq!(r.hits[0].item.id(), out.memory.id);
    assert!(r.channels_run.contains(&Channel::Fts) && r.channels_run.contains(&Channel::Vector));
    let ex = &r.hits[0].explanation;
    assert!(
        ex.channels
            .iter()
            .any(|c| c.channel == Channel::Fts && c.rank == 1)
    );
    assert!(ex.rrf > 0.0 && ex.relevance > 0.0);
}

#[test]
fn exact_duplicate_reinforces_instead_of_inserting() {
    let e = engine();
    let first = remember(&e, "", "Alice lives in Lisbon");
    let again = remember(&e, "", "Alice lives in Lisbon");
    assert!(!again.created);
    assert_eq!(again.memory.id, first.memory.id);
    assert_eq!(again.memory.repetition_count, 1);
    assert_eq!(again.dedup_reason.as_deref(), Some("exact"));
    assert_eq!(e.stats(None).unwrap().active, 1);
    assert_eq!(
        e.ports().storage.audit.borrow().last().map(|a| a.action),
        Some(Action::Reinforce)
    );
}

#[test]
fn restatement_reinforces_and_keeps_the_new_wording() {
    let e = engine();
    let first = remember(&e, "", "Alice lives in Lisbon, Portugal");
    let again = remember(&e, "", "alice lives in Lisbon Portugal!");
    assert!(!again.created, "{:?}", again.dedup_reason);
    assert_eq!(again.memory.id, first.memory.id);
    assert!(
        again
            .memory
            .attributes
            .contains("alice lives in Lisbon Portugal!")
    );
}

#[test]
fn near_but_distinct_facts_stay_apart() {
    let e = engine();
    remember(&e, "", "Alice likes red");
    let blue = remember(&e, "", "Alice likes blue");
    assert!(blue.created);
    let a = remember(
        &e,
        "",
        "My favourite colour for the new kitchen walls is red",
    );
    let b = remember(
        &e,
        "",
        "My favourite colour for the new kitchen walls is blue",
    );
    assert!(a.created && b.created);
    assert_eq!(e.stats(None).unwrap().active, 4);
}

#[test]
fn skip_dedup_keeps_both() {
    let e = engine();
    remember(&e, "", "same text");
    let out = e
        .remember(RememberRequest {
            content: "same text".into(),
            skip_dedup: true,
            ..Default::default()
        })
        .unwrap();
    assert!(out.created);
}

#[test]
fn invalid_input_is_typed_and_writes_nothing() {
    let e = engine();
    let cases = [
        RememberRequest {
            content: "".into(),
            ..Default::default()
        },
        RememberRequest {
            content: "x".repeat(8193),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            tags: (0..21).map(|i| i.to_string()).collect(),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            tags: vec!["t".repeat(33)],
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            source: Some("s".repeat(65)),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            importance: Some(1.5),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            namespace: "bad ns".into(),
            ..Default::default()
        },
        RememberRequest {
            content: "ok".into(),
            attributes: Some("[]".into()),
            ..Default::default()
        },
    ];
    for req in cases {
        let err = e.remember(req).unwrap_err();
        assert!(matches!(err, CoreError::InvalidInput(_)), "{err:?}");
    }
    assert_eq!(e.stats(None).unwrap().active, 0);
    assert!(e.ports().storage.memories.borrow().is_empty());
}

#[test]
fn soft_delete_hides_and_restore_brings_back() {
    let e = engine();
    let m = remember(&e, "", "The staging password rotates monthly").memory;
    let deleted = e.delete("", &m.id, "obsolete").unwrap();
    assert_eq!(deleted.invalid_reason.as_deref(), Some("obsolete"));
    assert!(recall(&e, "", "staging password").hits.is_empty());
    let trash = e
        .list(ListRequest {
            deleted: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(trash.len(), 1);
    assert!(matches!(
        e.delete("", &m.id, ""),
        Err(CoreError::Conflict(_))
    ));
    e.restore("", &m.id).unwrap();
    assert_eq!(recall(&e, "", "staging password").hits.len(), 1);
    assert!(e.ports().storage.memories.borrow().contains_key(&m.id));
}

#[test]
fn namespaces_are_isolated_but_projects_read_default() {
    let e = engine();
    remember(&e, "alpha", "alpha secret launch code");
    remember(&e, "default", "shared launch checklist");
    let beta = recall(&e, "beta", "launch");
    assert!(
        beta.hits
            .iter()
            .all(|h| !h.item.content().contains("alpha"))
    );
    assert_eq!(beta.hits.len(), 1);
    let alpha = recall(&e, "alpha", "launch");
    assert_eq!(alpha.hits.len(), 2);
    let alpha_id = e
        .list(ListRequest {
            namespace: "alpha".into(),
            ..Default::default()
        })
        .unwrap()[0]
        .id
        .clone();
    assert!(matches!(
        e.get("beta", &alpha_id),
        Err(CoreError::NotFound(_))
    ));
    assert!(matches!(
        e.delete("beta", &alpha_id, ""),
        Err(CoreError::NotFound(_))
    ));
}

#[test]
fn filters_restrict_every_channel() {
    let e = engine();
    e.remember(RememberRequest {
        content: "rust build tips".into(),
        tags: vec!["dev".into()],
        kind: Some(Kind::Procedural),
        ..Default::default()
    })
    .unwrap();
    e.remember(RememberRequest {
        content: "rust trip to the coast".into(),
        ..Default::default()
    })
    .unwrap();
    // Tags rank, they do not filter.
    let r = e
        .recall(RecallRequest {
            query: "rust".into(),
            tags: vec!["dev".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 2);
    assert!(r.hits[0].item.content().contains("build"));
    assert!(
        r.hits[0]
            .explanation
            .notes
            .iter()
            .any(|n| n.starts_with("requested tags"))
    );
    let r = e
        .recall(RecallRequest {
            query: "rust".into(),
            kinds: vec![Kind::Semantic],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
    assert!(r.hits[0].item.content().contains("coast"));
    let r = e
        .recall(RecallRequest {
            query: "rust".into(),
            layers: vec![Layer::Core],
            ..Default::default()
        })
        .unwrap();
    assert!(r.hits.is_empty());
}

#[test]
fn dry_recall_does_not_touch_and_only_relevant_hits_are_touched() {
    let e = engine();
    let m = remember(&e, "", "kubernetes cluster upgrade notes").memory;
    e.recall(RecallRequest {
        query: "kubernetes cluster upgrade notes".into(),
        dry: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(e.get("", &m.id).unwrap().access_count, 0);
    let r = recall(&e, "", "kubernetes cluster upgrade notes");
    assert!(r.hits[0].explanation.relevance > 0.5);
    assert_eq!(e.get("", &m.id).unwrap().access_count, 1);
}

#[test]
fn recall_without_vectors_still_answers_and_says_why() {
    let e = engine();
    remember(&e, "", "the backup job runs nightly");
    e.ports().storage.vectors_disabled.set(true);
    let r = recall(&e, "", "backup job");
    assert_eq!(r.hits.len(), 1);
    assert!(!r.channels_run.contains(&Channel::Vector));
    assert!(r.warnings.iter().any(|w| w.contains("reindex")));
}

#[test]
fn entity_channel_finds_linked_items() {
    let e = engine();
    remember(&e, "", "Met Caroline at the support group");
    let r = recall(&e, "", "what about caroline?");
    assert!(
        r.hits[0]
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Entity)
    );
}

#[test]
fn ingest_registers_sessions_and_reports_pending_ones() {
    let e = engine();
    let t = |s: &str, text: &str| Turn {
        session_id: s.into(),
        role: "user".into(),
        content: text.into(),
        ..Default::default()
    };
    let a = e.ingest(t("s1", "hello there")).unwrap();
    assert!(a.new_session && a.pending_sessions.is_empty());
    let b = e.ingest(t("s1", "more")).unwrap();
    assert!(!b.new_session);
    let c = e.ingest(t("s2", "new day")).unwrap();
    assert_eq!(c.pending_sessions, ["s1"]);
    assert_eq!(e.ports().storage.sessions.borrow().len(), 2);
    // Nothing consolidated s1: a third session closes s2, the one it
    // follows, and leaves s1 to the cycle (not a sweep of every pending
    // session at each new one).
    e.ports().clock.advance_hours(1);
    let d = e.ingest(t("s3", "another day")).unwrap();
    assert_eq!(d.pending_sessions, ["s2"]);
    assert!(
        e.ports().storage.vectors.borrow().is_empty(),
        "ingest must not embed"
    );
    assert!(matches!(
        e.ingest(t("", "x")),
        Err(CoreError::InvalidInput(_))
    ));
    let r = e
        .recall(RecallRequest {
            query: "new day".into(),
            episodes_only: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits[0].item.id(), c.episode.id);
}

#[test]
fn paging_sorting_and_token_budget() {
    let e = engine();
    for i in 0..5 {
        e.ports().clock.advance_hours(1);
        remember(&e, "", &format!("note {i} about gardening tomatoes"));
    }
    let page = e
        .recall(RecallRequest {
            query: "gardening".into(),
            limit: 2,
            offset: 1,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.hits.len(), 2);
    let recent = e
        .recall(RecallRequest {
            query: "gardening".into(),
            sort: SortOrder::Recent,
            ..Default::default()
        })
        .unwrap();
    assert!(recent.hits[0].item.content().contains("note 4"));
    let budget = e
        .recall(RecallRequest {
            query: "gardening".into(),
            token_budget: Some(18),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(budget.hits.len(), 2);
    assert!(matches!(
        e.recall(RecallRequest {
            query: " ".into(),
            ..Default::default()
        }),
        Err(CoreError::InvalidInput(_))
    ));
    assert!(matches!(
        e.recall(RecallRequest {
            query: "x".into(),
            limit: 1000,
            ..Default::default()
        }),
        Err(CoreError::InvalidInput(_))
    ));
}

#[test]
fn update_changes_content_and_reembeds() {
    let e = engine();
    let m = remember(&e, "", "meeting on monday").memory;
    let u = e
        .update(
            "",
            &m.id,
            MemoryPatch {
                content: Some("meeting on tuesday".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(u.content, "meeting on tuesday");
    assert_eq!(recall(&e, "", "tuesday").hits.len(), 1);
    assert!(matches!(
        e.update(
            "",
            &m.id,
            MemoryPatch {
                importance: Some(2.0),
                ..Default::default()
            }
        ),
        Err(CoreError::InvalidInput(_))
    ));
}

#[test]
fn confirm_protects_and_correct_supersedes() {
    let e = engine();
    let m = remember(&e, "", "The office is on the third floor").memory;
    let c = e.confirm("", &m.id).unwrap();
    assert_eq!((c.decay_rate, c.confidence), (0.0, 1.0));
    let new = e
        .correct("", &m.id, "The office is on the fifth floor")
        .unwrap();
    assert_eq!(new.supersedes.as_deref(), Some(m.id.as_str()));
    let old = e.ports().storage.memories.borrow()[&m.id].clone();
    assert_eq!(old.superseded_by.as_deref(), Some(new.id.as_str()));
    assert_eq!(old.invalid_reason.as_deref(), Some("corrected"));
    let hits = recall(&e, "", "office floor").hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id(), new.id);
    assert!(matches!(
        e.correct("", &m.id, "again"),
        Err(CoreError::Conflict(_))
    ));
    assert!(matches!(
        e.correct("", &new.id, ""),
        Err(CoreError::InvalidInput(_))
    ));
}

#[test]
fn an_imported_duplicate_keeps_its_tags_layer_kind_attributes_and_protection() {
    let e = engine();
    let stored = remember(&e, "", "the user is allergic to peanuts").memory;
    let line = Memory {
        id: "mem_from_elsewhere".into(),
        layer: Layer::Core,
        kind: Kind::Procedural,
        tags: vec!["health".into(), "food".into()],
        attributes: r#"{"origin":"phone","k":2}"#.into(),
        decay_rate: 0.0,
        confidence: 1.0,
        ..Memory::new(
            "mem_from_elsewhere".into(),
            "default".into(),
            "the user is allergic to peanuts".into(),
            0,
            0,
        )
    };
    let outcome = e
        .import(ImportItem::Memory(MemoryLine {
            memory: line,
            vector: None,
        }))
        .unwrap();
    assert_eq!(outcome, ImportOutcome::Merged);
    let m = e.get("", &stored.id).unwrap();
    assert_eq!(m.tags, ["health", "food"]);
    assert_eq!((m.layer, m.kind), (Layer::Core, Kind::Procedural));
    assert!(
        m.attributes.contains("\"origin\":\"phone\""),
        "{}",
        m.attributes
    );
    assert!(m.is_protected(), "a confirmed line stays confirmed");
    assert!(m.source_ids.contains(&"mem_from_elsewhere".to_string()));
}

#[test]
fn an_import_line_with_attributes_that_are_not_an_object_is_refused() {
    // Found by `fuzz/` (core_exports): stored, such text broke every later
    // SQL JSON function over the row (enrichment, renewal).
    let e = engine();
    for bad in ["not json", "[1, 2]", "{\"open\": "] {
        let memory = Memory {
            attributes: bad.into(),
            ..Memory::new("mem_x".into(), "default".into(), "a note".into(), 0, 0)
        };
        let line = ImportItem::Memory(MemoryLine {
            memory,
            vector: None,
        });
        assert!(
            matches!(e.import(line), Err(CoreError::InvalidInput(_))),
            "{bad}"
        );
        let episode = Episode {
            id: "ep_x".into(),
            namespace: "default".into(),
            session_id: "s".into(),
            source_role: "user".into(),
            content: "a turn".into(),
            event_time: 0,
            created_at: 0,
            valid_until: None,
            invalid_reason: None,
            attributes: bad.into(),
        };
        let line = ImportItem::Episode(EpisodeLine {
            episode,
            vector: None,
        });
        assert!(
            matches!(e.import(line), Err(CoreError::InvalidInput(_))),
            "{bad}"
        );
    }
    assert!(e.get("default", "mem_x").is_err(), "nothing stored");
    // Numbers a write would compute (a NaN is stored as NULL, and the row
    // or version could not be read again: also found by `fuzz/`).
    let nan = Memory {
        importance: f32::NAN,
        ..Memory::new("mem_n".into(), "default".into(), "a note".into(), 0, 0)
    };
    let version = MemoryVersion {
        memory_id: "mem_n".into(),
        namespace: "default".into(),
        seq: 1,
        replaced_at: 0,
        action: Action::Reinforce,
        reason: String::new(),
        memory: Memory {
            decay_rate: f32::INFINITY,
            ..nan.clone()
        },
    };
    for line in [
        ImportItem::Memory(MemoryLine {
            memory: nan,
            vector: None,
        }),
        ImportItem::Version(VersionLine { version }),
    ] {
        assert!(matches!(e.import(line), Err(CoreError::InvalidInput(_))));
    }
}

#[test]
fn an_edit_the_embedder_cannot_embed_forgets_the_stale_vector() {
    use crate::ports::Storage;
    let e = engine();
    let m = remember(&e, "", "meeting on monday").memory;
    let has_vector = |e: &Engine<FakePorts>| {
        !e.ports()
            .storage
            .get_vectors(Target::Memories, std::slice::from_ref(&m.id))
            .unwrap()
            .is_empty()
    };
    assert!(has_vector(&e));
    e.ports().embedder.failing.set(true);
    e.update(
        "",
        &m.id,
        MemoryPatch {
            content: Some("the budget review moved to friday".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        !has_vector(&e),
        "the vector of the old text is gone, so the backfill embeds the new one"
    );
    e.ports().embedder.failing.set(false);
    e.update(
        "",
        &m.id,
        MemoryPatch {
            content: Some("the budget review moved to thursday".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(has_vector(&e));
    assert_eq!(recall(&e, "", "budget thursday").hits[0].item.id(), m.id);
}
