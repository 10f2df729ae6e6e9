//! A scripted OpenAI-compatible server on 127.0.0.1 for every LLM- or
//! embedding-dependent test: it replays queued replies (or asks a responder
//! when the queue is empty) and records every request it got.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// The connection closed without an answer.
    pub fn hang_up() -> Self {
        Self {
            status: 0,
            body: String::new(),
            headers: Vec::new(),
        }
    }

    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: body.to_string(),
            headers: Vec::new(),
        }
    }
}

type Responder = Box<dyn Fn(&Recorded) -> Reply + Send>;

pub struct Scripted {
    pub base: String,
    queue: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    responder: Arc<Mutex<Option<Responder>>>,
}

impl Scripted {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let queue: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let responder: Arc<Mutex<Option<Responder>>> = Arc::default();
        let (q, r, resp) = (queue.clone(), requests.clone(), responder.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(req) = read_request(&mut stream) else {
                    continue;
                };
                r.lock().expect("lock").push(req.clone());
                let reply = q.lock().expect("lock").pop_front().unwrap_or_else(|| {
                    match &*resp.lock().expect("lock") {
                        Some(f) => f(&req),
                        None => Reply::json(500, serde_json::json!({"error": "no scripted reply"})),
                    }
                });
                if reply.status == 0 {
                    // Hang up without an answer.
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let mut head = format!(
                    "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                    reply.status,
                    reply.body.len()
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(reply.body.as_bytes());
            }
        });
        Self {
            base,
            queue,
            requests,
            responder,
        }
    }

    pub fn push(&self, reply: Reply) {
        self.queue.lock().expect("lock").push_back(reply);
    }

    pub fn respond_with(&self, f: impl Fn(&Recorded) -> Reply + Send + 'static) {
        *self.responder.lock().expect("lock") = Some(Box::new(f));
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().ok()?;
            }
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A chat-completions answer in OpenAI's shape.
pub fn chat_reply(content: &str, finish: &str) -> Reply {
    Reply::json(
        200,
        serde_json::json!({
            "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5}
        }),
    )
}

/// A chat-completions answer that calls tool `name` with `args` (structured output).
pub fn tool_reply(name: &str, args: Value) -> Reply {
    tool_reply_text(name, &args.to_string())
}

/// [`tool_reply`] with the arguments' text as given (JSON or not).
pub fn tool_reply_text(name: &str, arguments: &str) -> Reply {
    Reply::json(
        200,
        serde_json::json!({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
               "tool_calls": [{"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}]}}],
               "usage": {"prompt_tokens": 40, "completion_tokens": 20}}),
    )
}
