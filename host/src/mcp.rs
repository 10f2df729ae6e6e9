//! `mnemo mcp`: the Model Context Protocol over stdio (newline-delimited
//! JSON-RPC 2.0), exposing seed 003's agent tools and recall. Tool failures
//! are tool results with `isError`; protocol failures are JSON-RPC errors;
//! neither stops the server.

use std::io::{BufRead, Write};

use mnemo_core::model::*;
use mnemo_host::{Config, Mnemo};
use serde_json::{Value, json};

const PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

fn tools() -> Value {
    let ns = json!({"type": "string", "description": "Namespace (default: `default`)."});
    json!([
        {"name": "search_memory", "description": "Hybrid search over remembered facts and past dialogue. The main retrieval tool.",
         "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                         "namespace": ns}, "required": ["query"]}},
        {"name": "recall", "description": "Recall memories with filters (layers, kinds, time range, min_score, token_budget, sort, dry), tags as a soft boost, optional LLM query expansion and rerank, and a score explanation per hit.",
         "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "namespace": ns,
                         "layers": {"type": "array", "items": {"enum": ["buffer", "working", "core"]}},
                         "kinds": {"type": "array", "items": {"enum": ["episodic", "semantic", "procedural"]}},
                         "tags": {"type": "array", "items": {"type": "string"}}, "since": {"type": "integer"}, "until": {"type": "integer"},
                         "min_score": {"type": "number"}, "token_budget": {"type": "integer"}, "sort": {"enum": ["score", "recent", "accessed"]},
                         "dry": {"type": "boolean"}, "include_episodes": {"type": "boolean"},
                         "expand": {"type": "boolean"}, "rerank": {"type": "boolean"},
                         "relevance": {"enum": ["blend", "semantic"]}}, "required": ["query"]}},
        {"name": "remember_fact", "description": "Explicitly save a fact. A restatement of a known fact reinforces it instead of duplicating it.",
         "inputSchema": {"type": "object", "properties": {"content": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                         "kind": {"enum": ["episodic", "semantic", "procedural"]}, "namespace": ns}, "required": ["content"]}},
        {"name": "correct_fact", "description": "Replace a fact with a corrected one: the old one is soft-deleted and linked to the new one.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "content": {"type": "string"}, "namespace": ns}, "required": ["id", "content"]}},
        {"name": "confirm_fact", "description": "Confirm a fact: it is protected from decay for good.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "namespace": ns}, "required": ["id"]}},
        {"name": "memory_stats", "description": "Counts by layer and kind, episodes, entities, the latest record time.",
         "inputSchema": {"type": "object", "properties": {"namespace": ns}}},
        {"name": "get_entity_info", "description": "Everything about a person, place, organisation or project: its profile and linked memories.",
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "namespace": ns}, "required": ["name"]}},
        {"name": "ingest_turn", "description": "Store one dialogue turn (no LLM, no blocking embedding).",
         "inputSchema": {"type": "object", "properties": {"session_id": {"type": "string"}, "role": {"type": "string"}, "content": {"type": "string"},
                         "namespace": ns}, "required": ["session_id", "role", "content"]}},
        {"name": "resume", "description": "Session-recovery context: Core memories, what changed recently, the topic index and the triggers. Call at the start of a session.",
         "inputSchema": {"type": "object", "properties": {"hours": {"type": "integer", "description": "The Recent window (default 24)"}, "context": {"type": "string", "description": "What the session is about: Core and Recent keep what is relevant to it"}, "namespace": ns}}},
        {"name": "topic", "description": "Drill into topics of the resume index (kb1, kb2, ...): their names and memories.",
         "inputSchema": {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}, "namespace": ns}, "required": ["ids"]}},
        {"name": "context", "description": "The block of relevant earlier facts to read before answering a prompt (seed 003's context injection).",
         "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}, "session_id": {"type": "string"}, "limit": {"type": "integer"}, "namespace": ns}, "required": ["prompt"]}},
        {"name": "forget", "description": "Move a memory to the trash (restorable), with a reason.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "reason": {"type": "string"}, "namespace": ns}, "required": ["id"]}},
        {"name": "restore", "description": "Bring a memory back from the trash.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "namespace": ns}, "required": ["id"]}},
        {"name": "history", "description": "A memory's earlier states (edits, merges, reverts), oldest first.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "namespace": ns}, "required": ["id"]}},
        {"name": "consolidate", "description": "Run one lifecycle cycle (dry: report what it would do, write nothing).",
         "inputSchema": {"type": "object", "properties": {"dry": {"type": "boolean"}, "namespace": ns}}},
        {"name": "edit_memory", "description": "Change a memory's text, tags or importance; the earlier state is kept as a version.",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "content": {"type": "string"},
                         "tags": {"type": "array", "items": {"type": "string"}}, "importance": {"type": "number"}, "namespace": ns}, "required": ["id"]}},
        {"name": "revert", "description": "Put an earlier version of a memory back (see history).",
         "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "version": {"type": "integer"}, "namespace": ns}, "required": ["id", "version"]}},
        {"name": "add_fact", "description": "Add a subject–predicate–object fact; exclusive: the predicate holds one value, older ones are superseded.",
         "inputSchema": {"type": "object", "properties": {"subject": {"type": "string"}, "predicate": {"type": "string"}, "object": {"type": "string"},
                         "exclusive": {"type": "boolean"}, "namespace": ns}, "required": ["subject", "predicate", "object"]}},
        {"name": "query_facts", "description": "Current facts about an entity (as subject or object), or by subject/predicate.",
         "inputSchema": {"type": "object", "properties": {"entity": {"type": "string"}, "subject": {"type": "string"}, "predicate": {"type": "string"},
                         "history": {"type": "boolean"}, "namespace": ns}}},
        {"name": "fact_graph", "description": "The facts within one or two hops of an entity.",
         "inputSchema": {"type": "object", "properties": {"entity": {"type": "string"}, "hops": {"type": "integer"}, "namespace": ns}, "required": ["entity"]}},
        {"name": "sessions", "description": "Dialogue sessions, most recently active first, and whether each is consolidated.",
         "inputSchema": {"type": "object", "properties": {"pending": {"type": "boolean"}, "limit": {"type": "integer"}, "namespace": ns}}},
        {"name": "review", "description": "The LLM review of Working and Core under its rules (dry: proposals only). Needs an LLM.",
         "inputSchema": {"type": "object", "properties": {"dry": {"type": "boolean"}, "namespace": ns}}},
        {"name": "reflect", "description": "Write the weekly reflection now (force: even if one is less than six days old).",
         "inputSchema": {"type": "object", "properties": {"force": {"type": "boolean"}, "namespace": ns}}}
    ])
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args[key]
        .as_str()
        .ok_or_else(|| format!("`{key}` (a string) is required"))
}

