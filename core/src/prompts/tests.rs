//! Parsers of LLM answers: what they accept and what they refuse.

use super::*;

fn memory(id: &str, content: &str) -> Memory {
    Memory::new(id.into(), "default".into(), content.into(), 0, 0)
}

#[test]
fn gate_answers_resolve_short_ids_and_drop_unknown_ones() {
    let ms = [
        memory(
            "mem_0123456789abcdef",
            "Always run the tests before pushing",
        ),
        memory("mem_fedcba9876543210", "Deploy is at 5pm today"),
    ];
    let args = r#"{"decisions": [
        {"id": "89abcdef", "decision": "approve", "kind": "procedural", "reason": "rule"},
        {"id": "76543210", "decision": "reject"},
        {"id": "nope", "decision": "approve"}]}"#;
    let v = gate::parse(args, &ms).unwrap();
    assert_eq!(v.len(), 2);
    assert!(v[0].promote && v[0].kind == Some(Kind::Procedural));
    assert_eq!(v[1].id, "mem_fedcba9876543210");
    assert!(!v[1].promote);
    assert!(matches!(gate::parse("{}", &ms), Err(CoreError::Llm(_))));
    assert!(matches!(
        gate::parse("not json", &ms),
        Err(CoreError::Llm(_))
    ));
}

#[test]
fn the_heuristic_gate_follows_the_whitelist() {
    assert_eq!(
        gate::heuristic(&memory("a", "Never force-push to main")),
        Some("constraint")
    );
    assert_eq!(
        gate::heuristic(&memory("a", "Use the staging DB for now, never prod")),
        None
    );
    assert_eq!(
        gate::heuristic(&memory("a", "The meeting moved to Tuesday")),
        None
    );
}

#[test]
fn extracted_facts_keep_triples_and_valid_turns() {
    let args = r#"{"facts": [
        {"content": "Caroline lives in Berlin", "subject": "Caroline", "predicate": "lives in",
         "object": "Berlin", "single_valued": true, "turns": [0, 7]},
        {"content": "  "},
        {"content": "Melanie paints", "kind": "semantic", "importance": 3}]}"#;
    let f = extract::parse(args, 2).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(
        f[0].triple,
        Some(("Caroline".into(), "lives in".into(), "Berlin".into()))
    );
    assert!(f[0].exclusive);
    assert_eq!(f[0].turns, vec![0]);
    assert_eq!(f[1].importance, Some(1.0));
}

#[test]
fn short_ids_count_characters_not_bytes() {
    assert_eq!(short_id("mem_0123456789abcdef"), "89abcdef");
    assert_eq!(short_id("mem_abc"), "abc");
    // An imported id may hold any text: no byte slicing inside a character.
    assert_eq!(short_id("mem_記憶記憶記憶記憶記憶"), "記憶記憶記憶記憶");
    assert_eq!(short_id("ü").chars().count(), 1);
}

#[test]
fn reconcile_answers_carry_the_merged_text_and_the_schema_names_it() {
    let newer = memory("mem_b", "The deploy target moved to production");
    let d = reconcile::parse(
        r#"{"decision": "update", "merged_content": "Deploys go to production (was staging)"}"#,
        &newer,
    )
    .unwrap();
    assert_eq!(
        d,
        PairDecision::Update("Deploys go to production (was staging)".into())
    );
    // Without merged text, the newer entry's own text stands.
    let d = reconcile::parse(r#"{"decision": "absorb"}"#, &newer).unwrap();
    assert_eq!(d, PairDecision::Merge(newer.content.clone()));
    let older = memory("mem_a", "The deploy target is staging");
    let req = reconcile::request(&older, &newer);
    let schema = &req.tool.as_ref().unwrap().parameters;
    assert!(schema.contains("\"merged_content\""), "{schema}");
}

#[test]
fn statements_of_fact_are_told_from_chatter() {
    for fact in [
        "My sister's name is Anna",
        "I work as a nurse at St Mary's",
        "The user moved to Porto in 2021",
        "Standup is at 10:00 every weekday",
    ] {
        assert!(triage::is_statement_of_fact(fact), "{fact}");
    }
    for chatter in [
        "ok thanks",
        "I have a question",
        "that sounds good to me",
        "Sure, why not",
    ] {
        assert!(!triage::is_statement_of_fact(chatter), "{chatter}");
    }
}
