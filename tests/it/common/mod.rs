//! Helpers shared by the end-to-end tests: a database in a temporary folder,
//! one component cache for the whole test run.

#![allow(dead_code, clippy::expect_used)]

pub mod cli;
pub mod llm_server;
pub mod output;
pub mod postgres;
pub mod server;

use std::path::{Path, PathBuf};

use mnemo_core::model::*;
use mnemo_host::{Config, Mnemo};

pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// The database of the test whose folder is `dir`: the file `name` in it,
/// or with `MNEMO_TEST_BACKEND=postgres`, a fresh Postgres database, the
/// same one each time for the same folder (a restart finds its data).
pub fn database_in(dir: &Path, name: &str) -> String {
    if std::env::var("MNEMO_TEST_BACKEND").as_deref() != Ok("postgres") {
        return dir.join(name).to_string_lossy().into_owned();
    }
    let note = dir.join(format!("{name}.postgres-url"));
    if let Ok(url) = std::fs::read_to_string(&note) {
        return url;
    }
    let url = postgres::fresh_database();
    std::fs::write(&note, &url).expect("noting the test database");
    url
}

pub fn config(dir: &Path) -> Config {
    let mut c = Config::with_hash_embedder(database_in(dir, "memory.db").into(), dir.to_path_buf());
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

/// One number `sql` reads from the test's database (SQLite's names; on
/// Postgres a row's full-text entry is a column of the row itself).
pub fn count(m: &Mnemo, sql: &str) -> i64 {
    match &m.ports().store {
        mnemo_host::storage::Store::Sqlite(s) => s
            .connection()
            .query_row(sql, [], |r| r.get(0))
            .expect("count"),
        mnemo_host::storage::Store::Postgres(p) => {
            let sql = sql
                .replace("memories_fts", "memories")
                .replace("episodes_fts", "episodes");
            postgres::connect(p.url())
                .query_one(&sql, &[])
                .expect("count")
                .get(0)
        }
    }
}

/// An LLM configuration at level `auto` pointed at a scripted server's base
/// URL, with a short timeout and no retries.
pub fn scripted_llm(base: &str) -> mnemo_host::llm::LlmConfig {
    use mnemo_host::llm::{Endpoint, LlmConfig};
    LlmConfig {
        level: LlmLevel::Auto,
        default: Some(Endpoint {
            provider: "openai".into(),
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
