//! LLM and embedding providers against a scripted OpenAI-compatible server
//! on 127.0.0.1: request shapes, routing, retries, typed errors for
//! malformed or truncated output, the usage ledger, and recall that keeps
//! answering while the embedding provider is down.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::llm_server::{Recorded, Reply, Scripted, chat_reply};
use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_core::ports::Llm;
use mnemo_host::config::EmbedderChoice;
use mnemo_host::http::HttpPolicy;
use mnemo_host::ledger::Ledger;
use mnemo_host::llm::{Endpoint, LlmClient, LlmConfig};
use serde_json::json;

fn fast_policy() -> HttpPolicy {
    HttpPolicy {
        timeout: Duration::from_secs(5),
        retries: 2,
        backoff: Duration::from_millis(10),
    }
}

fn endpoint(s: &Scripted, provider: &str, model: &str) -> Endpoint {
    Endpoint {
        provider: provider.into(),
        base_url: s.base.clone(),
        api_key: Some("k-123".into()),
        model: model.into(),
    }
}

fn client(default: Endpoint, ledger: &Ledger) -> LlmClient {
    LlmClient::new(
        LlmConfig {
            level: LlmLevel::Auto,
            default: Some(default),
            policy: fast_policy(),
            ..Default::default()
        },
        ledger.clone(),
    )
}

fn ask(component: &str, json_mode: bool) -> ChatRequest {
    ChatRequest {
        component: component.parse().unwrap(),
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: "You triage memories.".into(),
            },
            ChatMessage {
                role: "user".into(),
                content: "Promote this?".into(),
            },
        ],
        json: json_mode,
        max_tokens: Some(64),
        tool: None,
    }
}

fn with_tool(mut req: ChatRequest) -> ChatRequest {
    req.tool = Some(ToolSpec {
        name: "decide".into(),
        description: "Record the triage decision".into(),
        parameters: json!({"type": "object", "properties": {"decision": {"type": "string"}}, "required": ["decision"]}).to_string(),
    });
    req
}

#[test]
fn structured_output_by_tool_calling_openai() {
    let s = Scripted::start();
    s.push(Reply::json(
        200,
        json!({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "decide", "arguments": "{\"decision\":\"promote\"}"}}]}}],
               "usage": {"prompt_tokens": 20, "completion_tokens": 7}}),
    ));
    s.push(chat_reply("I think promote", "stop"));
    let llm = client(endpoint(&s, "openai", "m"), &Ledger::default());
    let out = llm.complete(&with_tool(ask("triage", true))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(v["decision"], "promote");
    let req = s.requests().remove(0);
    assert_eq!(req.body["tools"][0]["function"]["name"], "decide");
    assert_eq!(req.body["tool_choice"]["function"]["name"], "decide");
    assert_eq!(
        req.body["tools"][0]["function"]["parameters"]["required"][0],
        "decision"
    );
    // Text instead of the forced call reaches the core as the answer, which
    // repairs it or reports it malformed (tests/it/structured_output.rs); an
    // answer with neither is malformed here, never an empty answer.
    let prose = llm.complete(&with_tool(ask("triage", true))).unwrap();
    assert_eq!(prose.content, "I think promote");
    s.push(chat_reply("", "stop"));
    assert!(matches!(
        llm.complete(&with_tool(ask("triage", true))),
        Err(CoreError::Llm(_))
    ));
}

#[test]
fn structured_output_by_tool_calling_anthropic() {
    let s = Scripted::start();
    s.push(Reply::json(
        200,
        json!({"model": "c", "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3},
               "content": [{"type": "tool_use", "id": "t1", "name": "decide", "input": {"decision": "keep"}}]}),
    ));
    let llm = client(endpoint(&s, "anthropic", "c"), &Ledger::default());
    let out = llm.complete(&with_tool(ask("gate", false))).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.content).unwrap()["decision"],
        "keep"
    );
    let req = s.requests().remove(0);
    assert_eq!(req.body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(req.body["tool_choice"]["name"], "decide");
}

