//! A scripted OpenAI-compatible LLM on 127.0.0.1 for `mnemo-lab simulate
//! --llm scripted`: it answers every pipeline step (triage, gate, merge,
//! reconcile, extraction, naming, distillation, review, reflection, Core
//! summary, expansion, rerank) with a plausible structured answer built from the
//! prompt, and on purpose answers some calls with malformed arguments or a
//! truncated completion — the lifecycle must retry those later and never
//! drop or half-apply anything.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Value, json};

/// Every `MALFORMED_EVERY`-th call gets tool arguments that are not JSON.
const MALFORMED_EVERY: u64 = 9;
/// Every `TRUNCATED_EVERY`-th call ends with `finish_reason = length`.
const TRUNCATED_EVERY: u64 = 13;

/// A running scripted server; it stops with the process.
pub struct ScriptedLlm {
    pub base_url: String,
    calls: Arc<AtomicU64>,
    faults: Arc<AtomicU64>,
    /// While set, every answer is malformed.
    bad: Arc<AtomicBool>,
}

impl ScriptedLlm {
    pub fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let calls = Arc::new(AtomicU64::new(0));
        let faults = Arc::new(AtomicU64::new(0));
        let bad = Arc::new(AtomicBool::new(false));
        let (c, f, b) = (calls.clone(), faults.clone(), bad.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                if serve(stream, n, b.load(Ordering::SeqCst)) {
                    f.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Ok(Self {
            base_url,
            calls,
            faults,
            bad,
        })
    }

    /// Every answer malformed from now (`true`) or as scripted again.
    pub fn go_bad(&self, bad: bool) {
        self.bad.store(bad, Ordering::SeqCst);
    }

    /// Calls answered, and how many of them on purpose badly.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.calls.load(Ordering::SeqCst),
            self.faults.load(Ordering::SeqCst),
        )
    }
}

/// Answers one request (one per connection); returns whether it was a fault.
fn serve(stream: TcpStream, n: u64, bad: bool) -> bool {
    let mut reader = BufReader::new(&stream);
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return false;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (reply, fault) = answer(&request, if bad { MALFORMED_EVERY } else { n });
    let text = reply.to_string();
    let mut out = &stream;
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    fault
}

fn answer(request: &Value, n: u64) -> (Value, bool) {
    let tool = request["tools"][0]["function"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let prompt = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let (arguments, fault, finish) = if n.is_multiple_of(TRUNCATED_EVERY) {
        (r#"{"partial": "#.to_string(), true, "length")
    } else if n.is_multiple_of(MALFORMED_EVERY) {
        (r#"{"decisions": [{"id": "#.to_string(), true, "tool_calls")
    } else {
        (arguments(&tool, prompt).to_string(), false, "tool_calls")
    };
    let message = if tool.is_empty() {
        json!({ "role": "assistant", "content": arguments })
    } else {
        json!({ "role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{n}"), "type": "function",
            "function": { "name": tool, "arguments": arguments }
        }]})
    };
    (
        json!({
            "id": format!("sim-{n}"),
            "model": "scripted",
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
            "usage": { "prompt_tokens": prompt.len() / 4, "completion_tokens": 20 }
        }),
        fault,
    )
}

/// The short ids `[xxxxxxxx]` that open the prompt's memory lines, with the line.
fn listed(prompt: &str) -> Vec<(String, String)> {
    prompt
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('[')?;
            let (id, text) = rest.split_once(']')?;
            Some((id.to_string(), text.to_string()))
        })
        .collect()
}

fn after<'a>(prompt: &'a str, label: &str) -> &'a str {
    prompt
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_default()
        .trim()
}

/// A well-formed answer for each step, built from what the prompt shows.
fn arguments(tool: &str, prompt: &str) -> Value {
    let specific =
        |text: &str| text.chars().any(|c| c.is_ascii_digit()) || text.contains("name is");
    match tool {
        "triage_decisions" => {
            json!({ "decisions": listed(prompt).into_iter().map(|(id, text)| json!({
            "id": id,
            "decision": if specific(&text) { "promote" } else { "keep" },
            "reason": "scripted"
        })).collect::<Vec<_>>() })
        }
        "gate_decisions" => {
            json!({ "decisions": listed(prompt).into_iter().map(|(id, text)| json!({
            "id": id,
            "decision": if text.contains("name is") || text.contains("born in") { "approve" } else { "reject" },
            "kind": "semantic",
            "reason": "scripted"
        })).collect::<Vec<_>>() })
        }
        "merge_entries" => json!({
            "merged": format!("{}; {}", after(prompt, "Entry A:"), after(prompt, "Entry B:"))
        }),
        "reconcile_entries" => {
            let newer = after(prompt, "Newer:");
            let older = prompt
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Older (")
                        .and_then(|r| r.split_once("): "))
                        .map(|(_, t)| t)
                })
                .unwrap_or_default();
            json!({ "decision": "update", "merged_content": format!("{newer} (earlier: {older})") })
        }
        "save_facts" => {
            let facts: Vec<Value> = prompt
                .lines()
                .filter_map(|l| {
                    let (i, rest) = l.split_once(". ")?;
                    let i: usize = i.trim().parse().ok()?;
                    let text = rest.strip_prefix("user: ")?;
                    (text.split_whitespace().count() >= 4)
                        .then(|| json!({ "content": text, "turns": [i], "kind": "semantic" }))
                })
                .collect();
            json!({ "facts": facts })
        }
        "name_topics" => {
            let mut names = Vec::new();
            let mut lines = prompt.lines().peekable();
            while let Some(l) = lines.next() {
                if let Some(id) = l.strip_prefix("Cluster ").and_then(|r| r.strip_suffix(':')) {
                    let sample = lines
                        .peek()
                        .map(|s| s.trim().trim_start_matches("- "))
                        .unwrap_or("topic");
                    let name: Vec<&str> = sample.split_whitespace().take(3).collect();
                    names.push(json!({ "id": id, "name": name.join(" ") }));
                }
            }
            json!({ "names": names })
        }
        "save_snapshot" => {
            json!({ "snapshot": "Project status: work continues as discussed in the last sessions." })
        }
        "save_summary" => json!({
            "summary": prompt
                .lines()
                .skip(1)
                .take(20)
                .map(|l| l.trim_start_matches("- "))
                .collect::<Vec<_>>()
                .join("; ")
        }),
        "save_reflection" => {
            json!({ "reflection": "This week the user shared personal facts and corrected a few of them." })
        }
        "audit_operations" => json!({ "operations": [] }),
        "search_phrases" => json!({ "phrases": [] }),
        "rank_candidates" => json!({ "order": [] }),
        _ => json!({}),
    }
}
