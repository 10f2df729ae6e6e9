//! Helpers shared by the end-to-end tests: a database in a temporary folder,
//! one component cache for the whole test run.

#![allow(dead_code, clippy::expect_used)]

pub mod cli;
pub mod llm_server;
pub mod postgres;
pub mod server;

use std::path::{Path, PathBuf};

use mnemo_core::model::*;
use mnemo_host::{Config, Mnemo};

pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

pub fn config(dir: &Path) -> Config {
    let mut c = Config::with_hash_embedder(dir.join("memory.db"), dir.to_path_buf());
    c.cache_dir = Some(cache_dir());
    c
}

pub fn open(dir: &Path) -> Mnemo {
    Mnemo::open(&config(dir)).expect("open mnemo")
}

pub fn remember(m: &mut Mnemo, ns: &str, text: &str) -> RememberOutcome {
    m.remember(RememberRequest {
        namespace: ns.into(),
        content: text.into(),
        ..Default::default()
    })
    .expect("remember")
}

pub fn recall(m: &mut Mnemo, ns: &str, q: &str) -> RecallResponse {
    m.recall(RecallRequest {
        namespace: ns.into(),
        query: q.into(),
        ..Default::default()
    })
    .expect("recall")
}

pub fn count(m: &Mnemo, sql: &str) -> i64 {
    m.ports()
        .store
        .sqlite()
        .expect("a SQLite store")
        .connection()
        .query_row(sql, [], |r| r.get(0))
        .expect("count")
}

/// An LLM configuration at level `auto` pointed at a scripted server's base
/// URL, with a short timeout and no retries.
pub fn scripted_llm(base: &str) -> mnemo_host::llm::LlmConfig {
    use mnemo_host::llm::{Endpoint, LlmConfig, Provider};
    LlmConfig {
        level: LlmLevel::Auto,
        default: Some(Endpoint {
            provider: Provider::OpenAi,
            base_url: base.to_string(),
            api_key: None,
            model: "m".into(),
        }),
        policy: mnemo_host::http::HttpPolicy {
            timeout: std::time::Duration::from_secs(5),
            retries: 0,
            backoff: std::time::Duration::from_millis(10),
        },
        ..Default::default()
    }
}
