//! The HTTP API over real HTTP on 127.0.0.1, continued: the lifecycle
//! routes, sessions, export/import between two servers, observability and
//! the typed refusals of the read routes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::server::*;
use serde_json::{Value, json};

#[test]
fn lifecycle_routes_answer_and_refuse_bad_input() {
    let s = start(None);
    let post = |path: &str, body: &str| call(ureq::post(&format!("{}{path}", s.base)), Some(body));
    let get = |path: &str| call(ureq::get(&format!("{}{path}", s.base)), None);

    for (session, text) in [
        ("s1", "I live in Oslo and I love skiing."),
        ("s2", "Hello again"),
    ] {
        let (st, _) = post(
            "/episodes",
            &json!({"session_id": session, "role": "user", "content": text}).to_string(),
        );
        assert_eq!(st, 201);
    }
    let (st, _) = post(
        "/memories",
        &json!({"content": "Deploy with the blue-green script", "tags": ["trigger:deploy"]})
            .to_string(),
    );
    assert_eq!(st, 201);

    // The switch to s2 distils s1 in the background (seed 003's trigger).
    let mut facts = Value::Null;
    for _ in 0..100 {
        facts = get("/facts?entity=The%20user").1;
        if facts["facts"].as_array().is_some_and(|f| f.len() == 2) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(facts["facts"].as_array().unwrap().len(), 2, "{facts}");

    // Consolidation: s2 is live (no newer session, not idle), so a cycle
    // leaves it open; one that closes idle sessions at once takes it. A dry
    // run first.
    let (st, dry) = post("/consolidate", r#"{"dry": true}"#);
    assert_eq!((st, dry["sessions"].clone()), (200, json!([])), "{dry}");
    let (st, dry) = post(
        "/consolidate",
        r#"{"dry": true, "session_idle_minutes": 0}"#,
    );
    assert_eq!((st, dry["dry"].as_bool()), (200, Some(true)), "{dry}");
    assert_eq!(dry["sessions"], json!(["s2"]));
    let (_, audit) = get("/audit?limit=500");
    assert!(
        !audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["target_id"] == "s2"),
        "dry writes nothing"
    );
    let (st, report) = post("/consolidate", r#"{"session_idle_minutes": 0}"#);
    assert_eq!(st, 200, "{report}");
    assert_eq!(report["sessions"], json!(["s2"]), "{report}");
    assert_eq!(report["facts_added"], 0, "{report}");

    // Facts: add (exclusive supersedes), history, graph, conflicts.
    let (st, added) = post(
        "/facts",
        r#"{"subject": "The user", "predicate": "lives in", "object": "Bergen", "exclusive": true}"#,
    );
    assert_eq!(st, 201, "{added}");
    assert_eq!(added["superseded"][0]["object"], "Oslo");
    let (_, history) = get("/facts/history?subject=The%20user&predicate=lives%20in");
    assert_eq!(history["facts"].as_array().unwrap().len(), 2);
    let (_, graph) = get("/facts/graph?entity=Bergen&hops=2");
    assert_eq!(graph["facts"].as_array().unwrap().len(), 2, "{graph}");
    let (st, conflicts) = get("/facts/conflicts");
    assert_eq!(
        (st, conflicts["conflicts"].as_array().unwrap().len()),
        (200, 0)
    );
    assert_eq!(
        post(
            "/facts",
            r#"{"subject": "", "predicate": "p", "object": "o"}"#
        )
        .0,
        400
    );
    assert_eq!(
        post("/facts", r#"{"subject": "a"}"#).0,
        422,
        "missing fields are 422"
    );
    assert_eq!(get("/facts/graph").0, 400);
    assert_eq!(get("/facts/history").0, 400);

    // Read paths.
    let (st, resume) = get("/resume?hours=12");
    assert_eq!(st, 200);
    assert!(
        resume["text"]
            .as_str()
            .unwrap()
            .contains("=== Recent (12h) ===")
    );
    assert_eq!(resume["triggers"], json!(["deploy"]));
    let (_, triggers) = get("/triggers");
    assert_eq!(triggers["triggers"][0]["name"], "deploy");
    let (_, deploy) = get("/triggers/deploy");
    assert_eq!(deploy["memories"].as_array().unwrap().len(), 1);
    // Cycles leave the trees to the server's topic watcher.
    let topics = topics_eventually(&s);
    let first = topics[0]["id"].as_str().unwrap().to_string();
    let (st, topic) = post("/topic", &json!({"ids": [first]}).to_string());
    assert_eq!(st, 200);
    assert!(
        topic[&first]["memories"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(post("/topic", r#"{"ids": []}"#).0, 400);
    assert_eq!(post("/topic", r#"{"ids": ["kb999"]}"#).0, 404);
    let (st, found) = get("/search?q=blue-green%20deploy");
    assert_eq!(st, 200);
    assert_eq!(
        found["hits"][0]["content"],
        "Deploy with the blue-green script"
    );
    let (_, recent) = get("/recent?hours=1");
    assert!(!recent["memories"].as_array().unwrap().is_empty());
    let (st, ctx) = post(
        "/context",
        r#"{"prompt": "where does the user live?", "session_id": "s2"}"#,
    );
    assert_eq!(st, 200, "{ctx}");
    assert!(
        ctx["text"]
            .as_str()
            .unwrap()
            .starts_with("## Relevant memory"),
        "{ctx}"
    );
    assert_eq!(post("/context", r#"{"session_id": "s2"}"#).0, 422);

    // Reflection: written once, then spaced.
    let (st, r) = post("/reflect", "");
    assert_eq!(st, 201, "{r}");
    let (st, r) = post("/reflect", "{}");
    assert_eq!(st, 200);
    assert!(r["skipped"].is_string());

    // The LLM review needs an LLM: with the level off it is a typed 503,
    // under its name and its round 1 spelling.
    for route in ["/review", "/audit"] {
        let (st, v) = post(route, "{}");
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (503, Some("unavailable")),
            "{route}: {v}"
        );
    }

    // Malformed bodies and unknown fields are typed 400s; nothing was lost.
    assert_eq!(post("/consolidate", "{not json").0, 400);
    assert_eq!(
        post("/consolidate", r#"{"dryrun": true}"#).0,
        422,
        "unknown fields"
    );
    let (_, stats) = get("/stats");
    assert!(stats["total"].as_u64().unwrap() >= 3);
}

#[test]
fn sessions_are_listed_read_and_consolidated() {
    let s = start(None);
    let url = |p: &str| format!("{}{p}", s.base);
    for (session, text) in [
        ("trip", "I am planning a trip to Kyoto in April."),
        ("trip", "My budget is 3000 euros."),
        ("other", "What should I cook tonight?"),
    ] {
        let (st, _) = post(
            &s,
            "/episodes",
            json!({"session_id": session, "role": "user", "content": text}),
        );
        assert_eq!(st, 201);
    }
    let (st, v) = call(ureq::get(&url("/sessions")), None);
    assert_eq!(st, 200);
    let listed: Vec<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["other", "trip"], "most recently active first");
    assert_eq!(v["sessions"][1]["turn_count"], 2);

    let (st, v) = call(ureq::get(&url("/sessions/trip")), None);
    assert_eq!(st, 200);
    let turns: Vec<&str> = v["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        turns,
        [
            "I am planning a trip to Kyoto in April.",
            "My budget is 3000 euros."
        ]
    );
    let (_, v) = call(ureq::get(&url("/sessions/trip?offset=1&limit=1")), None);
    assert_eq!(v["episodes"].as_array().unwrap().len(), 1);
    assert_eq!(call(ureq::get(&url("/sessions/nope")), None).0, 404);

    // "trip" was closed by the switch to "other" and is consolidated in the
    // background; "other" is consolidated on request.
    let (st, report) = post(&s, "/sessions/other/consolidate", json!({}));
    assert_eq!(st, 200, "{report}");
    assert_eq!(report["sessions"], json!(["other"]));
    let (_, again) = post(&s, "/sessions/other/consolidate", json!({}));
    assert_eq!(again["sessions"], json!([]), "already consolidated");
    let (st, v) = post(&s, "/sessions/nope/consolidate", json!({}));
    assert_eq!((st, v["error"]["code"].as_str()), (404, Some("not_found")));
    let mut pending = Value::Null;
    for _ in 0..100 {
        pending = call(ureq::get(&url("/sessions?pending=true")), None).1;
        if pending["sessions"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(pending["sessions"], json!([]), "{pending}");
    // Sessions are namespaced like everything else.
    let (_, v) = call(
        ureq::get(&url("/sessions")).set("X-Namespace", "elsewhere"),
        None,
    );
    assert_eq!(v["sessions"], json!([]));
    assert_eq!(
        call(
            ureq::get(&url("/sessions/trip")).set("X-Namespace", "elsewhere"),
            None
        )
        .0,
        404
    );
}

#[test]
fn export_import_over_http_between_two_servers() {
    let a = start(None);
    let b = start(None);
    for (ns, text) in [
        ("default", "The user drinks oat milk"),
        ("work", "The release train leaves on Thursdays"),
    ] {
        let (st, _) = call(
            ureq::post(&format!("{}/memories", a.base)).set("X-Namespace", ns),
            Some(&json!({"content": text, "tags": ["t"]}).to_string()),
        );
        assert_eq!(st, 201);
    }
    post(
        &a,
        "/facts",
        json!({"subject": "The user", "predicate": "drinks", "object": "oat milk"}),
    );
    let text = |r: ureq::Request| r.call().unwrap().into_string().unwrap();
    let all = text(ureq::get(&format!("{}/export", a.base)));
    let work_only = text(ureq::get(&format!("{}/export", a.base)).set("X-Namespace", "work"));
    assert!(all.contains("oat milk") && all.contains("release train"));
    assert!(!work_only.contains("oat milk") && work_only.contains("release train"));

    let import = |body: &str| call(ureq::post(&format!("{}/import", b.base)), Some(body));
    // A broken line: 400, and nothing of the dump is stored.
    let (st, v) = import(&format!("{all}{{not json\n"));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (400, Some("invalid_input")),
        "{v}"
    );
    assert_eq!(
        call(ureq::get(&format!("{}/stats", b.base)), None).1["total"],
        0
    );
    let (st, counts) = import(&all);
    assert_eq!(st, 200, "{counts}");
    let (_, again) = import(&all);
    assert_ne!(counts, again, "the second import only dedups");
    let (_, stats) = call(ureq::get(&format!("{}/stats", b.base)), None);
    assert_eq!(stats["total"], 2, "{stats}");
    let (_, facts) = call(
        ureq::get(&format!("{}/facts?entity=The%20user", b.base)),
        None,
    );
    assert_eq!(facts["facts"][0]["object"], "oat milk");
    let (_, v) = call(
        ureq::post(&format!("{}/recall", b.base)).set("X-Namespace", "work"),
        Some(r#"{"query": "release train"}"#),
    );
    assert_eq!(
        v["hits"][0]["content"],
        "The release train leaves on Thursdays"
    );
    assert_eq!(v["hits"][0]["tags"], json!(["t"]));
}

#[test]
fn observability_usage_entities_and_the_audit_log() {
    let s = start(None);
    let url = |p: &str| format!("{}{p}", s.base);
    post(
        &s,
        "/memories",
        json!({"content": "Ask @carol about the #apollo launch"}),
    );
    call(
        ureq::post(&url("/memories")).set("X-Namespace", "other"),
        Some(r#"{"content": "Unrelated note"}"#),
    );
    let (st, usage) = call(ureq::get(&url("/llm-usage")), None);
    assert_eq!(st, 200);
    assert_eq!(usage["summary"][0]["component"], "embedding", "{usage}");
    assert!(usage["latest"].as_array().is_some_and(|l| !l.is_empty()));

    let (st, v) = call(ureq::get(&url("/entities/carol")), None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["entities"][0]["memories"][0]["content"], "Ask @carol about the #apollo launch",
        "{v}"
    );
    assert_eq!(call(ureq::get(&url("/entities/nobody")), None).0, 404);

    let (_, list) = call(ureq::get(&url("/memories")), None);
    let id = list["memories"][0]["id"].as_str().unwrap().to_string();
    call(ureq::delete(&url(&format!("/memories/{id}"))), None);
    call(
        ureq::post(&url(&format!("/memories/{id}/restore"))),
        Some("{}"),
    );
    let actions = |q: &str| -> Vec<String> {
        call(ureq::get(&url(&format!("/audit{q}"))), None).1["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["action"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(actions("?action=restore"), ["restore"]);
    let decisions = call(ureq::get(&url("/decisions?action=restore")), None).1;
    assert_eq!(
        decisions["entries"][0]["action"], "restore",
        "/decisions is the same log"
    );
    assert_eq!(actions(&format!("?target={id}&limit=1")), ["restore"]);
    assert_eq!(actions("?since=99999999999999"), Vec::<String>::new());
    assert!(actions("?namespace=other").iter().all(|a| a != "delete"));
    assert_eq!(call(ureq::get(&url("/audit?limit=x")), None).0, 400);
}

#[test]
fn read_routes_refuse_bad_input_with_typed_errors() {
    let s = start(None);
    for (method, path, body, status, code) in [
        ("POST", "/recall", r#"{"query": ""}"#, 400, "invalid_input"),
        (
            "POST",
            "/recall",
            r#"{"query": "x", "layers": ["attic"]}"#,
            422,
            "invalid_request",
        ),
        (
            "POST",
            "/episodes",
            r#"{"session_id": "", "role": "user", "content": "hi"}"#,
            400,
            "invalid_input",
        ),
        (
            "POST",
            "/episodes",
            r#"{"session_id": "s", "role": "user"}"#,
            400,
            "invalid_input",
        ),
        ("GET", "/search", "", 400, "invalid_input"),
        ("GET", "/recent?hours=abc", "", 400, "invalid_request"),
        ("GET", "/resume?hours=-1", "", 400, "invalid_request"),
        ("GET", "/export?vectors=maybe", "", 400, "invalid_request"),
        ("GET", "/llm-usage?limit=x", "", 400, "invalid_request"),
        ("GET", "/topics?bogus=1", "", 400, "invalid_request"),
        ("POST", "/reflect", "{bad", 400, "malformed_json"),
        (
            "POST",
            "/topic",
            r#"{"ids": "kb1"}"#,
            422,
            "invalid_request",
        ),
        (
            "POST",
            "/import",
            "{\"kind\": \"memory\"}\n",
            400,
            "invalid_input",
        ),
    ] {
        let url = format!("{}{path}", s.base);
        let req = if method == "GET" {
            ureq::get(&url)
        } else {
            ureq::post(&url)
        };
        let (st, v) = call(req, (!body.is_empty()).then_some(body));
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (status, Some(code)),
            "{method} {path} {body}: {v}"
        );
    }
    let (st, v) = call(ureq::get(&format!("{}/stats", s.base)), None);
    assert_eq!(
        (st, v["total"].as_u64()),
        (200, Some(0)),
        "nothing was written"
    );
}
