//! A real Postgres for the tests (issue 16): the server `MNEMO_TEST_POSTGRES`
//! names (`.ci/run` starts one with `scripts/postgres`), else one this helper
//! starts under `target/` with the same script. Each caller gets a fresh
//! database on it. A test that needs Postgres and cannot have it fails; it
//! never skips.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's admin URL (its `postgres` database).
pub fn server() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("MNEMO_TEST_POSTGRES") {
            return url;
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("postgres");
        let out = std::process::Command::new(root.join("scripts/postgres"))
            .arg("start")
            .arg(&dir)
            .arg("55439")
            .output()
            .expect("running scripts/postgres");
        assert!(
            out.status.success(),
            "Postgres is needed and could not be started (scripts/postgres start): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
    .clone()
}

/// A new, empty database on the test server; its URL.
pub fn fresh_database() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let admin = server();
    let name = format!(
        "mnemo_test_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    );
    let mut client = postgres::Client::connect(&admin, postgres::NoTls)
        .expect("connecting to the test Postgres");
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("creating a test database");
    let (base, _) = admin
        .rsplit_once('/')
        .expect("the test Postgres URL names a database");
    format!("{base}/{name}")
}
