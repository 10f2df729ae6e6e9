//! `mnemo mcp` driven as an MCP client would: initialize, tools/list,
//! tools/call over the process's stdio.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    _dir: tempfile::TempDir,
}

impl Client {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .arg("--db")
            .arg(dir.path().join("m.db"))
            .arg("mcp")
            .env("MNEMO_DATA_DIR", dir.path())
            .env("MNEMO_EMBEDDER", "hash")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next: 1,
            _dir: dir,
        }
    }

    fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let reply = self.read();
        assert_eq!(reply["id"], id);
        reply
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))["result"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_mcp_client_session() {
    let mut c = Client::start();
    let init = c.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "mnemo");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    c.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());

    let list = c.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "search_memory",
        "remember_fact",
        "correct_fact",
        "confirm_fact",
        "memory_stats",
        "get_entity_info",
        "recall",
        "ingest_turn",
        "resume",
        "topic",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for t in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object");
    }

    let saved = c.tool(
        "remember_fact",
        json!({"content": "The user's sister lives in Porto", "tags": ["family"]}),
    );
    assert_eq!(saved["isError"], false);
    let id = saved["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let again = c.tool(
        "remember_fact",
        json!({"content": "The user's sister lives in Porto"}),
    );
    assert_eq!(again["structuredContent"]["reinforced"], true);

    c.tool(
        "ingest_turn",
        json!({"session_id": "s1", "role": "user", "content": "My sister sent photos from Porto"}),
    );
    let found = c.tool(
        "search_memory",
        json!({"query": "where does the sister live?"}),
    );
    let hits = found["structuredContent"]["hits"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["id"] == id.as_str() && h["type"] == "memory")
    );
    assert!(
        hits.iter().any(|h| h["type"] == "episode"),
        "search covers what was said too"
    );
    let text: Value = serde_json::from_str(found["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, found["structuredContent"]);

    let confirmed = c.tool("confirm_fact", json!({"id": id}));
    assert_eq!(confirmed["structuredContent"]["decay_rate"], 0.0);
    let corrected = c.tool(
        "correct_fact",
        json!({"id": id, "content": "The user's sister lives in Lisbon"}),
    );
    assert_eq!(corrected["structuredContent"]["supersedes"], id.as_str());
    let r = c.tool("recall", json!({"query": "sister lives", "dry": true}));
    let contents: Vec<&str> = r["structuredContent"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["The user's sister lives in Lisbon"]);

    let stats = c.tool("memory_stats", json!({}));
    assert_eq!(stats["structuredContent"]["active"], 1);
    assert_eq!(stats["structuredContent"]["deleted"], 1);
    assert_eq!(stats["structuredContent"]["episodes"], 1);

    // Tool errors are results with isError; the session goes on.
    let bad = c.tool("remember_fact", json!({"content": ""}));
    assert_eq!(bad["isError"], true);
    assert!(
        bad["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("content is empty")
    );
    assert_eq!(
        c.tool("get_entity_info", json!({"name": "nobody"}))["isError"],
        true
    );
    c.tool(
        "remember_fact",
        json!({"content": "Ask @carol for the Porto photos"}),
    );
    let carol = c.tool("get_entity_info", json!({"name": "carol"}));
    assert_eq!(carol["isError"], false, "{carol}");
    assert!(
        carol["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Ask @carol for the Porto photos"),
        "{carol}"
    );
    assert_eq!(c.tool("no_such_tool", json!({}))["isError"], true);
    // ResumeBlock reads the session-recovery context; an unknown topic is an error.
    let resume = c.tool("resume", json!({"hours": 48}));
    assert_eq!(resume["isError"], false, "{resume}");
    let text = resume["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("=== Core"), "{text}");
    assert!(text.contains("=== Recent (48h) ==="), "{text}");
    assert_eq!(c.tool("topic", json!({"ids": ["kb404"]}))["isError"], true);
    assert_eq!(c.tool("topic", json!({}))["isError"], true);
    // Protocol errors are JSON-RPC errors; the session goes on.
    c.send_raw("{not json");
    assert_eq!(c.read()["error"]["code"], -32700);
    assert_eq!(
        c.request("no/such/method", json!({}))["error"]["code"],
        -32601
    );
    assert_eq!(c.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn context_forget_restore_history_consolidate_and_the_session_trigger() {
    let mut c = Client::start();
    c.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
    );
    let saved = c.tool(
        "remember_fact",
        json!({"content": "The user's dentist is on Baker Street"}),
    );
    let id = saved["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let ctx = c.tool("context", json!({"prompt": "where is my dentist?"}));
    assert_eq!(ctx["isError"], false, "{ctx}");
    assert!(
        ctx["structuredContent"]["text"]
            .as_str()
            .unwrap()
            .contains("Baker Street"),
        "{ctx}"
    );

    let gone = c.tool("forget", json!({"id": id, "reason": "moved dentists"}));
    assert_eq!(
        gone["structuredContent"]["reason"], "moved dentists",
        "{gone}"
    );
    assert_eq!(
        c.tool("forget", json!({"id": id}))["isError"],
        true,
        "already in the trash"
    );
    assert_eq!(
        c.tool("restore", json!({"id": id}))["structuredContent"]["restored"],
        true
    );
    let h = c.tool("history", json!({"id": id}));
    assert_eq!(h["structuredContent"]["versions"], json!([]), "{h}");

    let edited = c.tool(
        "edit_memory",
        json!({"id": id, "content": "The user's dentist is on Elm Street"}),
    );
    assert_eq!(edited["isError"], false, "{edited}");
    let h = c.tool("history", json!({"id": id}));
    assert_eq!(
        h["structuredContent"]["versions"][0]["memory"]["content"],
        "The user's dentist is on Baker Street"
    );
    let back = c.tool("revert", json!({"id": id, "version": 1}));
    assert_eq!(
        back["structuredContent"]["content"], "The user's dentist is on Baker Street",
        "{back}"
    );
    assert_eq!(c.tool("revert", json!({"id": id}))["isError"], true);

    let f = c.tool(
        "add_fact",
        json!({"subject": "Ana", "predicate": "sister of", "object": "the user"}),
    );
    assert_eq!(f["isError"], false, "{f}");
    c.tool(
        "add_fact",
        json!({"subject": "Ana", "predicate": "lives in", "object": "Porto"}),
    );
    let q = c.tool("query_facts", json!({"entity": "Ana"}));
    assert_eq!(
        q["structuredContent"]["facts"].as_array().unwrap().len(),
        2,
        "{q}"
    );
    let g = c.tool("fact_graph", json!({"entity": "the user", "hops": 2}));
    assert!(
        g["structuredContent"]["facts"].as_array().unwrap().len() >= 2,
        "{g}"
    );

    let dry = c.tool("consolidate", json!({"dry": true}));
    assert_eq!(dry["structuredContent"]["dry"], true, "{dry}");

    // A turn of a new session: the one it left open is consolidated after
    // the reply, as the server does.
    for (s, text) in [("s1", "I live in Lisbon"), ("s2", "Good morning")] {
        let t = c.tool(
            "ingest_turn",
            json!({"session_id": s, "role": "user", "content": text}),
        );
        assert_eq!(t["isError"], false, "{t}");
    }
    let facts = c.tool(
        "search_memory",
        json!({"query": "where does the user live"}),
    );
    let text = facts["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("The user lives in Lisbon"), "{text}");
    let sessions = c.tool("sessions", json!({}));
    let listed = sessions["structuredContent"]["sessions"]
        .as_array()
        .unwrap();
    assert_eq!(listed.len(), 2, "{sessions}");
    let pending = c.tool("sessions", json!({"pending": true}));
    assert_eq!(
        pending["structuredContent"]["sessions"][0]["id"], "s2",
        "{pending}"
    );
    // The review needs an LLM: a tool error, said plainly.
    let review = c.tool("review", json!({}));
    assert_eq!(review["isError"], true, "{review}");
    let reflect = c.tool("reflect", json!({"force": true}));
    assert_eq!(reflect["isError"], false, "{reflect}");
}
