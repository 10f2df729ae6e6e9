//! The shared scenarios (`tests/scenarios/hosts.json`) on the native host:
//! each step's operation through the real component over a real SQLite
//! file, each expectation checked as the JavaScript host's runner
//! (`host/js/test/support/scenarios.js`) checks it. Both hosts run the same
//! core; the file is what proves they answer alike.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use common::llm_server::{Reply, Scripted, tool_reply};
use mnemo_core::model::*;
use mnemo_host::Mnemo;
use mnemo_host::clock::HostClock;
use mnemo_host::runtime::CallError;
use serde_json::Value;

fn scenarios() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/scenarios/hosts.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The error kinds as the WIT names them (the JavaScript host's `kind`).
fn kind(e: &CallError) -> String {
    match e {
        CallError::Core(c) => c.code().replace('_', "-"),
        CallError::Trap(_) => "trap".into(),
    }
}

struct Run<'a> {
    m: Mnemo,
    dir: &'a std::path::Path,
    config: mnemo_host::Config,
    saved: HashMap<String, String>,
    opened: usize,
}

/// Argument `k` of a step, a `$name` resolved to the id saved under it.
fn arg(saved: &HashMap<String, String>, a: &Value, k: &str) -> Option<String> {
    let v = a[k].as_str()?;
    Some(match v.strip_prefix('$') {
        Some(name) => saved[name].clone(),
        None => v.to_string(),
    })
}

fn strings(a: &Value, k: &str) -> Vec<String> {
    a[k].as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

impl Run<'_> {
    /// The step's operation; its output as JSON in the engine's shape.
    fn perform(&mut self, op: &str, a: &Value) -> Result<Value, CallError> {
        if op == "export_import" {
            let mut lines = Vec::new();
            mnemo_host::transfer::export(&self.m, &mut lines, None, false).unwrap();
            self.opened += 1;
            let mut config = self.config.clone();
            config.db_path = self.dir.join(format!("imported-{}.db", self.opened));
            let mut fresh = Mnemo::open(&config).unwrap();
            let counts =
                mnemo_host::transfer::import(&mut fresh, lines.as_slice(), |_, _| {}).unwrap();
            self.m = fresh;
            return Ok(serde_json::json!({ "created": counts.created }));
        }
        let saved = &self.saved;
        let get = |k: &str| arg(saved, a, k);
        let ns = get("namespace").unwrap_or_else(|| "default".into());
        let m = &mut self.m;
        Ok(match op {
            "remember" => to_json(&m.remember(RememberRequest {
                namespace: ns,
                content: get("content").unwrap_or_default(),
                importance: a["importance"].as_f64().map(|x| x as f32),
                ..Default::default()
            })?),
            "ingest" => to_json(&m.ingest(Turn {
                namespace: ns,
                session_id: get("session_id").unwrap_or_default(),
                role: get("role").unwrap_or_default(),
                content: get("content").unwrap_or_default(),
                event_time: None,
                attributes: None,
            })?),
            "recall" => {
                m.backfill_all(64, |_| {}).unwrap();
                to_json(&m.recall(RecallRequest {
                    namespace: ns,
                    query: get("query").unwrap_or_default(),
                    ..Default::default()
                })?)
            }
            "delete" => {
                let (id, reason) = (get("id").unwrap(), get("reason").unwrap());
                to_json(&m.delete(&ns, &id, &reason)?)
            }
            "restore" => to_json(&m.restore(&ns, &get("id").unwrap())?),
            "list" => to_json(&m.list(ListRequest {
                namespace: ns,
                deleted: a["deleted"].as_bool().unwrap_or(false),
                limit: 50,
                ..Default::default()
            })?),
            "stats" => to_json(&m.stats(Some(&ns))?),
            "consolidate" => to_json(&m.consolidate(ConsolidateRequest {
                namespace: get("namespace"),
                session_idle_minutes: a["session_idle_minutes"].as_u64().map(|x| x as u32),
                ..Default::default()
            })?),
            "query_facts" => to_json(&m.query_facts(FactQuery {
                namespaces: strings(a, "namespaces"),
                subject: get("subject"),
                limit: 50,
                ..Default::default()
            })?),
            other => panic!("unknown op {other}"),
        })
    }

    fn check(&self, where_: &str, e: &Value, out: &Value) {
        let id = |name: &Value| self.saved[name.as_str().unwrap()].clone();
        let memory = if out["memory"].is_object() {
            &out["memory"]
        } else {
            out
        };
        let hits: Vec<&str> = out["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| h["id"].as_str().unwrap())
            .collect();
        for (k, want) in e.as_object().unwrap() {
            let ok = match k.as_str() {
                "created" => out["created"] == *want,
                "dedup_reason" => out["dedup_reason"] == *want,
                "same_as" => out["memory"]["id"] == id(want),
                "repetition_count" => out["memory"]["repetition_count"] == *want,
                "layer" => memory["layer"] == *want,
                "deleted" => memory["valid_until"].is_null() != want.as_bool().unwrap(),
                "invalid_reason" => memory["invalid_reason"] == *want,
                "first" => hits.first().copied() == Some(id(want).as_str()),
                "absent" => !hits.contains(&id(want).as_str()),
                "count" => hits.len() as u64 == want.as_u64().unwrap(),
                "first_contains" => out["hits"][0]["content"]
                    .as_str()
                    .is_some_and(|c| c.contains(want.as_str().unwrap())),
                "contains" => want
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|n| out.as_array().unwrap().iter().any(|m| m["id"] == id(n))),
                "active" => out["active"] == *want,
                "deleted_count" => out["deleted"] == *want,
                "facts_added_at_least" => out["facts_added"].as_u64() >= want.as_u64(),
                "sessions" => out["sessions"] == *want,
                "objects" => {
                    let objects: Vec<&Value> = out
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|f| &f["object"])
                        .collect();
                    objects == want.as_array().unwrap().iter().collect::<Vec<_>>()
                }
                "created_at_least" => out["created"].as_u64() >= want.as_u64(),
                "error" => false,
                other => panic!("{where_}: unknown expectation {other}"),
            };
            assert!(ok, "{where_}: expected {k} = {want}, got {out:#}");
        }
    }
}

