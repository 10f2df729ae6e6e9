//! A `mnemo serve` child process on 127.0.0.1 (hash embedder, a temporary
//! database) and JSON requests to it.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// Only the maintenance a test asks for: every scheduled task off.
#[allow(dead_code)]
pub const NO_CRON: [(&str, &str); 5] = [
    ("MNEMO_CRON_INTERVAL", "off"),
    ("MNEMO_CRON_CONSOLIDATE", "off"),
    ("MNEMO_CRON_ENRICH", "off"),
    ("MNEMO_CRON_FADE", "off"),
    ("MNEMO_CRON_REFLECT", "off"),
];

/// A server on a scripted LLM at `url`: the `level`, no retries, no
/// scheduled task, then `extra`.
#[allow(dead_code)]
pub fn llm_env<'a>(
    level: &'a str,
    url: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("MNEMO_LLM_LEVEL", level),
        ("MNEMO_LLM_URL", url),
        ("MNEMO_LLM_RETRIES", "0"),
    ];
    env.extend(NO_CRON);
    env.extend_from_slice(extra);
    env
}

pub struct Server {
    child: Child,
    pub base: String,
    dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The folder of its database (`m.db`).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.as_ref().unwrap().path()
    }

    /// kill -9 (SIGKILL: no shutdown, no flush) and hand back its folder.
    pub fn crash(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().unwrap()
    }
}

pub fn start(api_key: Option<&str>) -> Server {
    start_in(tempfile::tempdir().unwrap(), api_key)
}

/// A server on the database `m.db` in `dir` (which may hold one already).
pub fn start_in(dir: tempfile::TempDir, api_key: Option<&str>) -> Server {
    start_with(dir, api_key, &[])
}

/// The same, with more settings in its environment.
pub fn start_with(dir: tempfile::TempDir, api_key: Option<&str>, env: &[(&str, &str)]) -> Server {
    let db = super::database_in(dir.path(), "m.db");
    start_on(dir, &db, api_key, env)
}

/// A server on the database `db` (a file, or a `postgres://` URL), with
/// `dir` as its data folder.
pub fn start_on(
    dir: tempfile::TempDir,
    db: &str,
    api_key: Option<&str>,
    env: &[(&str, &str)],
) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    cmd.envs(env.iter().copied());
    cmd.arg("--db").arg(db).args(["serve", "--port", "0"]);
    cmd.env("MNEMO_DATA_DIR", dir.path())
        .env_remove("MNEMO_API_KEY");
    // One compiled core for every test (a fresh folder compiles it: ~1.5 s).
    if !env.iter().any(|(k, _)| *k == "MNEMO_CACHE_DIR") {
        cmd.env("MNEMO_CACHE_DIR", super::cache_dir());
    }
    // The hash embedder unless the test names another.
    if !env.iter().any(|(k, _)| *k == "MNEMO_EMBEDDER") {
        cmd.env("MNEMO_EMBEDDER", "hash");
    }
    if let Some(k) = api_key {
        cmd.env("MNEMO_API_KEY", k);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = listening(&mut child);
    Server {
        child,
        base,
        dir: Some(dir),
    }
}

/// The base URL a spawned `mnemo serve` (stderr piped) listens on, once it
/// says so; the rest of its stderr is drained in the background.
pub fn listening(child: &mut std::process::Child) -> String {
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("server exited before listening")
            .unwrap();
        if let Some(rest) = line.strip_prefix("mnemo listening on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    base
}

/// (status, JSON body) for any request; 4xx/5xx are answers, not errors.
pub fn call(req: ureq::Request, body: Option<&str>) -> (u16, Value) {
    let (status, text) = call_text(req, body);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// (status, body text) for any request: a JSON body is sent as JSON.
pub fn call_text(req: ureq::Request, body: Option<&str>) -> (u16, String) {
    let res = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = resp.status();
    (status, resp.into_string().unwrap_or_default())
}

pub fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    call(
        ureq::post(&format!("{}{path}", s.base)),
        Some(&body.to_string()),
    )
}

/// The topics the server lists, once its topic watcher built some (a
/// bounded poll: after 60 s, none).
pub fn topics_eventually(s: &Server) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, v) = call(ureq::get(&format!("{}/topics", s.base)), None);
        let topics = v["topics"].as_array().cloned().unwrap_or_default();
        if !topics.is_empty() || std::time::Instant::now() > deadline {
            return topics;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}
