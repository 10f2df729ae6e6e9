//! Storage over SQLite: rusqlite (bundled SQLite with FTS5) plus sqlite-vec,
//! in WAL mode. Implements the core's `Storage` port; the WIT `storage`
//! import delegates here. Blocking: call it from a dedicated thread.

pub mod ann;
mod ann_store;
mod beside;
mod dialogue;
mod exact;
mod exact_store;
mod export;
mod filter;
mod graph;
mod integrity;
mod locks;
mod memories;
mod meta;
pub mod migrations;
pub mod postgres;
mod reader;
mod rows;
mod search;
mod sqlite;
mod store;
pub mod text;
mod text_catch_up;
mod text_store;
mod usage;
mod vectors;

use std::path::Path;
use std::sync::Once;

use anyhow::Context;
use rusqlite::Connection;
use rusqlite::config::DbConfig;

pub use integrity::{DecisionFilter, Integrity};
pub use locks::Locks;
pub use postgres::lock_waits::snapshot as lock_waits;
pub use postgres::tls::connect as connect_postgres;
pub use postgres::{GraphRound, Lead, PgStore, is_postgres_url};
pub use reader::Effect;
pub(crate) use rows::content_hash;
pub use sqlite::{ANN_MIN_ROWS, SqliteStore};
pub use store::Store;
pub use usage::{Usage, UsageSummary};
pub use vectors::{META_DIMENSION, META_MODEL, VectorState};

/// Registers sqlite-vec for every connection opened afterwards.
fn register_sqlite_vec() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature of an SQLite extension
        // entry point; auto_extension only stores the pointer.
        unsafe {
            #[allow(clippy::missing_transmute_annotations)]
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
}

/// What a write to a database that cannot be written is told.
/// Every namespace that holds a memory or an episode, by a loose index
/// scan: one index seek per namespace (`min(namespace) > the last`, on the
/// indexes that lead with it), not a read of every row, so listing them
/// stays cheap on a large store. The same SQL on both backends.
pub const DISTINCT_NAMESPACES: &str = "WITH RECURSIVE \
    m(ns) AS (SELECT (SELECT min(namespace) FROM memories) UNION ALL \
      SELECT (SELECT min(namespace) FROM memories WHERE namespace > m.ns) FROM m WHERE m.ns IS NOT NULL), \
    e(ns) AS (SELECT (SELECT min(namespace) FROM episodes) UNION ALL \
      SELECT (SELECT min(namespace) FROM episodes WHERE namespace > e.ns) FROM e WHERE e.ns IS NOT NULL) \
    SELECT ns FROM m WHERE ns IS NOT NULL UNION SELECT ns FROM e WHERE ns IS NOT NULL ORDER BY 1";

pub const READ_ONLY: &str = "the database cannot be written (a read-only file or file system): reads are served, writes are refused";

/// Opens (creating if needed) and migrates the database at `path`. A
/// database that exists but cannot be written (a read-only file system, a
/// file without write permission) opens read-only instead (see
/// [`open_read_only`]); the flag says which: `(connection, read_only)`.
pub fn open_connection(path: &Path) -> anyhow::Result<(Connection, bool)> {
    if path.exists() && !writable(path) {
        return Ok((open_read_only(path)?, true));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut conn = connect(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    migrations::migrate(&mut conn).with_context(|| format!("migrating {}", path.display()))?;
    Ok((conn, false))
}

/// Whether the database file, and the folder its WAL and shared-memory
/// files live in, can be written (`access(2)`: a read-only mount refuses
/// root too). An in-memory database is always writable.
fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let ok = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            // SAFETY: a NUL-terminated path; access only reads it.
            .map(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
            .unwrap_or(false)
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    ok(path) && ok(dir)
}

/// A connection that never writes, to a database mnemo cannot write: the
/// schema must already be current (a migration is a write). SQLite opens a
/// WAL database read-only when its `-shm` file exists or can be made;
/// otherwise (a read-only folder) as `immutable`, reading the last WAL
/// frames without shared memory — right for a database nobody writes.
pub(crate) fn open_read_only(path: &Path) -> anyhow::Result<Connection> {
    use rusqlite::OpenFlags;
    register_sqlite_vec();
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // A URI's path escapes what would end it or start a query.
    let file = path
        .to_string_lossy()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23");
    let try_open = |params: &str| -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(format!("file:{file}?{params}"), flags)?;
        // The first read is what fails when the WAL cannot be opened.
        conn.query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))?;
        Ok(conn)
    };
    let conn = try_open("mode=ro")
        .or_else(|_| try_open("immutable=1"))
        .with_context(|| format!("opening database {} read-only", path.display()))?;
    let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    anyhow::ensure!(
        version == migrations::current_version(),
        "{} is read-only and has schema version {version}; this mnemo needs {} (open it once where it can be written, to migrate)",
        path.display(),
        migrations::current_version()
    );
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "query_only", true)?;
    tune(&conn)?;
    register_functions(&conn)?;
    Ok(conn)
}

/// Bytes of the database file each connection maps into memory: reads
/// then come from the OS page cache without a copy per page (a vector scan
/// or an FTS query touches many pages). Address space, not RSS.
const MMAP_BYTES: i64 = 1 << 30;
/// Pages each connection keeps decoded (negative: KiB), 32 MiB.
const CACHE_KIB: i64 = 32 * 1024;
/// Prepared statements each connection keeps (rusqlite's default is 16),
/// so that the kinds a server runs, each `IN` list's length a statement of
/// its own, stay compiled. On its own it moved nothing `perf` shows:
/// the recompiles the writer paid for were the planner's (below).
const STATEMENTS_KEPT: usize = 256;

/// A connection to `path` as every one of mnemo's is set up (the writer's
/// and the readers'): sqlite-vec, a busy timeout, mmap and the page cache,
/// the SQL functions the triggers call.
pub(crate) fn connect(path: &Path) -> anyhow::Result<Connection> {
    register_sqlite_vec();
    let conn =
        Connection::open(path).with_context(|| format!("opening database {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    tune(&conn)?;
    register_functions(&conn)?;
    Ok(conn)
}

/// Per-connection tuning shared by the writer and the readers.
pub(crate) fn tune(conn: &Connection) -> anyhow::Result<()> {
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    // The query planner's stability guarantee: a plan does not depend on
    // the values bound to it. Without it SQLite compiled a kept statement
    // again whenever a parameter it had looked at took a new value: the
    // text log's catch-up, the exact-text lookup and sqlite-vec's chunk
    // lookup, each once a memory, parsing SQL for 6.6% of the writer
    // remembering into a filled store (`perf`; probed: 1,800 recompiles a
    // second). mnemo keeps no `sqlite_stat4` and no partial index, which
    // such plans would read.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// SQL functions the schema's triggers call. `mnemo_index_text` is the
/// core's own `text::index_text`, so the index and the query agree on how
/// CJK text splits into terms.
pub(crate) fn register_functions(conn: &Connection) -> anyhow::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "mnemo_index_text",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text: Option<String> = ctx.get(0)?;
            Ok(text.map(|t| mnemo_core::search_text::index_text(&t)))
        },
    )?;
    Ok(())
}

/// What a storage call returns: the core's error type, so a failure reaches
/// the component as a typed storage error.
pub(crate) type R<T> = mnemo_core::CoreResult<T>;

/// A rusqlite result as a storage call's.
pub(crate) fn sql<T>(r: rusqlite::Result<T>) -> R<T> {
    r.map_err(storage_err)
}

fn storage_err(e: rusqlite::Error) -> mnemo_core::CoreError {
    mnemo_core::CoreError::Storage(e.to_string())
}
