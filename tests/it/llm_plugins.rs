//! LLM providers as sandboxed plugins (issue 17), through real components
//! against scripted servers on 127.0.0.1: Ollama's native API (a provider
//! the host never knew), a provider added from the plugin folder, and the
//! hostile fixture (`tests/fixtures/plugins/llm-hostile`), whose every
//! attack — a URL outside the allow-list, a hunt for the key, a loop, a
//! memory balloon, a 100 MB answer, garbage, a panic — fails that one call
//! with a typed error while the host keeps serving.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::llm_server::{Reply, Scripted};
use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_core::ports::Llm;
use mnemo_host::Mnemo;
use mnemo_host::http::HttpPolicy;
use mnemo_host::ledger::Ledger;
use mnemo_host::llm::{Endpoint, LlmClient, LlmConfig};
use mnemo_host::plugins::llm::LlmPlugins;
use mnemo_host::plugins::{PluginHost, PluginLimits};
use serde_json::json;

const HOSTILE: &[u8] = include_bytes!(env!("MNEMO_FIXTURE_LLM_HOSTILE_WASM"));
const KEY: &str = "sk-secret-0123456789";

fn config(s: &Scripted, provider: &str, model: &str) -> LlmConfig {
    LlmConfig {
        level: LlmLevel::Auto,
        default: Some(Endpoint {
            provider: provider.into(),
            base_url: s.base.clone(),
            api_key: Some(KEY.into()),
            model: model.into(),
        }),
        policy: HttpPolicy {
            timeout: Duration::from_secs(5),
            retries: 1,
            backoff: Duration::from_millis(10),
        },
        ..Default::default()
    }
}

/// A client whose providers are the bundled ones and the hostile fixture.
fn hostile(s: &Scripted, model: &str, limits: PluginLimits) -> (LlmClient, Ledger) {
    let host = PluginHost::new(limits, Some(common::cache_dir())).unwrap();
    let plugin = Arc::new(host.load_llm("hostile fixture", HOSTILE).unwrap());
    let plugins = LlmPlugins::with(host, vec![plugin]);
    let ledger = Ledger::default();
    let client =
        LlmClient::with_plugins(config(s, "hostile", model), ledger.clone(), Some(plugins));
    (client, ledger)
}

/// A store's configuration with the hostile fixture in its plugin folder.
fn with_hostile_in_folder(dir: &std::path::Path) -> mnemo_host::Config {
    let plugins = dir.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(plugins.join("hostile.wasm"), HOSTILE).unwrap();
    let mut cfg = common::config(dir);
    cfg.ner.plugin_dir = Some(plugins);
    cfg
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        component: LlmComponent::Ner,
        messages: vec![ChatMessage {
            role: "user".into(),
            content: text.into(),
        }],
        json: false,
        max_tokens: Some(32),
        tool: None,
    }
}

fn llm_error(r: Result<ChatResponse, CoreError>) -> String {
    match r {
        Err(CoreError::Llm(m)) => m,
        other => panic!("expected a typed LLM error, got {other:?}"),
    }
}

/// The hostile fixture's honest mode still answers: the attack cost one call.
fn still_serves(s: &Scripted, limits: PluginLimits) {
    s.respond_with(|r| Reply::json(200, json!({"text": r.body["text"]})));
    let (honest, _) = hostile(s, "honest", limits);
    assert_eq!(honest.complete(&ask("ping")).unwrap().content, "ping");
}

#[test]
fn ollama_native_is_a_plugin_the_host_never_knew() {
    let s = Scripted::start();
    s.push(Reply::json(
        200,
        json!({"model": "llama3.2", "message": {"role": "assistant", "content": "{\"decision\":\"keep\"}"},
               "done": true, "done_reason": "stop", "prompt_eval_count": 31, "eval_count": 6}),
    ));
    let ledger = Ledger::default();
    let llm = LlmClient::new(config(&s, "ollama", "llama3.2"), ledger.clone());
    llm.check_providers().unwrap();
    let mut req = ask("Promote this?");
    req.tool = Some(ToolSpec {
        name: "decide".into(),
        description: "the decision".into(),
        parameters: json!({"type": "object", "properties": {"decision": {"type": "string"}}})
            .to_string(),
    });
    let out = llm.complete(&req).unwrap();
    assert_eq!(out.content, "{\"decision\":\"keep\"}");
    assert_eq!((out.input_tokens, out.output_tokens), (31, 6));
    let sent = s.requests().remove(0);
    assert_eq!(sent.path, "/api/chat");
    assert_eq!(sent.body["stream"], false);
    assert_eq!(
        sent.body["format"]["type"], "object",
        "the schema constrains decoding"
    );
    assert_eq!(sent.body["options"]["num_predict"], 32);
    assert_eq!(sent.header("authorization"), None, "Ollama takes no key");
    assert_eq!(ledger.take()[0].outcome, "ok");
}

