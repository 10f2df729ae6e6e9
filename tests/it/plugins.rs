//! NER plugins through real components: the bundled regex provider, and
//! misbehaving fixtures (`tests/fixtures/plugins/`) — an infinite loop, a
//! memory bomb, a trap, oversized results, an unknown ABI, files that are not
//! components. Each limit is tested obeyed and violated; after every failure
//! the host keeps serving and the other plugins still answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use mnemo_core::model::*;
use mnemo_host::ner::{NerPipeline, NerProvider};
use mnemo_host::plugins::{BUNDLED, PluginError, PluginHost, PluginLimits, PluginProvider};

/// Every fixture plugin, so none can be forgotten: each has a test below.
const MISBEHAVE: &[u8] = include_bytes!(env!("MNEMO_FIXTURE_MISBEHAVE_WASM"));
const FUTURE_ABI: &[u8] = include_bytes!(env!("MNEMO_FIXTURE_FUTURE_ABI_WASM"));

fn host(limits: PluginLimits) -> PluginHost {
    PluginHost::new(limits, Some(common::cache_dir())).unwrap()
}

fn misbehave(limits: PluginLimits) -> PluginProvider {
    host(limits).load("misbehave fixture", MISBEHAVE).unwrap()
}

fn regex() -> PluginProvider {
    host(PluginLimits::default())
        .load("regex", BUNDLED[0].1)
        .unwrap()
}

fn err(r: anyhow::Result<Vec<Mention>>) -> String {
    format!("{:#}", r.expect_err("expected the call to fail"))
}

#[test]
fn the_bundled_regex_provider_answers() {
    let mut p = regex();
    assert_eq!(p.name(), "regex");
    assert!(p.entity_types.contains(&EntityType::Email));
    let found = p
        .extract("write to ops@example.org about #deploy on 2024-05-01")
        .unwrap();
    let kinds: Vec<EntityType> = found.iter().map(|m| m.entity_type).collect();
    assert_eq!(
        kinds,
        [EntityType::Email, EntityType::Hashtag, EntityType::Date]
    );
    assert!(found.iter().all(|m| m.provider == "regex"));
}