/// What an engine call returned, as JSON in the engine's shape.
fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

fn run(scenario: &Value, llm: &Scripted, clock_at: i64) {
    let name = scenario["name"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.clock = HostClock::driven(Arc::new(AtomicI64::new(clock_at)));
    if scenario["llm"].as_bool().unwrap_or(false) {
        config.llm = common::scripted_llm(&format!("{}/v1", llm.base));
    }
    let mut run = Run {
        m: Mnemo::open(&config).unwrap(),
        dir: dir.path(),
        config,
        saved: HashMap::new(),
        opened: 0,
    };
    for (i, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
        let op = step["op"].as_str().unwrap();
        let where_ = format!("{name}, step {} ({op})", i + 1);
        let expect = &step["expect"];
        match run.perform(op, &step["args"]) {
            Err(e) => assert_eq!(
                Some(kind(&e).as_str()),
                expect["error"].as_str(),
                "{where_}: {e}"
            ),
            Ok(out) => {
                assert!(
                    expect["error"].is_null(),
                    "{where_}: expected an error, got {out}"
                );
                if let Some(save) = step["save"].as_str() {
                    let id = out["memory"]["id"].as_str().unwrap().to_string();
                    run.saved.insert(save.to_string(), id);
                }
                if expect.is_object() {
                    run.check(&where_, expect, &out);
                }
            }
        }
    }
}

#[test]
fn the_shared_scenarios_pass_on_the_native_host() {
    let all = scenarios();
    let script = all["llm"].clone();
    let llm = Scripted::start();
    llm.respond_with(move |req| {
        let tool = req.body["tool_choice"]["function"]["name"]
            .as_str()
            .or_else(|| req.body["tools"][0]["function"]["name"].as_str());
        match tool.and_then(|t| script.get(t).map(|args| (t, args))) {
            Some((t, args)) => tool_reply(t, args.clone()),
            None => Reply::json(
                400,
                serde_json::json!({"error": {"message": "nothing scripted"}}),
            ),
        }
    });
    let clock_at = all["clock"].as_i64().unwrap();
    let scenarios = all["scenarios"].as_array().unwrap();
    assert!(scenarios.len() >= 7);
    for s in scenarios {
        run(s, &llm, clock_at);
    }
}
