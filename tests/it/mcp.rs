//! MCP driven by the official SDK's client (`rmcp`) over both transports:
//! `mnemo mcp` as a child process on stdio, and streamable HTTP at `/mcp`
//! on `mnemo serve` (with its bearer token and `X-Namespace` header) and on
//! `mnemo mcp --listen`, whose HTTP API shares the stdio server's engines.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;

use axum::http::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

use common::server::{NO_CRON, call, start};

type Client = RunningService<RoleClient, ()>;

async fn tool(c: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    c.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A tool call that must succeed: its structured content.
async fn ok(c: &Client, name: &str, args: Value) -> Value {
    let r = tool(c, name, args).await;
    assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
    r.structured_content
        .unwrap_or_else(|| panic!("{name}: no structured content"))
}

/// A tool call that must fail as a tool result: the error object.
async fn failed(c: &Client, name: &str, args: Value) -> Value {
    let r = tool(c, name, args).await;
    assert_eq!(r.is_error, Some(true), "{name} should fail: {r:?}");
    let text = r.content[0].as_text().unwrap().text.clone();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

fn stdio_command(dir: &std::path::Path, env: &[(&str, &str)]) -> tokio::process::Command {
    // On Postgres this makes a database with the blocking client, which
    // must not run on the async executor.
    let db = tokio::task::block_in_place(|| common::database_in(dir, "m.db"));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"));
    cmd.arg("--db")
        .arg(db)
        .arg("mcp")
        .env("MNEMO_DATA_DIR", dir)
        .env("MNEMO_CACHE_DIR", common::cache_dir())
        .env("MNEMO_EMBEDDER", "hash")
        .env_remove("MNEMO_API_KEY")
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::null());
    cmd
}

async fn http_client(base: &str, key: Option<&str>, ns: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    if let Some(k) = key {
        config = config.auth_header(k);
    }
    if let Some(ns) = ns {
        let mut headers = HashMap::new();
        headers.insert(
            HeaderName::from_static("x-namespace"),
            HeaderValue::from_str(ns).unwrap(),
        );
        config = config.custom_headers(headers);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP over HTTP connects")
}

/// The agent's round trip the issue names: remember → context →
/// consolidate → resume, and what each answer must say.
async fn round_trip(c: &Client) {
    let saved = ok(
        c,
        "remember_fact",
        json!({"content": "The user's sister Carol lives in Lisbon", "tags": ["family"]}),
    )
    .await;
    assert_eq!(saved["created"], true, "{saved}");
    assert_eq!(saved["layer"], "buffer", "{saved}");
    let again = ok(
        c,
        "remember_fact",
        json!({"content": "The user's sister Carol lives in Lisbon"}),
    )
    .await;
    assert_eq!(again["created"], false, "a restatement reinforces: {again}");
    assert_eq!(again["id"], saved["id"]);

    let ctx = ok(
        c,
        "context",
        json!({"prompt": "Where does the user's sister Carol live?"}),
    )
    .await;
    assert!(
        ctx["text"].as_str().unwrap().contains("Lisbon"),
        "context injects the fact: {ctx}"
    );
    let dry = ok(c, "consolidate", json!({"dry": true})).await;
    assert_eq!(dry["dry"], true, "{dry}");
    let report = ok(c, "consolidate", json!({})).await;
    assert_eq!(report["dry"], false, "{report}");
    let resume = ok(c, "resume", json!({"hours": 48})).await;
    let text = resume["text"].as_str().unwrap();
    assert!(text.contains("=== Recent (48h) ==="), "{text}");
    assert!(text.contains("Lisbon"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_tools_have_derived_schemas_and_every_failure_is_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    let c =
        ().serve(TokioChildProcess::new(stdio_command(dir.path(), &NO_CRON)).unwrap())
            .await
            .expect("MCP over stdio connects");
    let info = c.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "mnemo");
    assert!(info.instructions.as_deref().unwrap().contains("resume"));

    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in [
        "search_memory",
        "recall",
        "remember_fact",
        "get_memory",
        "correct_fact",
        "confirm_fact",
        "edit_memory",
        "forget",
        "restore",
        "history",
        "revert",
        "memory_stats",
        "get_entity_info",
        "context",
        "resume",
        "topics",
        "topic",
        "triggers",
        "recent",
        "ingest_turn",
        "sessions",
        "consolidate",
        "review",
        "reflect",
        "add_fact",
        "query_facts",
        "fact_graph",
    ] {
        assert!(names.contains(&want), "no `{want}` in {names:?}");
    }
    // Schemas come from the types: the engine's RecallRequest names its
    // layers and sort orders; required fields are required.
    let recall = tools.iter().find(|t| t.name == "recall").unwrap();
    let schema = serde_json::to_string(&recall.input_schema).unwrap();
    for word in [
        "\"query\"",
        "\"layers\"",
        "\"token_budget\"",
        "working",
        "recent",
    ] {
        assert!(
            schema.contains(word),
            "recall's schema lacks {word}: {schema}"
        );
    }
    let forget = tools.iter().find(|t| t.name == "forget").unwrap();
    assert_eq!(forget.input_schema["required"], json!(["id"]));
    // Every tool is titled, says what it does to data, and declares the
    // shape of what it answers.
    for t in &tools {
        let a = t
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} unannotated", t.name));
        assert!(
            t.title.is_some() && a.title.is_some(),
            "{} untitled",
            t.name
        );
        assert!(
            a.read_only_hint.is_some() && a.open_world_hint.is_some(),
            "{}",
            t.name
        );
        if a.read_only_hint == Some(false) {
            assert!(
                a.destructive_hint.is_some() && a.idempotent_hint.is_some(),
                "{}",
                t.name
            );
        }
        let out = t
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no outputSchema", t.name));
        assert_eq!(out["type"], "object", "{}: {out:?}", t.name);
    }
    let hint = |name: &str| {
        let a = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .annotations
            .clone()
            .unwrap();
        (a.read_only_hint, a.destructive_hint)
    };
    assert_eq!(hint("get_memory").0, Some(true));
    assert_eq!(hint("forget"), (Some(false), Some(true)));
    assert_eq!(hint("remember_fact"), (Some(false), Some(false)));

    round_trip(&c).await;

    // The rest of what an agent does, through the same client.
    let hits = ok(&c, "search_memory", json!({"query": "Carol Lisbon"})).await;
    let id = hits["hits"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(hits["hits"][0]["type"], "memory", "{hits}");
    let confirmed = ok(&c, "confirm_fact", json!({"id": id})).await;
    assert_eq!(confirmed["decay_rate"], 0.0, "{confirmed}");
    let corrected = ok(
        &c,
        "correct_fact",
        json!({"id": id, "content": "The user's sister Carol lives in Porto"}),
    )
    .await;
    assert_eq!(corrected["supersedes"], id.as_str(), "{corrected}");
    let new_id = corrected["id"].as_str().unwrap().to_string();
    let edited = ok(&c, "edit_memory", json!({"id": new_id, "importance": 0.9})).await;
    assert_eq!(
        edited["importance"], 0.9,
        "numbers print as stored: {edited}"
    );
    let versions = ok(&c, "history", json!({"id": new_id})).await;
    assert_eq!(
        versions["versions"].as_array().unwrap().len(),
        1,
        "{versions}"
    );
    let gone = ok(&c, "forget", json!({"id": new_id, "reason": "test"})).await;
    assert_eq!(gone["invalid_reason"], "test", "{gone}");
    ok(&c, "restore", json!({"id": new_id})).await;
    let turn = ok(
        &c,
        "ingest_turn",
        json!({"session_id": "s1", "role": "user", "content": "I adopted a cat named Miso"}),
    )
    .await;
    assert_eq!(turn["new_session"], true, "{turn}");
    let sessions = ok(&c, "sessions", json!({})).await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "{sessions}"
    );
    let fact = ok(
        &c,
        "add_fact",
        json!({"subject": "Carol", "predicate": "lives_in", "object": "Porto", "exclusive": true}),
    )
    .await;
    assert!(fact.is_object(), "{fact}");
    let facts = ok(&c, "query_facts", json!({"entity": "Carol"})).await;
    assert_eq!(facts["facts"][0]["object"], "Porto", "{facts}");
    let graph = ok(&c, "fact_graph", json!({"entity": "Carol", "hops": 1})).await;
    assert!(!graph["facts"].as_array().unwrap().is_empty(), "{graph}");
    let stats = ok(&c, "memory_stats", json!({})).await;
    assert!(stats["active"].as_u64().unwrap() >= 1, "{stats}");
    ok(&c, "topics", json!({})).await;
    ok(&c, "triggers", json!({})).await;
    let recent = ok(&c, "recent", json!({})).await;
    assert!(
        !recent["memories"].as_array().unwrap().is_empty(),
        "{recent}"
    );

    // Failures are tool results the model can read, with the API's codes.
    let e = failed(&c, "get_memory", json!({"id": "no-such-id"})).await;
    assert_eq!(e["error"]["code"], "not_found", "{e}");
    let e = failed(&c, "remember_fact", json!({"content": "   "})).await;
    assert_eq!(e["error"]["code"], "invalid_input", "{e}");
    let e = failed(&c, "topic", json!({"ids": []})).await;
    assert_eq!(e["error"]["code"], "invalid_input", "{e}");
    failed(&c, "revert", json!({"id": new_id})).await; // no `version`
    failed(&c, "recall", json!({"query": "x", "layers": ["attic"]})).await;
    failed(&c, "review", json!({"dry": true})).await; // no LLM configured
    // An unknown tool is a protocol error; the server keeps serving.
    let unknown = c
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    ok(&c, "memory_stats", json!({})).await;
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn streamable_http_round_trip_with_the_apis_auth_and_namespaces() {
    let server = tokio::task::spawn_blocking(|| start(Some("s3cret")))
        .await
        .unwrap();
    let base = server.base.clone();

    // The bearer token guards /mcp as it guards the API.
    let bare = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp")),
    );
    assert!(().serve(bare).await.is_err(), "no token, no session");

    let c = http_client(&base, Some("s3cret"), Some("team-a")).await;
    round_trip(&c).await;

    // X-Namespace partitions as over the API: another project namespace
    // sees nothing of team-a's (each also reads `default`, seed 004 §7).
    let other = http_client(&base, Some("s3cret"), Some("team-b")).await;
    let hits = ok(&other, "search_memory", json!({"query": "Carol Lisbon"})).await;
    assert_eq!(hits["hits"], json!([]), "{hits}");
    ok(
        &other,
        "remember_fact",
        json!({"content": "Team B ships on Tuesdays"}),
    )
    .await;
    // ... and what MCP wrote there, the API reads there.
    let (st, v) = tokio::task::spawn_blocking(move || {
        call(
            ureq::get(&format!("{base}/memories?namespace=team-b"))
                .set("Authorization", "Bearer s3cret"),
            None,
        )
    })
    .await
    .unwrap();
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["memories"][0]["content"], "Team B ships on Tuesdays",
        "{v}"
    );
    c.cancel().await.unwrap();
    other.cancel().await.unwrap();

    // The routes `fade` and `enrich` mirror: the nightly tasks on demand.
    let base = server.base.clone();
    let (fade, enrich) = tokio::task::spawn_blocking(move || {
        let post = |path: &str, body: Option<&str>| {
            call(
                ureq::post(&format!("{base}{path}")).set("Authorization", "Bearer s3cret"),
                body,
            )
        };
        (
            post("/fade", None),
            post("/enrich", Some(r#"{"limit": 3}"#)),
        )
    })
    .await
    .unwrap();
    assert_eq!(fade.0, 200, "{:?}", fade.1);
    assert!(fade.1["examined"].as_u64().is_some(), "{:?}", fade.1);
    assert_eq!(enrich.0, 200, "{:?}", enrich.1);
    assert!(enrich.1["ran"].is_boolean(), "{:?}", enrich.1);
    drop(server);
}

/// `mnemo mcp --listen`: the HTTP API is served from the stdio server's own
/// engines (a write through one is read through the other at once), and
/// the scheduler runs under `mnemo mcp` (a cycle every minute).
#[tokio::test(flavor = "multi_thread")]
async fn mcp_runs_the_scheduler_and_shares_its_engines_with_http() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut env: Vec<(&str, &str)> = NO_CRON.to_vec();
    env.retain(|(k, _)| *k != "MNEMO_CRON_CONSOLIDATE");
    env.push(("MNEMO_CRON_CONSOLIDATE", "* * * * *"));
    let mut cmd = stdio_command(dir.path(), &env);
    let addr = format!("127.0.0.1:{port}");
    cmd.args(["--listen", &addr]);
    let c = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let saved = ok(
        &c,
        "remember_fact",
        json!({"content": "Standup is at 9:30"}),
    )
    .await;
    let id = saved["id"].as_str().unwrap().to_string();

    let base = format!("http://{addr}");
    let get = move |path: String| {
        let base = base.clone();
        async move {
            tokio::task::spawn_blocking(move || call(ureq::get(&format!("{base}{path}")), None))
                .await
                .unwrap()
        }
    };
    let (st, v) = get(format!("/memories/{id}")).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["content"], "Standup is at 9:30", "{v}");

    let started = std::time::Instant::now();
    loop {
        let (_, v) = get("/decisions?action=scheduled&limit=10".into()).await;
        if v["entries"].as_array().is_some_and(|e| !e.is_empty()) {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(150),
            "no scheduled cycle ran under `mnemo mcp`: {v}"
        );
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    c.cancel().await.unwrap();
}

/// Resources (resume, Core, a topic, a memory and its history), prompts
/// and completions through the SDK's client: what each reads is what the
/// matching tool answers; an unknown resource is a protocol error.
#[tokio::test(flavor = "multi_thread")]
async fn resources_prompts_and_completions() {
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
        Reference,
    };
    let dir = tempfile::tempdir().unwrap();
    let c =
        ().serve(TokioChildProcess::new(stdio_command(dir.path(), &NO_CRON)).unwrap())
            .await
            .expect("MCP over stdio connects");
    let saved = ok(
        &c,
        "remember_fact",
        json!({"content": "The user's dog is called Biscuit", "namespace": "u1"}),
    )
    .await;
    let id = saved["id"].as_str().unwrap();
    let read = |uri: String| {
        let c = &c;
        async move {
            let r = c
                .read_resource(ReadResourceRequestParams::new(uri.clone()))
                .await;
            r.map(|r| match &r.contents[0] {
                rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                    serde_json::from_str::<Value>(text).unwrap()
                }
                other => panic!("{uri}: not text: {other:?}"),
            })
        }
    };
    let memory = read(format!("mnemo://namespaces/u1/memories/{id}"))
        .await
        .unwrap();
    assert_eq!(memory["content"], "The user's dog is called Biscuit");
    let history = read(format!("mnemo://namespaces/u1/memories/{id}/history"))
        .await
        .unwrap();
    assert_eq!(history["memory"]["id"], id, "{history}");
    let resume = read("mnemo://namespaces/u1/resume".into()).await.unwrap();
    assert!(
        resume["text"].as_str().unwrap().contains("Biscuit"),
        "{resume}"
    );
    let core = read("mnemo://namespaces/u1/core".into()).await.unwrap();
    assert_eq!(core["memories"], json!([]), "nothing is Core yet: {core}");
    // Another namespace holds nothing of u1's.
    assert!(
        read(format!("mnemo://namespaces/u2/memories/{id}"))
            .await
            .is_err()
    );
    assert!(read("mnemo://namespaces/u1/nothing".into()).await.is_err());
    let listed = c.list_all_resources().await.unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r.uri == "mnemo://namespaces/default/resume"),
        "{listed:?}"
    );
    let templates = c.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "mnemo://namespaces/{namespace}/topics/{id}")
    );

    let prompts = c.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["review_topic", "save_learned", "start_session"]);
    let mut args = serde_json::Map::new();
    args.insert("namespace".into(), json!("u1"));
    let start = c
        .get_prompt(GetPromptRequestParams::new("start_session").with_arguments(args.clone()))
        .await
        .unwrap();
    let text = serde_json::to_string(&start.messages).unwrap();
    assert!(
        text.contains("Biscuit") && text.contains("remember_fact"),
        "{text}"
    );
    args.insert("topic".into(), json!("kb404"));
    let missing = c
        .get_prompt(GetPromptRequestParams::new("review_topic").with_arguments(args))
        .await;
    assert!(missing.is_err(), "an unknown topic is refused: {missing:?}");
    let done = c
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("start_session"),
            ArgumentInfo::new("namespace", "u"),
        ))
        .await
        .unwrap();
    assert_eq!(done.completion.values, ["u1"]);
}