#[test]
fn embeddings_go_through_a_plugin_too() {
    let s = Scripted::start();
    s.respond_with(|r| {
        let n = r.body["input"].as_array().map_or(0, |a| a.len());
        let rows: Vec<Vec<f32>> = (0..n)
            .map(|i| vec![1.0, i as f32, 0.5, 0.25, 9.0])
            .collect();
        Reply::json(
            200,
            json!({"model": "nomic", "embeddings": rows, "prompt_eval_count": 7}),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::config(dir.path());
    cfg.embedder = mnemo_host::config::EmbedderChoice::Http {
        provider: "ollama".into(),
        base_url: s.base.clone(),
        api_key: None,
        model: "nomic".into(),
        dimension: 4,
        send_dimensions: false,
    };
    let mut m = Mnemo::open(&cfg).unwrap();
    common::remember(&mut m, "", "the backup job runs nightly at two");
    m.backfill_all(64, |_| {}).unwrap();
    let sent = s.requests();
    assert!(sent.iter().all(|r| r.path == "/api/embed"), "{sent:?}");
    assert_eq!(sent[0].body["model"], "nomic");
    let usage = m.ports().store.usage(10).unwrap();
    assert!(
        usage
            .iter()
            .any(|u| u.component == "embedding" && u.outcome == "ok" && u.input_tokens == 7)
    );
    let hits = common::recall(&mut m, "", "when does the backup job run");
    assert_eq!(hits.hits.len(), 1);
    // A provider without embeddings is refused when the store opens.
    cfg.embedder = mnemo_host::config::EmbedderChoice::Http {
        provider: "anthropic".into(),
        base_url: s.base.clone(),
        api_key: None,
        model: "x".into(),
        dimension: 4,
        send_dimensions: false,
    };
    let e = format!("{:#}", Mnemo::open(&cfg).err().unwrap());
    assert!(
        e.contains("`anthropic`: that provider has no embeddings"),
        "{e}"
    );
}

#[test]
fn a_tier_can_name_another_provider_plugin() {
    let global = Scripted::start();
    let gate = Scripted::start();
    global.respond_with(|_| common::llm_server::chat_reply("from openai", "stop"));
    gate.respond_with(|_| {
        Reply::json(
            200,
            json!({"model": "qwen", "message": {"content": "from ollama"}, "done_reason": "stop"}),
        )
    });
    let mut cfg = config(&global, "openai", "gpt");
    cfg.tiers.insert(
        LlmTier::Gate,
        Endpoint {
            provider: "ollama".into(),
            base_url: gate.base.clone(),
            api_key: None,
            model: "qwen".into(),
        },
    );
    let llm = LlmClient::new(cfg, Ledger::default());
    llm.check_providers().unwrap();
    let mut req = ask("x");
    req.component = LlmComponent::Gate;
    assert_eq!(llm.complete(&req).unwrap().content, "from ollama");
    req.component = LlmComponent::Ner;
    assert_eq!(llm.complete(&req).unwrap().content, "from openai");
    assert_eq!(gate.requests()[0].path, "/api/chat");
    assert_eq!(global.requests()[0].path, "/chat/completions");
    assert_eq!(
        global.requests()[0].header("authorization"),
        Some("Bearer sk-secret-0123456789")
    );
}

#[test]
fn an_unknown_provider_is_refused_at_start_with_the_known_names() {
    let s = Scripted::start();
    let llm = LlmClient::new(config(&s, "gemini", "g"), Ledger::default());
    let e = llm.check_providers().unwrap_err().to_string();
    assert!(
        e.contains("`gemini`") && e.contains("openai, anthropic, ollama"),
        "{e}"
    );
}

#[test]
fn a_plugin_in_the_folder_adds_a_provider_to_a_real_store() {
    let s = Scripted::start();
    s.respond_with(|r| Reply::json(200, json!({"text": r.body["text"]})));
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = with_hostile_in_folder(dir.path());
    cfg.llm = config(&s, "hostile", "honest");
    let m = Mnemo::open(&cfg).unwrap();
    let out = m.ports().llm.complete(&ask("hello")).unwrap();
    assert_eq!(out.content, "hello");
    assert_eq!(s.requests()[0].path, "/echo");
}

#[test]
fn a_url_outside_the_allow_list_is_refused_logged_and_fails_the_call() {
    let s = Scripted::start();
    let (llm, ledger) = hostile(&s, "escape", PluginLimits::default());
    let e = llm_error(llm.complete(&ask("x")));
    assert!(
        e.contains("http://203.0.113.7/collect") && e.contains("outside its allow-list"),
        "{e}"
    );
    assert_eq!(ledger.take()[0].outcome, "denied");
    assert!(s.requests().is_empty(), "nothing left the host");
    still_serves(&s, PluginLimits::default());
}

#[test]
fn the_key_is_added_by_the_host_and_never_reaches_the_plugin() {
    let s = Scripted::start();
    s.respond_with(|_| Reply::json(200, json!({"ok": true})));
    let (llm, _) = hostile(&s, "steal-key", PluginLimits::default());
    let out = llm.complete(&ask("x")).unwrap();
    assert!(
        !out.content.contains(KEY),
        "the plugin saw the key: {}",
        out.content
    );
    assert!(
        out.content.starts_with("found=[]"),
        "no environment, no files: {}",
        out.content
    );
    let sent = s.requests().remove(0);
    let auth: Vec<&(String, String)> = sent
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .collect();
    assert_eq!(
        auth.len(),
        1,
        "the plugin's own header was dropped: {auth:?}"
    );
    assert_eq!(auth[0].1, format!("Bearer {KEY}"));
    assert!(!sent.body.to_string().contains(KEY));
}

#[test]
fn a_loop_meets_the_deadline_and_waiting_on_the_provider_does_not_count() {
    let s = Scripted::start();
    let limits = PluginLimits {
        deadline: Duration::from_millis(200),
        ..Default::default()
    };
    let (llm, ledger) = hostile(&s, "loop", limits.clone());
    let started = Instant::now();
    let e = llm_error(llm.complete(&ask("x")));
    assert!(e.contains("deadline of 200 ms exceeded"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(ledger.take()[0].outcome, "trapped");
    // A provider slower than the deadline is not the plugin's time.
    s.respond_with(|r| {
        std::thread::sleep(Duration::from_millis(600));
        Reply::json(200, json!({"text": r.body["text"]}))
    });
    let (honest, _) = hostile(&s, "honest", limits);
    assert_eq!(honest.complete(&ask("slow")).unwrap().content, "slow");
}

#[test]
fn a_memory_balloon_hits_the_memory_limit() {
    let s = Scripted::start();
    let limits = PluginLimits {
        memory_bytes: 32 << 20,
        ..Default::default()
    };
    let (llm, ledger) = hostile(&s, "balloon", limits.clone());
    let e = llm_error(llm.complete(&ask("x")));
    assert!(e.contains("memory limit of 32 MiB exceeded"), "{e}");
    assert_eq!(ledger.take()[0].outcome, "trapped");
    still_serves(&s, limits);
}

#[test]
fn a_100_mb_answer_is_over_the_cap() {
    let s = Scripted::start();
    // Room for the answer in the plugin's memory, so the byte cap is what
    // stops it (under the default 64 MiB the memory limit does, first).
    let roomy = PluginLimits {
        memory_bytes: 512 << 20,
        ..Default::default()
    };
    let (llm, ledger) = hostile(&s, "huge", roomy);
    let e = llm_error(llm.complete(&ask("x")));
    assert!(
        e.contains("104857600 bytes is over the 1048576 byte cap"),
        "{e}"
    );
    assert_eq!(ledger.take()[0].outcome, "refused");
    let (tight, _) = hostile(&s, "huge", PluginLimits::default());
    let e = llm_error(tight.complete(&ask("x")));
    assert!(e.contains("memory limit"), "{e}");
    still_serves(&s, PluginLimits::default());
}

#[test]
fn a_panic_costs_one_call() {
    let s = Scripted::start();
    let (llm, ledger) = hostile(&s, "trap", PluginLimits::default());
    let e = llm_error(llm.complete(&ask("x")));
    assert!(e.contains("plugin `hostile`: trapped"), "{e}");
    assert_eq!(ledger.take()[0].outcome, "trapped");
    still_serves(&s, PluginLimits::default());
}

#[test]
fn garbage_is_repaired_or_a_typed_error_that_keeps_the_item() {
    let s = Scripted::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = with_hostile_in_folder(dir.path());
    cfg.ner.accurate = vec!["regex".into()];
    cfg.llm = config(&s, "hostile", "garbage");
    let mut m = Mnemo::open(&cfg).unwrap();
    m.ingest(Turn {
        session_id: "s".into(),
        role: "user".into(),
        content: "Caroline moved to Paris last spring".into(),
        ..Default::default()
    })
    .unwrap();
    let report = m.enrich(10).unwrap();
    assert_eq!((report.examined, report.linked), (1, 0), "{report:?}");
    let usage = m.ports().store.usage(10).unwrap();
    let calls = usage.iter().filter(|u| u.component == "ner").count();
    assert_eq!(
        calls, 2,
        "the garbage was shown to the model once: {usage:?}"
    );
    // The item waits for the next run, and the store keeps serving.
    let again = m.enrich(10).unwrap();
    assert_eq!(
        (again.examined, again.linked),
        (1, 0),
        "the item is still pending"
    );
    common::remember(&mut m, "", "Caroline's new flat in Paris has a balcony");
    let hits = common::recall(&mut m, "", "Caroline flat balcony");
    assert!(!hits.hits.is_empty(), "{hits:?}");
}
