//! A real Postgres for the tests (issue 16): the server `MNEMO_TEST_POSTGRES`
//! names (`.ci/run` starts one with `scripts/postgres`), else one this helper
//! starts under `target/` with the same script. Each caller gets a fresh
//! database on it. A test that needs Postgres and cannot have it fails; it
//! never skips. The server may ask for TLS (`sslmode=verify-full` in CI,
//! through `scripts/postgres tls`): every connection goes through the
//! host's own connector, which reads the URL's `sslmode`.

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
        script("start", "55439", "Postgres")
    })
    .clone()
}

/// The server behind TLS and the same server in clear text: CI names both
/// (`MNEMO_TEST_POSTGRES`, a `verify-full` URL through `scripts/postgres
/// tls`, and `MNEMO_TEST_POSTGRES_PLAIN`); else this helper puts pgbouncer
/// in front of the server it started.
#[allow(dead_code)] // the lab's tests include this file too
pub fn tls_pair() -> (String, String) {
    let named = std::env::var("MNEMO_TEST_POSTGRES").ok();
    if let Some(tls) = named.as_ref().filter(|u| u.contains("sslrootcert=")) {
        let plain = std::env::var("MNEMO_TEST_POSTGRES_PLAIN")
            .expect("MNEMO_TEST_POSTGRES_PLAIN names the server behind MNEMO_TEST_POSTGRES");
        return (tls.clone(), plain);
    }
    assert!(
        named.is_none(),
        "the TLS tests need MNEMO_TEST_POSTGRES to be a server behind TLS \
         (scripts/postgres tls) and MNEMO_TEST_POSTGRES_PLAIN the server itself"
    );
    let plain = server();
    (script("tls", "55440", "TLS in front of Postgres"), plain)
}

/// `scripts/postgres COMMAND DIR PORT` on this helper's folder: its URL.
fn script(command: &str, port: &str, what: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("postgres");
    let out = std::process::Command::new(root.join("scripts/postgres"))
        .args([command, &dir.to_string_lossy(), port])
        .output()
        .expect("running scripts/postgres");
    assert!(
        out.status.success(),
        "{what} is needed and could not be started (scripts/postgres {command}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
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
    let mut client = connect(&admin);
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| drop_left_behind(&mut client));
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("creating a test database");
    with_database(&admin, &name)
}

/// Drops the test databases of test processes that have ended (each
/// process's are named after its id): a run leaves its own behind for a
/// look, and the next run on the same server sweeps them.
fn drop_left_behind(client: &mut postgres::Client) {
    let Ok(rows) = client.query(
        "SELECT datname FROM pg_database WHERE datname LIKE 'mnemo\\_test\\_%'",
        &[],
    ) else {
        return;
    };
    for row in rows {
        let name: String = row.get(0);
        let pid = name.split('_').nth(2).and_then(|p| p.parse::<u32>().ok());
        let ended = pid.is_some_and(|p| !PathBuf::from(format!("/proc/{p}")).exists());
        if ended {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// `url` naming database `name` instead, its query (`sslmode`…) kept.
pub fn with_database(url: &str, name: &str) -> String {
    let (path, query) = url
        .split_once('?')
        .map_or((url, None), |(p, q)| (p, Some(q)));
    let (base, _) = path
        .rsplit_once('/')
        .expect("the test Postgres URL names a database");
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// A connection to `url`, TLS as its `sslmode` says.
pub fn connect(url: &str) -> postgres::Client {
    mnemo_host::storage::connect_postgres(url).expect("connecting to the test Postgres")
}