#[test]
fn an_infinite_loop_meets_the_deadline_and_the_plugin_recovers() {
    let mut p = misbehave(PluginLimits {
        deadline: Duration::from_millis(200),
        ..Default::default()
    });
    let start = Instant::now();
    let e = err(p.extract("loop"));
    assert!(e.contains("deadline of 200 ms exceeded"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(p.traps, 1);
    // Obeyed: real work within the deadline goes through, on a fresh instance.
    assert_eq!(p.extract("Alice met Bob").unwrap().len(), 2);
}

#[test]
fn slow_work_passes_a_generous_deadline() {
    let mut p = misbehave(PluginLimits {
        deadline: Duration::from_secs(20),
        ..Default::default()
    });
    assert_eq!(p.extract("slow").unwrap().len(), 1);
}

#[test]
fn a_memory_bomb_hits_the_memory_limit() {
    let mut p = misbehave(PluginLimits {
        memory_bytes: 16 << 20,
        ..Default::default()
    });
    let e = err(p.extract("bomb"));
    assert!(e.contains("memory limit of 16 MiB exceeded"), "{e}");
    assert_eq!(p.extract("Carol").unwrap()[0].text, "Carol");
}

#[test]
fn a_trap_costs_one_call() {
    let mut p = misbehave(PluginLimits::default());
    let e = err(p.extract("trap"));
    assert!(e.contains("trapped"), "{e}");
    assert_eq!(p.extract("Dave").unwrap().len(), 1);
    assert_eq!(p.traps, 1);
}

#[test]
fn fuel_is_obeyed_and_enforced() {
    let mut metered = misbehave(PluginLimits {
        fuel: Some(1_000_000),
        ..Default::default()
    });
    let e = err(metered.extract("slow"));
    assert!(e.contains("fuel budget of 1000000 exhausted"), "{e}");
    assert_eq!(
        metered.extract("Erin").unwrap().len(),
        1,
        "small calls fit the budget"
    );
}

#[test]
fn oversized_results_are_refused() {
    let mut p = misbehave(PluginLimits::default());
    let e = err(p.extract("flood"));
    assert!(
        e.contains("returned 100000 entities; the cap is 512"),
        "{e}"
    );
    let e = err(p.extract("huge"));
    assert!(e.contains("the cap is 512"), "{e}");
    // Obeyed: raise the caps and the same answers pass.
    let mut roomy = misbehave(PluginLimits {
        max_entities: 200_000,
        max_entity_bytes: 2 << 20,
        ..Default::default()
    });
    assert_eq!(roomy.extract("flood").unwrap().len(), 100_000);
    assert_eq!(roomy.extract("huge").unwrap()[0].text.len(), 1 << 20);
}

#[test]
fn inputs_over_the_cap_never_reach_the_plugin() {
    let mut p = misbehave(PluginLimits {
        max_input_bytes: 16,
        ..Default::default()
    });
    let e = err(p.extract("Frank and a text that is much longer than sixteen bytes"));
    assert!(e.contains("byte cap"), "{e}");
    assert_eq!(p.traps, 0);
    assert_eq!(p.extract("Grace").unwrap().len(), 1);
}

#[test]
fn plugin_errors_are_reported_not_trapped() {
    let mut p = misbehave(PluginLimits::default());
    let e = err(p.extract("fail"));
    assert!(e.contains("asked to fail"), "{e}");
    assert_eq!(p.traps, 0);
}

#[test]
fn unknown_abi_and_non_components_are_refused_before_compiling() {
    let h = host(PluginLimits::default());
    match h.load("future.wasm", FUTURE_ABI) {
        Err(PluginError::UnknownAbi {
            found, supported, ..
        }) => {
            assert_eq!(found, "ner 9.0.0");
            assert_eq!(supported, "ner 0.1.0");
        }
        other => panic!("expected UnknownAbi, got {:?}", other.err()),
    }
    assert!(matches!(
        h.load("notes.txt", b"hello, I am text"),
        Err(PluginError::NotWasm { .. })
    ));
    let core_module = b"\0asm\x01\0\0\0";
    assert!(matches!(
        h.load("module.wasm", core_module),
        Err(PluginError::NotAComponent { .. })
    ));
    assert!(matches!(
        h.load("broken.wasm", b"\0asm\x0d\0\x01\0garbage"),
        Err(PluginError::Malformed { .. } | PluginError::Load { .. })
    ));
}

#[test]
fn a_folder_loads_what_it_can() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-misbehave.wasm"), MISBEHAVE).unwrap();
    std::fs::write(dir.path().join("b-future.wasm"), FUTURE_ABI).unwrap();
    std::fs::write(dir.path().join("c-notes.wasm"), "not wasm").unwrap();
    std::fs::write(dir.path().join("ignored.txt"), "skipped: not .wasm").unwrap();
    let loaded = host(PluginLimits::default()).load_dir(dir.path(), None);
    assert_eq!(loaded.len(), 3);
    assert!(loaded[0].is_ok());
    assert!(matches!(loaded[1], Err(PluginError::UnknownAbi { .. })));
    assert!(matches!(loaded[2], Err(PluginError::NotWasm { .. })));
}

#[test]
fn strategies_merge_by_span_and_survive_a_failing_provider() {
    let providers: Vec<Box<dyn NerProvider>> = vec![
        Box::new(regex()),
        Box::new(misbehave(PluginLimits::default())),
    ];
    let (pipeline, warnings) = NerPipeline::new(
        providers,
        &["regex".into(), "misbehave".into()],
        &["regex".into(), "misbehave".into(), "names".into()],
    );
    assert_eq!(
        warnings,
        ["NER strategy `accurate` names `names`, which is not loaded"]
    );
    // Both answer; overlapping spans keep the more confident mention.
    let (found, failures) =
        pipeline.extract_reporting("Mail Alice@example.com today", NerStrategy::Fast);
    assert!(failures.is_empty());
    let texts: Vec<&str> = found.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["Mail", "Alice@example.com", "today"]);
    assert_eq!(found[1].provider, "regex");
    // One provider traps: it is named, the other still answers.
    let (found, failures) = pipeline.extract_reporting("trap", NerStrategy::Fast);
    assert_eq!(failures.len(), 1);
    assert!(failures[0].contains("misbehave"));
    assert!(found.is_empty());
    let (found, failures) =
        pipeline.extract_reporting("see https://mnemo.dev now", NerStrategy::Fast);
    assert!(failures.is_empty());
    assert_eq!(found[0].entity_type, EntityType::Url);
}

#[test]
fn entities_link_on_write_and_feed_the_entity_channel() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    std::fs::write(plugins.path().join("misbehave.wasm"), MISBEHAVE).unwrap();
    let mut cfg = common::config(dir.path());
    cfg.ner.plugin_dir = Some(plugins.path().to_path_buf());
    cfg.ner.fast = vec!["regex".into(), "misbehave".into()];
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    common::remember(
        &mut m,
        "",
        "Caroline joined the support group, ping @melanie_p",
    );
    common::remember(&mut m, "", "The weather was mild");
    // A plugin trapping on a write costs the links, never the write.
    assert!(common::remember(&mut m, "", "trap").created);
    let ents = common::count(&m, "SELECT COUNT(*) FROM entities");
    assert!(ents >= 2, "{ents}");
    let r = m
        .recall(RecallRequest {
            query: "what about caroline?".into(),
            dry: true,
            ..Default::default()
        })
        .unwrap();
    assert!(
        r.hits[0]
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Entity)
    );
    assert!(r.hits[0].item.content().starts_with("Caroline"));
    // The query's own mentions go through NER too: `@melanie_p` finds her.
    let r = m
        .recall(RecallRequest {
            query: "@melanie_p".into(),
            dry: true,
            ..Default::default()
        })
        .unwrap();
    assert!(
        r.hits[0]
            .explanation
            .channels
            .iter()
            .any(|c| c.channel == Channel::Entity)
    );
}

