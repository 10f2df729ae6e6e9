//! `mnemo-lab bench serve`: the server measured from outside, as a user's
//! clients see it. For each store size: a `mnemo serve` on 127.0.0.1 (hash
//! vectors of `--dimension` from an embedding stub, also on 127.0.0.1) is
//! filled (`fill.rs`) by `--clients` threads with a seeded corpus (8–30
//! Zipf-distributed words per memory), then queried by the same clients
//! for `--seconds` (3 words of a stored text, dry recall, limit 10) at
//! once, while the HNSW graph builds, and again once it is built; then
//! consolidated twice, and given 2,000 more memories through remember.
//! Then it is killed (SIGKILL) and restarted, and the time until its HNSW
//! index and its full-text partitions serve again is measured. Prints a
//! table;
//! asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::child::{Server, db_bytes, recall_load, remove_db, stub_env};
use super::fill::{cycle_rows, fill, ingest_rows};
use super::ready::{ann_building, ann_ready, text_ready};
pub use super::serve_args::ServeBenchArgs;
use super::{Corpus, Table, work_dir};

/// Memories remembered into the filled store, after its other rows.
const REMEMBERED_AFTER: usize = 2_000;

pub fn run(base: &mnemo_host::Config, args: ServeBenchArgs) -> anyhow::Result<()> {
    let (dir, _tmp) = work_dir(args.dir.as_ref())?;
    let stubs = super::stubs::start(args.dimension, Duration::from_secs(2))?;
    let mut t = Table {
        json: args.json,
        rows: Vec::new(),
    };
    t.note(&format!(
        "mnemo-lab bench serve: {} clients over HTTP on 127.0.0.1, {}-d stub vectors, {} s of dry recall (limit 10) per size",
        args.clients, args.dimension, args.seconds
    ));
    for &n in &args.memories {
        if args.namespaces > 1 {
            super::tenants::rows(&mut t, &dir, &stubs.base, &args, n)?;
        } else if args.postgres.is_some() {
            super::tenants::one(&mut t, &dir, &stubs.base, &args, n)?;
        } else {
            size_rows(&mut t, &dir, &stubs.base, &args, n)?;
        }
    }
    if args.stalls {
        super::stalls::run(&mut t, base, &dir, &stubs.base, &args)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}

fn size_rows(
    t: &mut Table,
    dir: &Path,
    stub: &str,
    args: &ServeBenchArgs,
    n: usize,
) -> anyhow::Result<()> {
    let db = dir.join(format!("serve-{n}.db"));
    let reused = args.reuse && db.exists();
    if !reused {
        remove_db(&db);
    }
    let env = stub_env(stub, args.dimension);
    let mut server = Server::start(&db, dir, &env)?;
    let mut corpus = Corpus::new(args.seed);
    let texts: Arc<Vec<String>> = Arc::new((0..n).map(|_| corpus.sentence(8, 30)).collect());
    let label = |what: &str| format!("{n} memories: {what}");
    // Past the exact threshold: one namespace's graph must be built.
    let large = n >= mnemo_host::storage::ANN_MIN_ROWS;
    if reused {
        t.note(&format!(
            "{n} memories: the store in {} is reused",
            db.display()
        ));
    } else {
        ingest_rows(t, &server.base, args, &texts, &label)?;
        // The cliff after bulk writes: the same load at once, while the
        // HNSW graph that its first search starts is built.
        let fresh = recall_load(&server.base, &texts, args.clients(), args.seconds(), 3)?;
        fresh.rows(t, &label("recall right after ingest"), args.clients());
        super::child::windows(
            &fresh,
            t,
            &label("recall right after ingest"),
            Duration::from_secs(5),
        );
        t.note(&format!(
            "{n} memories: HNSW builds still running when that load ended: {}",
            ann_building(&server.base)?
        ));
    }
    let ann_built = ann_ready(&server.base, &texts, None, large)?;
    t.row(
        &label("HNSW graph built after ingest"),
        format!("{:.1}", ann_built.as_secs_f64()),
        "s",
        "first recall until /health shows the graphs built",
    );
    // A reused store's saved partitions load at start; a fresh one's are
    // built on the first search (FTS5 answers until then).
    let (text, loaded) = text_ready(&server.base, &texts, None)?;
    t.row(
        &label("full text serving after that"),
        format!("{:.1}", text.as_secs_f64()),
        "s",
        &format!("until /health shows every partition ready ({loaded} loaded from disk)"),
    );
    let load = recall_load(&server.base, &texts, args.clients(), args.seconds(), 1)?;
    load.rows(t, &label("recall"), args.clients());
    let (rss, peak, anon) = server.rss_mb();
    t.row(
        &label("server RSS"),
        format!("{rss:.0}"),
        "MB",
        "VmRSS after the recall load (with the database pages SQLite maps)",
    );
    t.row(
        &label("server anonymous RSS"),
        format!("{anon:.0}"),
        "MB",
        "RssAnon: the server's own memory, without mapped files",
    );
    t.row(
        &label("server peak RSS"),
        format!("{peak:.0}"),
        "MB",
        "VmHWM",
    );
    let size = db_bytes(&db);
    t.row(
        &label("database size"),
        format!("{:.1}", size as f64 / 1e6),
        "MB",
        "the .db, -wal and -shm files",
    );
    t.row(
        &label("full-text partitions on disk"),
        format!(
            "{:.1}",
            dir_bytes(&db.with_extension("db.text")) as f64 / 1e6
        ),
        "MB",
        "the saved partitions (`text_save_min_rows`) beside the database",
    );

    cycle_rows(t, &server.base, &label)?;

    // Remember into the full store (a fresh one only: a kept store would
    // grow each run): dedup now searches a partition of `n`.
    if !reused {
        let more: Arc<Vec<String>> = Arc::new(
            (0..REMEMBERED_AFTER)
                .map(|_| corpus.sentence(8, 30))
                .collect(),
        );
        let started = Instant::now();
        fill(&server.base, &more, args.clients())?;
        t.row(
            &label("remember into the full store"),
            format!("{:.0}", more.len() as f64 / started.elapsed().as_secs_f64()),
            "mem/s",
            &format!(
                "{REMEMBERED_AFTER} more: POST /memories/batch of 100, {} clients, after the consolidation",
                args.clients()
            ),
        );
    }

    // A restart after kill -9: how long until the graphs serve again.
    server.kill();
    let restarted = Instant::now();
    let server = Server::start(&db, dir, &env)?;
    let listening = restarted.elapsed();
    let ready = ann_ready(&server.base, &texts, None, large)?;
    t.row(
        &label("restart: listening"),
        format!("{:.2}", listening.as_secs_f64()),
        "s",
        "SIGKILL, start, until the port answers",
    );
    t.row(
        &label("restart: HNSW serving"),
        format!("{:.1}", (listening + ready).as_secs_f64()),
        "s",
        "from the start until /health shows the graphs built",
    );
    let (text, loaded) = text_ready(&server.base, &texts, None)?;
    t.row(
        &label("restart: full text serving"),
        format!("{:.1}", (listening + ready + text).as_secs_f64()),
        "s",
        &format!(
            "from the start until /health shows every partition ready ({loaded} loaded from disk)"
        ),
    );
    let after = recall_load(
        &server.base,
        &texts,
        args.clients(),
        args.seconds().div_ceil(2),
        2,
    )?;
    after.rows(t, &label("recall after restart"), args.clients());
    Ok(())
}

/// The bytes of the files in `dir` (0 if there is none).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