fn ns(args: &Value) -> String {
    args["namespace"].as_str().unwrap_or("default").to_string()
}

fn hits(r: &RecallResponse) -> Value {
    json!(r.hits.iter().map(|h| json!({
        "id": h.item.id(), "type": match h.item { Item::Memory(_) => "memory", Item::Episode(_) => "episode" },
        "content": h.item.content(), "score": h.score,
    })).collect::<Vec<_>>())
}

/// Runs one tool; `Err` is a tool error shown to the model.
fn call_tool(m: &mut Mnemo, name: &str, args: &Value) -> Result<Value, String> {
    let e = |err: mnemo_host::runtime::CallError| err.to_string();
    match name {
        "search_memory" => {
            let limit = args["limit"].as_u64().unwrap_or(8).min(50) as u32;
            let r = m
                .recall(RecallRequest {
                    query: arg(args, "query")?.into(),
                    namespace: ns(args),
                    limit,
                    include_episodes: true,
                    ..Default::default()
                })
                .map_err(e)?;
            Ok(json!({ "hits": hits(&r), "warnings": r.warnings }))
        }
        "recall" => {
            let mut req: RecallRequest = serde_json::from_value(args.clone())
                .map_err(|err| format!("bad arguments: {err}"))?;
            req.namespace = ns(args);
            Ok(serde_json::to_value(m.recall(req).map_err(e)?).unwrap_or_default())
        }
        "remember_fact" => {
            let tags = args["tags"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let kind = match args["kind"].as_str() {
                Some(k) => Some(k.parse::<Kind>().map_err(|err| err.to_string())?),
                None => None,
            };
            let out = m
                .remember(RememberRequest {
                    namespace: ns(args),
                    content: arg(args, "content")?.into(),
                    tags,
                    kind,
                    source: Some("mcp".into()),
                    ..Default::default()
                })
                .map_err(e)?;
            Ok(
                json!({ "id": out.memory.id, "created": out.created, "reinforced": !out.created, "layer": out.memory.layer }),
            )
        }
        "correct_fact" => {
            let new = m
                .correct(&ns(args), arg(args, "id")?, arg(args, "content")?)
                .map_err(e)?;
            Ok(json!({ "id": new.id, "supersedes": new.supersedes }))
        }
        "confirm_fact" => {
            let mem = m.confirm(&ns(args), arg(args, "id")?).map_err(e)?;
            Ok(json!({ "id": mem.id, "decay_rate": mem.decay_rate, "confidence": mem.confidence }))
        }
        "memory_stats" => {
            let namespace = args["namespace"].as_str();
            Ok(serde_json::to_value(m.stats(namespace).map_err(e)?).unwrap_or_default())
        }
        "get_entity_info" => {
            let profiles = m
                .entity_info(&ns(args), arg(args, "name")?, 20)
                .map_err(e)?;
            if profiles.is_empty() {
                return Err(format!("no entity named `{}`", arg(args, "name")?));
            }
            Ok(serde_json::to_value(profiles).unwrap_or_default())
        }
        "resume" => {
            let hours = args["hours"].as_u64().unwrap_or(0).min(u64::from(u32::MAX)) as u32;
            let r = m
                .resume(ResumeRequest {
                    namespace: ns(args),
                    hours,
                    context: args["context"].as_str().map(String::from),
                })
                .map_err(e)?;
            Ok(json!({ "text": r.text, "topics": r.topics, "triggers": r.triggers }))
        }
        "topic" => {
            let ids: Vec<String> = args["ids"]
                .as_array()
                .ok_or("`ids` (a list of topic ids) is required")?
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            let topics = m.topics(&ns(args), &ids).map_err(e)?;
            Ok(serde_json::to_value(topics).unwrap_or_default())
        }
        "ingest_turn" => {
            let out = m
                .ingest(Turn {
                    namespace: ns(args),
                    session_id: arg(args, "session_id")?.into(),
                    role: arg(args, "role")?.into(),
                    content: arg(args, "content")?.into(),
                    ..Default::default()
                })
                .map_err(e)?;
            Ok(json!({
                "id": out.episode.id, "namespace": out.episode.namespace,
                "new_session": out.new_session, "pending_sessions": out.pending_sessions,
            }))
        }
        "context" => {
            let limit = args["limit"].as_u64().unwrap_or(8).min(50) as u32;
            let b = m
                .context(
                    &ns(args),
                    arg(args, "prompt")?,
                    args["session_id"].as_str(),
                    limit,
                )
                .map_err(e)?;
            Ok(
                json!({ "text": b.text, "ids": b.memories.iter().map(|x| x.id.clone()).collect::<Vec<_>>() }),
            )
        }
        "forget" => {
            let reason = args["reason"].as_str().unwrap_or("forgotten via MCP");
            let mem = m.delete(&ns(args), arg(args, "id")?, reason).map_err(e)?;
            Ok(json!({ "id": mem.id, "in_trash": true, "reason": mem.invalid_reason }))
        }
        "restore" => {
            let mem = m.restore(&ns(args), arg(args, "id")?).map_err(e)?;
            Ok(json!({ "id": mem.id, "restored": true }))
        }
        "history" => {
            let versions = m.history(&ns(args), arg(args, "id")?).map_err(e)?;
            Ok(json!({ "versions": versions }))
        }
        "consolidate" => {
            let req = ConsolidateRequest {
                namespace: args["namespace"].as_str().map(String::from),
                dry: args["dry"].as_bool().unwrap_or(false),
                ..Default::default()
            };
            let r = m.consolidate_as_configured(req).map_err(e)?;
            Ok(json!({
                "epoch": r.epoch, "dry": r.dry, "actions": r.actions.len(), "sessions": r.sessions.len(),
                "facts_added": r.facts_added, "topics": r.topics, "warnings": r.warnings,
            }))
        }
        "edit_memory" => {
            let patch = MemoryPatch {
                content: args["content"].as_str().map(String::from),
                tags: args["tags"].as_array().map(|t| {
                    t.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                }),
                importance: args["importance"].as_f64().map(|x| x as f32),
                ..Default::default()
            };
            let mem = m.update(&ns(args), arg(args, "id")?, patch).map_err(e)?;
            Ok(
                json!({ "id": mem.id, "content": mem.content, "tags": mem.tags, "importance": mem.importance }),
            )
        }
        "revert" => {
            let version = args["version"]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or("`version` (a number from history) is required")?;
            let mem = m.revert(&ns(args), arg(args, "id")?, version).map_err(e)?;
            Ok(json!({ "id": mem.id, "content": mem.content }))
        }
        "add_fact" => {
            let out = m
                .add_fact(FactInput {
                    namespace: ns(args),
                    subject: arg(args, "subject")?.into(),
                    predicate: arg(args, "predicate")?.into(),
                    object: arg(args, "object")?.into(),
                    confidence: None,
                    memory_id: None,
                    exclusive: args["exclusive"].as_bool().unwrap_or(false),
                })
                .map_err(e)?;
            Ok(serde_json::to_value(out).unwrap_or_default())
        }
        "query_facts" => {
            let facts = m
                .query_facts(FactQuery {
                    namespaces: vec![ns(args)],
                    entity: args["entity"].as_str().map(String::from),
                    subject: args["subject"].as_str().map(String::from),
                    predicate: args["predicate"].as_str().map(String::from),
                    include_invalid: args["history"].as_bool().unwrap_or(false),
                    limit: 100,
                    ..Default::default()
                })
                .map_err(e)?;
            Ok(json!({ "facts": facts }))
        }
        "fact_graph" => {
            let hops = args["hops"].as_u64().unwrap_or(2).min(2) as u32;
            let facts = m
                .fact_graph(&ns(args), arg(args, "entity")?, hops)
                .map_err(e)?;
            Ok(json!({ "facts": facts }))
        }
        "sessions" => {
            let limit = args["limit"].as_u64().unwrap_or(20).min(500) as u32;
            let pending = args["pending"].as_bool().unwrap_or(false);
            let list = m
                .ports()
                .store
                .sessions(&ns(args), pending, limit)
                .map_err(|err| format!("{err:#}"))?;
            Ok(json!({ "sessions": list }))
        }
        "review" => {
            let dry = args["dry"].as_bool().unwrap_or(true);
            let r = m.review(args["namespace"].as_str(), dry).map_err(e)?;
            Ok(serde_json::to_value(r).unwrap_or_default())
        }
        "reflect" => {
            let force = args["force"].as_bool().unwrap_or(false);
            let r = m.reflect(&ns(args), force).map_err(e)?;
            Ok(
                json!({ "written": r.memory.as_ref().map(|x| x.content.clone()), "skipped": r.skipped }),
            )
        }
        other => Err(format!("unknown tool `{other}`")),
    }
}

/// Tools that write: after one, rows stored without vectors get them and
/// the sessions a new turn left open are consolidated — after the reply.
fn writes(tool: &str) -> bool {
    matches!(
        tool,
        "remember_fact"
            | "correct_fact"
            | "confirm_fact"
            | "ingest_turn"
            | "forget"
            | "restore"
            | "consolidate"
            | "edit_memory"
            | "revert"
            | "add_fact"
            | "review"
            | "reflect"
    )
}

fn response(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

/// Handles one message; `None` for notifications.
fn handle(m: &mut Mnemo, msg: &Value) -> Option<Value> {
    let id = msg.get("id").cloned();
    let method = msg["method"].as_str().unwrap_or_default();
    let params = &msg["params"];
    // Notifications (initialized, cancelled) have no id and need no answer.
    let id = id?;
    Some(match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = if PROTOCOL_VERSIONS.contains(&asked) {
                asked
            } else {
                PROTOCOL_VERSIONS[0]
            };
            response(
                &id,
                json!({
                    "protocolVersion": version,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": { "name": "mnemo", "version": env!("CARGO_PKG_VERSION") },
                    "instructions": "Long-term memory. Use search_memory before answering questions about the user or earlier sessions; remember_fact for durable facts."
                }),
            )
        }
        "ping" => response(&id, json!({})),
        "tools/list" => response(&id, json!({ "tools": tools() })),
        "tools/call" => {
            let Some(name) = params["name"].as_str() else {
                return Some(error(&id, -32602, "tools/call needs `name`"));
            };
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            match call_tool(m, name, &args) {
                Ok(mut v) => response(&id, {
                    mnemo_host::server::json::tidy(&mut v);
                    json!({ "content": [{ "type": "text", "text": v.to_string() }], "structuredContent": v, "isError": false })
                }),
                Err(msg) => response(
                    &id,
                    json!({ "content": [{ "type": "text", "text": msg }], "isError": true }),
                ),
            }
        }
        other => error(&id, -32601, format!("method `{other}` not found")),
    })
}

