//! `mnemo-lab bench serve --namespaces N`: the cost of one tenant inside a
//! store of many. A store of `--memories` memories spread over `N`
//! namespaces (`tenant-0`…, memory `i` in `tenant-(i mod N)`) is imported
//! with vectors, then `--clients` clients recall in `tenant-0` only, with
//! queries from its own texts. Then the same tenant's memories alone in a
//! store of their own take the same load. The ratio of the two p50s is the
//! figure: a tenant's recall should cost what its own rows cost, not what
//! the store holds. With `--postgres URL` the stores are databases on
//! that server; without `--namespaces`, one store of every memory in one
//! namespace is measured there (`one`). Prints rows; asserts nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::child::{
    Load, Server, db_bytes, query, recall_load_in, recall_once_in, remove_db, stub_env,
};
use super::fill::{import, spread};
use super::serve_args::ServeBenchArgs;
use super::{Corpus, Table};

/// The tenant the load recalls in.
const TENANT: &str = "tenant-0";

pub(super) fn rows(
    t: &mut Table,
    dir: &Path,
    stub: &str,
    args: &ServeBenchArgs,
    n: usize,
) -> anyhow::Result<()> {
    let tenants = args.namespaces.max(2);
    let mut corpus = Corpus::new(args.seed());
    let texts: Vec<String> = (0..n).map(|_| corpus.sentence(8, 30)).collect();
    let own: Arc<Vec<String>> = Arc::new(
        texts
            .iter()
            .enumerate()
            .filter(|(i, _)| spread(*i, tenants) == TENANT)
            .map(|(_, t)| t.clone())
            .collect(),
    );
    let label = format!("{n} memories in {tenants} namespaces");
    let shared = measure(
        t,
        dir,
        stub,
        args,
        &format!("serve-{n}-in-{tenants}.db"),
        &texts,
        tenants,
        &own,
        TENANT,
        &label,
    )?;
    let alone_label = format!("the same tenant's {} memories alone", own.len());
    let alone = measure(
        t,
        dir,
        stub,
        args,
        &format!("serve-{n}-tenant-alone.db"),
        &own,
        1,
        &own,
        "default",
        &alone_label,
    )?;
    t.row(
        &format!("{label}: tenant recall p50 / alone"),
        format!("{:.2}", shared.p(0.5) / alone.p(0.5)),
        "×",
        "the tenant's recall p50 in the shared store over the same tenant's alone",
    );
    Ok(())
}

/// One store of `n` memories in one namespace on `--postgres`'s server:
/// its import, first recall and recall under load (the single-namespace
/// figures `size_rows` measures on SQLite).
pub(super) fn one(
    t: &mut Table,
    dir: &Path,
    stub: &str,
    args: &ServeBenchArgs,
    n: usize,
) -> anyhow::Result<()> {
    let mut corpus = Corpus::new(args.seed());
    let texts: Arc<Vec<String>> = Arc::new((0..n).map(|_| corpus.sentence(8, 30)).collect());
    measure(
        t,
        dir,
        stub,
        args,
        &format!("serve-{n}.db"),
        &texts,
        1,
        &texts,
        "default",
        &format!("{n} memories in one namespace"),
    )?;
    Ok(())
}