#[test]
fn openai_compatible_request_and_answer() {
    let s = Scripted::start();
    s.push(chat_reply("{\"decision\": \"promote\"}", "stop"));
    let ledger = Ledger::default();
    let llm = client(endpoint(&s, "openai", "gpt-4o-mini"), &ledger);
    let out = llm.complete(&ask("triage", true)).unwrap();
    assert_eq!(out.content, "{\"decision\": \"promote\"}");
    assert_eq!((out.input_tokens, out.output_tokens), (12, 5));
    let req: Recorded = s.requests().remove(0);
    assert_eq!(req.path, "/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer k-123"));
    assert_eq!(req.body["model"], "gpt-4o-mini");
    assert_eq!(req.body["messages"][0]["role"], "system");
    assert_eq!(req.body["response_format"]["type"], "json_object");
    assert_eq!(req.body["max_tokens"], 64);
    let usage = ledger.take();
    assert_eq!(usage.len(), 1);
    assert_eq!(
        (usage[0].component.as_str(), usage[0].outcome.as_str()),
        ("triage", "ok")
    );
}

#[test]
fn anthropic_messages_format() {
    let s = Scripted::start();
    s.push(Reply::json(
        200,
        json!({"model": "claude-x", "content": [{"type": "text", "text": "keep"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 9, "output_tokens": 1}}),
    ));
    let llm = client(endpoint(&s, "anthropic", "claude-x"), &Ledger::default());
    let out = llm.complete(&ask("gate", false)).unwrap();
    assert_eq!(out.content, "keep");
    let req = s.requests().remove(0);
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("k-123"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.body["system"], "You triage memories.");
    assert_eq!(req.body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn retries_on_429_and_5xx_then_succeeds() {
    let s = Scripted::start();
    s.push(Reply::json(429, json!({"error": "slow down"})));
    s.push(Reply::json(503, json!({"error": "busy"})));
    s.push(chat_reply("ok", "stop"));
    let llm = client(endpoint(&s, "openai", "m"), &Ledger::default());
    assert_eq!(llm.complete(&ask("merge", false)).unwrap().content, "ok");
    assert_eq!(s.requests().len(), 3);
}

#[test]
fn gives_up_after_the_retries_with_a_typed_error_in_the_ledger() {
    let s = Scripted::start();
    for _ in 0..3 {
        s.push(Reply::json(500, json!({"error": "down"})));
    }
    let ledger = Ledger::default();
    let llm = client(endpoint(&s, "openai", "m"), &ledger);
    assert!(matches!(
        llm.complete(&ask("merge", false)),
        Err(CoreError::Llm(_))
    ));
    assert_eq!(s.requests().len(), 3, "first attempt + 2 retries");
    assert_eq!(ledger.take()[0].outcome, "http 500");
    // A 4xx other than 429 is not retried.
    s.push(Reply::json(400, json!({"error": "bad request"})));
    assert!(matches!(
        llm.complete(&ask("merge", false)),
        Err(CoreError::Llm(_))
    ));
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn malformed_or_truncated_output_is_an_error_never_an_empty_answer() {
    let s = Scripted::start();
    s.push(Reply::json(200, json!({"nothing": "useful"})));
    s.push(chat_reply("{\"decision\": \"pro", "length"));
    s.push(Reply {
        status: 200,
        body: "not json at all".into(),
        headers: Vec::new(),
    });
    let ledger = Ledger::default();
    let llm = client(endpoint(&s, "openai", "m"), &ledger);
    for _ in 0..3 {
        match llm.complete(&ask("extract", true)) {
            Err(CoreError::Llm(msg)) => assert!(
                msg.contains("malformed") || msg.contains("not JSON"),
                "{msg}"
            ),
            other => panic!("expected a typed LLM error, got {other:?}"),
        }
    }
    assert!(ledger.take().iter().all(|u| u.outcome == "malformed"));
}

#[test]
fn components_route_to_their_tier_and_fall_back_to_the_global_model() {
    let global = Scripted::start();
    let gate = Scripted::start();
    global.respond_with(|_| chat_reply("global", "stop"));
    gate.respond_with(|_| chat_reply("gate", "stop"));
    let mut config = LlmConfig {
        level: LlmLevel::Auto,
        default: Some(endpoint(&global, "openai", "small")),
        policy: fast_policy(),
        ..Default::default()
    };
    config
        .tiers
        .insert(LlmTier::Gate, endpoint(&gate, "openai", "big"));
    let llm = LlmClient::new(config, Ledger::default());
    // triage and distill use the gate tier; audit falls back to gate; rerank to the global model.
    for (component, expected) in [
        ("triage", "gate"),
        ("gate", "gate"),
        ("review", "gate"),
        ("distill", "gate"),
        ("rerank", "global"),
    ] {
        assert_eq!(
            llm.complete(&ask(component, false)).unwrap().content,
            expected,
            "{component}"
        );
    }
    assert_eq!(gate.requests()[0].body["model"], "big");
    assert_eq!(global.requests()[0].body["model"], "small");
}

#[test]
fn level_off_refuses_without_calling_anyone() {
    let llm = LlmClient::off();
    assert_eq!(llm.level(), LlmLevel::Off);
    assert!(matches!(
        llm.complete(&ask("gate", false)),
        Err(CoreError::Unavailable(_))
    ));
}

fn embedding_server() -> Scripted {
    let s = Scripted::start();
    // Deterministic 8-dim vectors: one hot on the text length.
    s.respond_with(|req| {
        let inputs = req.body["input"].as_array().cloned().unwrap_or_default();
        let data: Vec<_> = inputs
            .iter()
            .enumerate()
            .rev() // out of order on purpose: the client must sort by index
            .map(|(i, t)| {
                let mut v = vec![0.01f32; 8];
                v[t.as_str().unwrap_or("").len() % 8] = 1.0;
                json!({"index": i, "embedding": v})
            })
            .collect();
        Reply::json(
            200,
            json!({"data": data, "model": "emb", "usage": {"prompt_tokens": inputs.len() * 3}}),
        )
    });
    s
}

fn http_config(dir: &std::path::Path, s: &Scripted, dimension: usize) -> mnemo_host::Config {
    let mut cfg = common::config(dir);
    cfg.embedder = EmbedderChoice::Http {
        provider: "openai".into(),
        base_url: s.base.clone(),
        api_key: Some("e-1".into()),
        model: "emb".into(),
        dimension,
        send_dimensions: true,
    };
    cfg
}

#[test]
fn http_embeddings_are_batched_truncated_and_ledgered() {
    let s = embedding_server();
    let dir = tempfile::tempdir().unwrap();
    let mut m = mnemo_host::Mnemo::open(&http_config(dir.path(), &s, 4)).unwrap();
    common::remember(&mut m, "", "abcd efgh");
    for i in 0..5 {
        m.ingest(Turn {
            session_id: "s".into(),
            role: "user".into(),
            content: format!("turn number {i}"),
            ..Default::default()
        })
        .unwrap();
    }
    assert_eq!(m.backfill_all(64, |_| {}).unwrap(), 5);
    let reqs = s.requests();
    assert_eq!(reqs[0].body["dimensions"], 4);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer e-1"));
    assert_eq!(
        reqs.last().unwrap().body["input"].as_array().unwrap().len(),
        5,
        "one batch for the backfill"
    );
    assert_eq!(common::count(&m, "SELECT COUNT(*) FROM vec_episodes"), 5);
    let usage = m.ports().store.usage(10).unwrap();
    assert!(
        usage
            .iter()
            .all(|u| u.component == "embedding" && u.outcome == "ok")
    );
    assert!(usage.len() >= 2);
}

#[test]
fn recall_keeps_answering_while_the_embedding_provider_is_down() {
    let s = embedding_server();
    let dir = tempfile::tempdir().unwrap();
    let cfg = http_config(dir.path(), &s, 8);
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    common::remember(&mut m, "", "the backup job runs nightly at two");
    drop(m);
    // The provider goes away: every call now fails.
    s.respond_with(|_| Reply::json(503, json!({"error": "down"})));
    let mut cfg = cfg;
    if let EmbedderChoice::Http { .. } = &mut cfg.embedder {
        cfg.llm.policy = fast_policy();
    }
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    let r = m
        .recall(RecallRequest {
            query: "when does the backup run".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.hits.len(), 1);
    assert_eq!(
        r.channels_run,
        vec![Channel::Fts, Channel::Fact, Channel::Entity]
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("vector channel skipped")),
        "{:?}",
        r.warnings
    );
    // Writes still land; their vectors come later.
    let out = common::remember(&mut m, "", "new memory while the provider is down");
    assert!(out.created);
    let failures = m
        .ports()
        .store
        .usage(50)
        .unwrap()
        .into_iter()
        .filter(|u| u.outcome != "ok")
        .count();
    assert!(failures >= 1);
}

fn settings_from(toml: &str) -> anyhow::Result<mnemo_host::config::Settings> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, toml).unwrap();
    mnemo_host::config::Settings::load(Some(&path))
}

#[test]
fn the_config_file_configures_providers_and_is_validated() {
    let s = settings_from(
        "llm_level = \"auto\"\nllm_url = \"http://127.0.0.1:9/v1\"\ngate_model = \"big-model\"\nembedder = \"hash\"\nllm_retries = 5\n\
         plugin_dir = \"/tmp/plugins\"\nner_fast = \"regex, names\"\ncron_decay = \"off\"\ncron_enrich = \"30 1 * * *\"\n",
    )
    .unwrap();
    let cfg = mnemo_host::Config::from_settings(None, &s).unwrap();
    assert_eq!(cfg.llm.level, LlmLevel::Auto);
    assert_eq!(cfg.llm.policy.retries, 5);
    assert_eq!(cfg.llm.tiers[&LlmTier::Gate].model, "big-model");
    assert_eq!(
        cfg.llm.tiers[&LlmTier::Gate].base_url,
        "http://127.0.0.1:9/v1"
    );
    assert!(matches!(cfg.embedder, EmbedderChoice::Hash { .. }));
    assert_eq!(cfg.ner.fast, ["regex", "names"]);
    assert_eq!(
        cfg.ner.plugin_dir.as_deref(),
        Some(std::path::Path::new("/tmp/plugins"))
    );
    let tasks: Vec<&str> = cfg.schedule.tasks.iter().map(|(t, _)| t.name()).collect();
    assert_eq!(
        tasks,
        ["enrich", "consolidate", "interval", "reflect"],
        "fading is off (the round 1 key `cron_decay` still reads)"
    );
    // 2023-05-08 01:30 UTC: enrichment moved there (and the half-hour interval).
    let names: Vec<&str> = cfg
        .schedule
        .due(1_683_509_400_000)
        .into_iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(names, ["enrich", "interval"]);
    let err = settings_from("cron_enrich = \"every night\"\n")
        .and_then(|s| mnemo_host::Config::from_settings(None, &s))
        .unwrap_err();
    assert!(format!("{err:#}").contains("enrich schedule"), "{err:#}");

    let err = settings_from("llm_urll = \"x\"\n").unwrap_err();
    assert!(format!("{err:#}").contains("unknown setting `llm_urll`"));
    let err = settings_from("llm_level = \"auto\"\n")
        .and_then(|s| mnemo_host::Config::from_settings(None, &s))
        .unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_LLM_URL"), "{err:#}");
    let err = settings_from("embedder = \"magic\"\n")
        .and_then(|s| mnemo_host::Config::from_settings(None, &s))
        .unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_EMBEDDER"));
    let err = settings_from("embedder = \"http\"\nembedding_url = \"http://x\"\n")
        .and_then(|s| mnemo_host::Config::from_settings(None, &s))
        .unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_EMBEDDING_DIM"));
    assert!(settings_from("not toml [").is_err());
}

#[test]
fn the_llm_is_an_accurate_ner_provider_through_the_hosts_llm() {
    let s = Scripted::start();
    s.respond_with(|req| {
        let text = req.body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        // Names what is in the text, plus one invention that must be dropped.
        let mut entities = vec![json!({"text": "Atlantis", "type": "location"})];
        for (name, kind) in [("Caroline", "person"), ("Paris", "location"), ("Acme Labs", "organization")] {
            if text.contains(name) {
                entities.push(json!({"text": name, "type": kind}));
            }
        }
        let args = json!({ "entities": entities }).to_string();
        Reply::json(
            200,
            json!({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
                   "tool_calls": [{"id": "c", "type": "function", "function": {"name": "record_entities", "arguments": args}}]}}],
                   "usage": {"prompt_tokens": 30, "completion_tokens": 12}}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.ner.accurate = vec!["regex".into()]; // no accurate plugin: the LLM is the provider
    cfg.llm = LlmConfig {
        level: LlmLevel::Auto,
        default: Some(endpoint(&s, "openai", "m")),
        policy: fast_policy(),
        ..Default::default()
    };
    let mut m = mnemo_host::Mnemo::open(&cfg).unwrap();
    m.ingest(Turn {
        session_id: "s".into(),
        role: "user".into(),
        content: "Caroline moved to Paris for Acme Labs".into(),
        ..Default::default()
    })
    .unwrap();
    let report = m.enrich(10).unwrap();
    assert!(report.ran);
    assert_eq!(report.linked, 3, "Atlantis is not in the text");
    let req = s.requests().remove(0);
    assert_eq!(
        req.body["tool_choice"]["function"]["name"],
        "record_entities"
    );
    let org = m.entity_info("", "acme labs", 5).unwrap();
    assert_eq!(org[0].entity.entity_type, EntityType::Organization);
    assert_eq!(org[0].episodes.len(), 1);
    assert!(m.entity_info("", "atlantis", 5).unwrap().is_empty());
    let usage = m.ports().store.usage(10).unwrap();
    assert!(
        usage
            .iter()
            .any(|u| u.component == "ner" && u.outcome == "ok")
    );

    // A malformed answer links nothing and leaves the item for the next run.
    s.respond_with(|_| chat_reply("no tool call here", "stop"));
    m.ingest(Turn {
        session_id: "s".into(),
        role: "user".into(),
        content: "Paris again".into(),
        ..Default::default()
    })
    .unwrap();
    let report = m.enrich(10).unwrap();
    assert_eq!((report.examined, report.linked), (1, 0));
    assert_eq!(m.enrich(10).unwrap().examined, 1, "still a candidate");
}

#[test]
fn every_setting_of_the_file_is_read_typed_and_none_is_ignored() {
    // Settings that round 1 accepted in the file and then ignored.
    let s = settings_from(
        "model_dir = \"/opt/minilm\"\nlog = \"mnemo=debug\"\nlog_format = \"json\"\nport = 9001\nann_min_rows = \"off\"\nembedding_send_dim = \"yes\"\nfade_layers = \"buffer, core\"\n",
    )
    .unwrap();
    let cfg = mnemo_host::Config::from_settings(None, &s).unwrap();
    // The environment wins over the file (CI sets MNEMO_MODEL_DIR).
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let expected_dir = env("MNEMO_MODEL_DIR").unwrap_or_else(|| "/opt/minilm".into());
    match &cfg.embedder {
        EmbedderChoice::Local { dir, .. } => {
            assert_eq!(dir, std::path::Path::new(&expected_dir))
        }
        other => panic!("the local embedder was expected, not {other:?}"),
    }
    let expected_log = env("MNEMO_LOG").unwrap_or_else(|| "mnemo=debug".into());
    assert_eq!(cfg.log.as_deref(), Some(expected_log.as_str()));
    assert_eq!(cfg.log_format.as_deref(), Some("json"));
    assert_eq!(cfg.port, 9001);
    assert_eq!(cfg.ann_min_rows, None);
    assert_eq!(cfg.fade_layers, [Layer::Buffer, Layer::Core]);
    let err = settings_from("fade_layers = \"attic\"\n")
        .and_then(|s| mnemo_host::Config::from_settings(None, &s))
        .unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_FADE_LAYERS"), "{err:#}");
    // The same value as text reads the same (the environment's form).
    let s = settings_from("port = \"9001\"\n").unwrap();
    assert_eq!(
        mnemo_host::Config::from_settings(None, &s).unwrap().port,
        9001
    );
    // A value of the wrong type names its setting.
    let err = settings_from("port = \"many\"\n").unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_PORT"), "{err:#}");
    let err = settings_from("llm_level = \"sometimes\"\n").unwrap_err();
    assert!(format!("{err:#}").contains("MNEMO_LLM_LEVEL"), "{err:#}");
    let err = settings_from("model_precision = \"q4\"\n").unwrap_err();
    assert!(
        format!("{err:#}").contains("MNEMO_MODEL_PRECISION"),
        "{err:#}"
    );
    if env("MNEMO_MODEL_PRECISION").is_none() {
        let s = settings_from("model_precision = \"F32\"\n").unwrap();
        match mnemo_host::Config::from_settings(None, &s)
            .unwrap()
            .embedder
        {
            EmbedderChoice::Local { precision, .. } => {
                assert_eq!(precision, mnemo_host::embedding::Precision::F32)
            }
            other => panic!("the local embedder was expected, not {other:?}"),
        }
    }
    // Every setting has a name the file accepts.
    assert!(mnemo_host::config::Settings::NAMES.contains(&"model_dir"));
    assert!(mnemo_host::config::Settings::NAMES.contains(&"review_model"));
}