/// What follows a write, after its reply went out: the embedding backfill,
/// and seed 003's session-switch trigger when a turn left sessions open.
/// Failures are logged (stderr), never swallowed.
fn after_write(m: &mut Mnemo, reply: Option<&Value>) {
    if let Err(e) = m.backfill_vectors(64) {
        tracing::warn!(error = %format!("{e:#}"), "embedding backfill failed; the next write retries");
    }
    let result = reply.map(|r| &r["result"]["structuredContent"]);
    let pending: Vec<String> = result
        .and_then(|r| r["pending_sessions"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let (false, Some(ns)) = (
        pending.is_empty(),
        result.and_then(|r| r["namespace"].as_str()),
    ) {
        match m.consolidate_sessions(ns, &pending) {
            Ok(r) => tracing::info!(
                sessions = r.sessions.len(),
                facts = r.facts_added,
                "consolidated the sessions a new one left open"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "session consolidation failed; the nightly run retries")
            }
        }
    }
}

pub fn run(config: &Config) -> anyhow::Result<()> {
    let mut mnemo = Mnemo::open(config)?;
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let mut wrote = None;
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(msg) if msg.is_object() => {
                if msg["method"] == "tools/call" {
                    wrote = msg["params"]["name"]
                        .as_str()
                        .filter(|t| writes(t))
                        .map(String::from);
                }
                handle(&mut mnemo, &msg)
            }
            Ok(_) => Some(error(
                &Value::Null,
                -32600,
                "a request must be a JSON object",
            )),
            Err(e) => Some(error(&Value::Null, -32700, format!("parse error: {e}"))),
        };
        if let Some(r) = &reply {
            writeln!(stdout, "{r}")?;
            stdout.flush()?;
        }
        if wrote.is_some() {
            after_write(&mut mnemo, reply.as_ref());
        }
    }
    Ok(())
}