/// Imports `texts` over `namespaces` into `name` (unless `--reuse` finds
/// it), then recalls in `ns` with queries from `asked`; prints the rows.
#[allow(clippy::too_many_arguments)]
fn measure(
    t: &mut Table,
    dir: &Path,
    stub: &str,
    args: &ServeBenchArgs,
    name: &str,
    texts: &[String],
    namespaces: usize,
    asked: &Arc<Vec<String>>,
    ns: &str,
    label: &str,
) -> anyhow::Result<Load> {
    let place = Place::new(args, dir, name);
    let reused = args.reuse && place.exists()?;
    if !reused {
        place.clear()?;
    }
    let db = place.db();
    let server = Server::start(&db, dir, &stub_env(stub, args.dimension()))?;
    if reused {
        t.note(&format!("{label}: the store {} is reused", place.name()));
    } else {
        let started = Instant::now();
        import(&server.base, texts, 0, args.dimension(), namespaces)?;
        t.row(
            &format!("{label}: import"),
            format!(
                "{:.0}",
                texts.len() as f64 / started.elapsed().as_secs_f64()
            ),
            "mem/s",
            "POST /import with vectors",
        );
    }
    // The tenant's recall load, its queries drawn with `seed`.
    let load_in = |seed| {
        recall_load_in(
            &server.base,
            asked,
            args.clients(),
            args.seconds(),
            seed,
            Some(ns),
        )
    };
    // A namespace past the exact threshold goes into the HNSW graph after
    // its writes (on Postgres, in the background): recall meanwhile, then
    // the time until /health shows it built. The settled load follows.
    if texts.len() / namespaces >= mnemo_host::storage::ANN_MIN_ROWS {
        if !reused {
            let building = load_in(3)?;
            let what = format!("{label}: recall right after import");
            building.rows(t, &what, args.clients());
            super::child::windows(&building, t, &what, std::time::Duration::from_secs(5));
        }
        let built = super::ready::ann_ready(&server.base, asked, Some(ns), true)?;
        t.row(
            &format!("{label}: HNSW graph built after that"),
            format!("{:.1}", built.as_secs_f64()),
            "s",
            "first recall until /health shows the graphs built",
        );
        let (text, loaded) = super::ready::text_ready(&server.base, asked, Some(ns))?;
        t.row(
            &format!("{label}: full text serving after that"),
            format!("{:.1}", text.as_secs_f64()),
            "s",
            &format!("until /health shows every partition ready ({loaded} loaded from disk)"),
        );
    }
    // The first recall of a namespace builds what it searches with.
    let agent = ureq::AgentBuilder::new().build();
    let first = recall_once_in(&agent, &server.base, &query(asked, 1), Some(ns))?;
    t.row(
        &format!("{label}: first recall in the tenant"),
        format!("{:.1}", first.as_secs_f64() * 1e3),
        "ms",
        "after the server started",
    );
    let load = load_in(5)?;
    load.rows(t, &format!("{label}: tenant recall"), args.clients());
    let (rss, _peak, anon) = server.rss_mb();
    t.row(
        &format!("{label}: server RSS (anonymous)"),
        format!("{rss:.0} ({anon:.0})"),
        "MB",
        "VmRSS (RssAnon) after the load",
    );
    t.row(
        &format!("{label}: database size"),
        format!("{:.1}", place.bytes()? as f64 / 1e6),
        "MB",
        place.size_note(),
    );
    Ok(load)
}

/// Where a store lives: a SQLite file in the work folder, or a database of
/// its own on `--postgres`'s server.
enum Place {
    File(PathBuf),
    Postgres { server: String, name: String },
}

impl Place {
    fn new(args: &ServeBenchArgs, dir: &Path, file: &str) -> Self {
        match &args.postgres {
            Some(server) => Place::Postgres {
                server: server.clone(),
                name: file.trim_end_matches(".db").replace(['-', '.'], "_"),
            },
            None => Place::File(dir.join(file)),
        }
    }

    fn name(&self) -> String {
        match self {
            Place::File(p) => p.display().to_string(),
            Place::Postgres { name, .. } => format!("database {name}"),
        }
    }

    /// What `mnemo --db` is given.
    fn db(&self) -> PathBuf {
        match self {
            Place::File(p) => p.clone(),
            Place::Postgres { server, name } => PathBuf::from(database_url(server, name)),
        }
    }

    fn exists(&self) -> anyhow::Result<bool> {
        Ok(match self {
            Place::File(p) => p.exists(),
            Place::Postgres { server, name } => connect(server)?
                .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[name])?
                .is_some(),
        })
    }

    /// Removes what an earlier run left.
    fn clear(&self) -> anyhow::Result<()> {
        match self {
            Place::File(p) => {
                remove_db(p);
            }
            Place::Postgres { server, name } => {
                // One statement each: neither runs inside a transaction.
                let mut db = connect(server)?;
                db.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
                db.batch_execute(&format!("CREATE DATABASE {name}"))?;
            }
        }
        Ok(())
    }

    fn bytes(&self) -> anyhow::Result<u64> {
        Ok(match self {
            Place::File(p) => db_bytes(p),
            Place::Postgres { server, name } => {
                let n: i64 = connect(server)?
                    .query_one("SELECT pg_database_size($1::text)", &[name])?
                    .get(0);
                u64::try_from(n).unwrap_or(0)
            }
        })
    }

    fn size_note(&self) -> &'static str {
        match self {
            Place::File(_) => "the .db, -wal and -shm files",
            Place::Postgres { .. } => "pg_database_size",
        }
    }
}

fn connect(url: &str) -> anyhow::Result<postgres::Client> {
    mnemo_host::storage::connect_postgres(url)
}

/// `server`'s URL naming database `name` instead (its query kept).
fn database_url(server: &str, name: &str) -> String {
    let (path, query) = server
        .split_once('?')
        .map_or((server, None), |(p, q)| (p, Some(q)));
    let base = path.rsplit_once('/').map_or(path, |(b, _)| b);
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}