#[test]
fn the_bundled_names_provider_finds_people_places_and_organisations() {
    let mut p = host(PluginLimits::default())
        .load("names", BUNDLED[1].1)
        .unwrap();
    assert_eq!(p.name(), "names");
    let found: Vec<(String, EntityType)> = p
        .extract("Caroline met Dr. Sarah Chen at Stanford University in Paris.")
        .unwrap()
        .into_iter()
        .map(|m| (m.text, m.entity_type))
        .collect();
    assert_eq!(
        found,
        [
            ("Caroline".to_string(), EntityType::Person),
            ("Sarah Chen".to_string(), EntityType::Person),
            ("Stanford University".to_string(), EntityType::Organization),
            ("Paris".to_string(), EntityType::Location),
        ]
    );
}

#[test]
fn enrichment_links_what_fast_ner_missed_and_entity_info_tells_everything() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    let turn = |text: &str| Turn {
        session_id: "s1".into(),
        role: "user".into(),
        content: text.into(),
        ..Default::default()
    };
    // The fast strategy (regex) sees no names here.
    assert_eq!(
        m.ingest(turn("Caroline went to Paris with Melanie"))
            .unwrap()
            .entities,
        0
    );
    m.ingest(turn("Melanie painted the lake at sunrise"))
        .unwrap();
    common::remember(&mut m, "", "Caroline is researching adoption agencies");
    let report = m.enrich(50).unwrap();
    assert!(report.ran);
    assert_eq!(report.examined, 3);
    assert!(report.linked >= 4, "{report:?}");
    // Stamped: a second run finds nothing new to examine.
    assert_eq!(m.enrich(50).unwrap().examined, 0);

    let profiles = m.entity_info("", "caroline", 10).unwrap();
    assert_eq!(profiles.len(), 1);
    assert_eq!(profiles[0].entity.entity_type, EntityType::Person);
    assert_eq!(profiles[0].entity.mention_count, 2);
    assert_eq!(profiles[0].memories.len(), 1);
    assert_eq!(profiles[0].episodes.len(), 1);
    assert_eq!(
        m.entity_info("", "melanie", 10).unwrap()[0].episodes.len(),
        2
    );
    assert!(m.entity_info("", "nobody", 10).unwrap().is_empty());
    assert!(matches!(
        m.entity_info("", " ", 10),
        Err(mnemo_host::runtime::CallError::Core(
            mnemo_core::CoreError::InvalidInput(_)
        ))
    ));
    // Namespaces stay apart; a project also sees `default`'s entities.
    common::remember(&mut m, "alpha", "We met Zelda at the alpha launch");
    m.enrich(50).unwrap();
    assert_eq!(m.entity_info("alpha", "zelda", 10).unwrap().len(), 1);
    assert!(m.entity_info("beta", "zelda", 10).unwrap().is_empty());
    assert!(m.entity_info("default", "zelda", 10).unwrap().is_empty());
    assert_eq!(
        m.entity_info("beta", "caroline", 10).unwrap()[0]
            .entity
            .namespace,
        "default"
    );
}

#[test]
fn enrichment_is_skipped_without_an_accurate_provider() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.ner.accurate = vec!["regex".into()];
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    common::remember(&mut m, "", "Caroline went to Paris");
    let report = m.enrich(50).unwrap();
    assert!(!report.ran);
    assert_eq!(report.examined, 0);
}

#[test]
fn enrichment_retries_an_item_whose_accurate_provider_failed() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    std::fs::write(plugins.path().join("misbehave.wasm"), MISBEHAVE).unwrap();
    let mut cfg = common::config(dir.path());
    cfg.ner.plugin_dir = Some(plugins.path().to_path_buf());
    cfg.ner.accurate = vec!["regex".into(), "misbehave".into()];
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    // The fixture answers `fail` with an error; other texts it reads.
    let failing = common::remember(&mut m, "", "fail").memory;
    let fine = common::remember(&mut m, "", "Dana met Eve in Porto").memory;
    let report = m.enrich(10).unwrap();
    assert!(report.ran);
    let stamped = |m: &mut mnemo_host::Mnemo, id: &str| {
        m.get("", id).unwrap().attributes.contains("enriched_at")
    };
    assert!(stamped(&mut m, &fine.id), "read by every provider: stamped");
    assert!(
        !stamped(&mut m, &failing.id),
        "a provider failed: not stamped, so the next run retries it"
    );
    m.enrich(10).unwrap();
    assert!(
        !stamped(&mut m, &failing.id),
        "still retried, never given up silently"
    );
}
