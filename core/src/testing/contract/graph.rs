//! The contract of the graph side of storage: entities, aliases and links,
//! enrichment candidates, facts and their history, tag counts, stats and
//! metadata.

use super::*;

fn entity(id: &str, name: &str, t: EntityType, aliases: &[&str]) -> Entity {
    Entity {
        id: id.into(),
        namespace: NS.into(),
        canonical_name: name.into(),
        entity_type: t,
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        mention_count: 1,
        summary: None,
    }
}

pub(super) fn entities<S: Storage>(s: &S) {
    let alice = entity("ent_1", "Alice Smith", EntityType::Person, &["Ally"]);
    s.put_entity(&alice).unwrap();
    s.put_entity(&entity("ent_2", "Acme", EntityType::Organization, &[]))
        .unwrap();
    let found = s
        .find_entity(NS, "alice smith", EntityType::Person)
        .unwrap();
    assert_eq!(found, Some(alice.clone()), "case-insensitive name and type");
    assert_eq!(
        s.find_entity(NS, "ally", EntityType::Person)
            .unwrap()
            .map(|e| e.id),
        Some("ent_1".into()),
        "by alias"
    );
    assert!(
        s.find_entity(OTHER, "Alice Smith", EntityType::Person)
            .unwrap()
            .is_none()
    );
    let any = s.find_entities(&[NS.into()], "ALLY").unwrap();
    assert_eq!(
        any.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        ["ent_1"]
    );
    let mut more = alice;
    more.mention_count = 4;
    more.aliases.push("A. Smith".into());
    s.put_entity(&more).unwrap();
    assert_eq!(
        s.find_entity(NS, "a. smith", EntityType::Person)
            .unwrap()
            .map(|e| e.mention_count),
        Some(4),
        "put updates, and a new alias finds it"
    );

    s.insert_memory(&memory("mem_1", NS, "Alice likes tea", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_2", NS, "Alice moved to Oslo", 2 * HOUR))
        .unwrap();
    let mut gone = memory("mem_3", NS, "Alice old news", 3 * HOUR);
    gone.valid_until = Some(3 * HOUR);
    s.insert_memory(&gone).unwrap();
    for id in ["mem_1", "mem_2", "mem_3"] {
        s.link_entity(Target::Memories, id, "ent_1").unwrap();
    }
    s.link_entity(Target::Memories, "mem_1", "ent_1").unwrap();
    assert_eq!(
        s.linked_items(Target::Memories, "ent_1", 10).unwrap(),
        ["mem_2", "mem_1"],
        "active items, newest first, each once"
    );
    let hits = s
        .entity_search(Target::Memories, &["ally".into()], &filter(NS), 10)
        .unwrap();
    let mut found = scored(&hits);
    found.sort();
    assert_eq!(found, ["mem_1", "mem_2"]);
}

pub(super) fn enrichment<S: Storage>(s: &S) {
    s.insert_memory(&memory("mem_1", NS, "plain", HOUR))
        .unwrap();
    s.insert_memory(&memory("mem_2", NS, "linked a lot", HOUR))
        .unwrap();
    for (i, name) in ["A", "B", "C"].iter().enumerate() {
        let id = format!("ent_{i}");
        s.put_entity(&entity(&id, name, EntityType::Other, &[]))
            .unwrap();
        s.link_entity(Target::Memories, "mem_2", &id).unwrap();
    }
    let c = s.enrichment_candidates(Target::Memories, 2, 10).unwrap();
    assert_eq!(
        c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["mem_1"]
    );
    assert_eq!(
        (c[0].namespace.as_str(), c[0].content.as_str()),
        (NS, "plain")
    );
    s.mark_enriched(Target::Memories, "mem_1", 5 * HOUR)
        .unwrap();
    assert!(
        s.enrichment_candidates(Target::Memories, 2, 10)
            .unwrap()
            .is_empty()
    );
}

fn fact(id: &str, subject: &str, object: &str, from: Millis) -> Fact {
    Fact {
        id: id.into(),
        namespace: NS.into(),
        subject: subject.into(),
        predicate: "lives in".into(),
        object: object.into(),
        confidence: 0.9,
        valid_from: from,
        valid_until: None,
        superseded_by: None,
        memory_id: Some("mem_1".into()),
    }
}

pub(super) fn facts<S: Storage>(s: &S) {
    let mut old = fact("fact_1", "Caroline", "Berlin", HOUR);
    s.put_fact(&old).unwrap();
    let new = fact("fact_2", "Caroline", "Paris", 2 * HOUR);
    s.put_fact(&new).unwrap();
    old.valid_until = Some(2 * HOUR);
    old.superseded_by = Some("fact_2".into());
    s.put_fact(&old).unwrap();
    s.put_fact(&fact("fact_3", "Mel", "Paris", 3 * HOUR))
        .unwrap();
    let q = |f: &dyn Fn(&mut FactQuery)| {
        let mut q = FactQuery {
            namespaces: vec![NS.into()],
            limit: 10,
            ..Default::default()
        };
        f(&mut q);
        s.query_facts(&q)
            .unwrap()
            .into_iter()
            .map(|f| f.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        q(&|q| q.subject = Some("caroline".into())),
        ["fact_2"],
        "valid only"
    );
    assert_eq!(
        q(&|q| {
            q.subject = Some("Caroline".into());
            q.include_invalid = true;
        }),
        ["fact_2", "fact_1"],
        "history, newest first"
    );
    assert_eq!(
        q(&|q| q.entity = Some("paris".into())),
        ["fact_3", "fact_2"],
        "subject or object"
    );
    assert_eq!(
        q(&|q| q.id = Some("fact_1".into())).len(),
        0,
        "superseded is history"
    );
    assert_eq!(q(&|q| q.limit = 1), ["fact_3"]);
    let got = s
        .query_facts(&FactQuery {
            id: Some("fact_1".into()),
            include_invalid: true,
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(got, vec![old], "field for field");
}

pub(super) fn tag_counts<S: Storage>(s: &S) {
    for (id, tags, access) in [
        ("mem_1", vec!["trigger:deploy", "x"], 3),
        ("mem_2", vec!["trigger:deploy"], 1),
        ("mem_3", vec!["trigger:lunch"], 7),
        // Near misses for a prefix read through an index of the tags'
        // heads up to each `:` (the Postgres store's).
        ("mem_4", vec!["triggered", "x:trigger:y", "trigger:a:b"], 2),
    ] {
        let mut m = memory(id, NS, id, HOUR);
        m.tags = tags.into_iter().map(String::from).collect();
        m.access_count = access;
        s.insert_memory(&m).unwrap();
    }
    assert_eq!(
        s.tag_counts(&[NS.into()], "trigger:").unwrap(),
        vec![
            ("trigger:lunch".to_string(), 7),
            ("trigger:deploy".to_string(), 4),
            ("trigger:a:b".to_string(), 2)
        ]
    );
    let read = |prefix: &str| -> Vec<String> {
        let mut tags: Vec<String> = s
            .tag_counts(&[NS.into()], prefix)
            .unwrap()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        tags.sort();
        tags
    };
    assert_eq!(read("trigger:a:"), ["trigger:a:b"]);
    assert_eq!(read("x:"), ["x:trigger:y"]);
    assert_eq!(
        read("trig"),
        [
            "trigger:a:b",
            "trigger:deploy",
            "trigger:lunch",
            "triggered"
        ]
    );
    assert_eq!(read("trigger:l"), ["trigger:lunch"]);
    assert!(
        s.tag_counts(&[OTHER.into()], "trigger:")
            .unwrap()
            .is_empty()
    );
}

pub(super) fn stats<S: Storage>(s: &S) {
    let mut m = memory("mem_1", NS, "one", HOUR);
    m.layer = Layer::Core;
    m.kind = Kind::Procedural;
    s.insert_memory(&m).unwrap();
    s.insert_memory(&memory("mem_2", NS, "two", 2 * HOUR))
        .unwrap();
    let mut gone = memory("mem_3", NS, "three", 3 * HOUR);
    gone.valid_until = Some(3 * HOUR);
    s.insert_memory(&gone).unwrap();
    s.insert_memory(&memory("mem_4", OTHER, "four", 4 * HOUR))
        .unwrap();
    s.insert_episode(&episode("ep_1", "s1", "hi", HOUR))
        .unwrap();
    s.put_session(&session("s1", NS, None)).unwrap();
    let st = s.stats(&[NS.into()]).unwrap();
    assert_eq!(
        (
            st.active,
            st.buffer,
            st.core,
            st.procedural,
            st.semantic,
            st.deleted
        ),
        (2, 1, 1, 1, 1, 1)
    );
    assert_eq!((st.episodes, st.sessions), (1, 1));
    assert_eq!(st.newest, Some(2 * HOUR), "newest active memory");
    s.put_entity(&entity("ent_1", "Alice", EntityType::Person, &[]))
        .unwrap();
    s.put_fact(&fact("fact_1", "Alice", "Oslo", HOUR)).unwrap();
    let mut old = fact("fact_0", "Alice", "Rome", 0);
    old.valid_until = Some(HOUR);
    s.put_fact(&old).unwrap();
    s.put_vector(Target::Memories, "mem_1", &unit(0)).unwrap();
    s.put_vector(Target::Memories, "mem_4", &unit(1)).unwrap();
    let st = s.stats(&[NS.into()]).unwrap();
    assert_eq!(
        (st.entities, st.facts, st.memory_vectors),
        (1, 1, 1),
        "valid facts, this namespace"
    );
    assert_eq!(
        s.stats(&[]).unwrap().active,
        3,
        "no namespace: the whole store"
    );
}

pub(super) fn meta<S: Storage>(s: &S) {
    assert_eq!(s.get_meta("epoch").unwrap(), None);
    s.set_meta("epoch", "3").unwrap();
    s.set_meta("epoch", "4").unwrap();
    assert_eq!(s.get_meta("epoch").unwrap().as_deref(), Some("4"));
    s.log_decision(&Decision {
        at: HOUR,
        namespace: NS.into(),
        action: Action::Promote,
        target_id: "mem_1".into(),
        detail: "reinforced".into(),
    })
    .unwrap();
}

pub(super) fn versions<S: Storage>(s: &S) {
    let mut m = super::memory("mem_v", NS, "lives in Lisbon", HOUR);
    m.tags = vec!["home".into()];
    m.attributes = r#"{"k":[1,2]}"#.into();
    assert!(s.memory_versions("mem_v").unwrap().is_empty());
    let version = |seq: u32, m: &Memory| MemoryVersion {
        memory_id: m.id.clone(),
        namespace: NS.into(),
        seq,
        replaced_at: 2 * HOUR + Millis::from(seq),
        action: Action::Edit,
        reason: "edited".into(),
        memory: m.clone(),
    };
    s.put_version(&version(2, &m)).unwrap();
    let first = version(1, &m);
    s.put_version(&first).unwrap();
    // A version already kept is left alone.
    let mut again = version(1, &m);
    again.reason = "other".into();
    s.put_version(&again).unwrap();
    let got = s.memory_versions("mem_v").unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], first, "field for field, oldest first");
    assert_eq!(got[1].seq, 2);
    assert!(s.memory_versions("mem_other").unwrap().is_empty());
}
