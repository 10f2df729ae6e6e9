//! `mnemo-lab bench load`: many clients mixing every kind of request against
//! one `mnemo serve` on 127.0.0.1 for a while (issue 20's load run) —
//! recalls, remembers, dialogue turns, context injection, resume, lists and
//! consolidation cycles — and the answers counted: errors (anything but a
//! success), lock timeouts among them (an answer naming a locked or busy
//! database), and latency per kind. `--clients 32 --seconds 600` is the
//! long form; CI runs a short one (`lab/tests/it/bench.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::child::{Server, fresh, query, stub_env, xorshift};
use super::{Corpus, Table, percentile, work_dir};

#[derive(clap::Args)]
pub struct LoadBenchArgs {
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Memories stored before the load starts (in a `--db` that holds
    /// some already, only the rest are added).
    #[arg(long, default_value_t = 1_000)]
    memories: usize,
    /// Seed of the corpus and of each client's choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Work folder (default: a fresh temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The database to load: an empty `postgres://` database (default: a
    /// fresh SQLite file in the work folder).
    #[arg(long)]
    db: Option<PathBuf>,
    /// `mnemo serve` processes sharing the database, the clients spread
    /// over them (more than one needs Postgres).
    #[arg(long, default_value_t = 1)]
    servers: usize,
    /// Only the reading kinds of the mix (recall, context, resume, list) in
    /// their shares: what the servers serve when no write holds the lock,
    /// the figure that shows whether more servers add throughput.
    #[arg(long)]
    reads_only: bool,
    /// Kinds of the mix left out (comma-separated: `consolidate`, `turn`,
    /// ...), the others keeping their shares: which kind a latency waits
    /// behind.
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Namespaces the store and the clients spread over (`tenant-0`…):
    /// the shape of a service, many tenants each small; client `c` is an
    /// agent of `tenant-{c mod N}`. 1: everything in `default`.
    #[arg(long, default_value_t = 1)]
    namespaces: usize,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    json: bool,
}

/// The kinds of request and their share of the load, in percent.
const MIX: [(&str, u64); 7] = [
    ("recall", 40),
    ("remember", 20),
    ("turn", 12),
    ("context", 10),
    ("resume", 8),
    ("list", 8),
    ("consolidate", 2),
];
/// The kinds of [`MIX`] that write (they queue for the one write lock).
const WRITES: [&str; 3] = ["remember", "turn", "consolidate"];
/// Dimension of the stub embedder's vectors.
const DIM: usize = 64;
/// Clients storing the memories before the load.
const FILL_CLIENTS: usize = 4;
/// Memories of the fill stored through `remember`; the rest are imported.
const REMEMBERED_FIRST: usize = 10_000;

/// How the store was filled before the load: memories and time through
/// `remember`, and through `POST /import` (none when the `--db` held them).
#[derive(Default)]
struct Filled {
    remembered: Option<(usize, Duration)>,
    imported: Option<(usize, Duration)>,
}

/// What one client saw: per kind, the latencies of successes, and every
/// failure's status and message.
#[derive(Default)]
struct Seen {
    ok: BTreeMap<&'static str, Vec<Duration>>,
    failed: Vec<(&'static str, u16, String)>,
}

pub fn run(args: LoadBenchArgs) -> anyhow::Result<()> {
    for w in &args.without {
        anyhow::ensure!(
            MIX.iter().any(|(kind, _)| kind == w),
            "--without {w}: the mix's kinds are {}",
            MIX.map(|(k, _)| k).join(", ")
        );
    }
    let (dir, _tmp) = work_dir(args.dir.as_ref())?;
    let stubs = super::stubs::start(DIM, Duration::from_secs(2))?;
    let db = match &args.db {
        Some(url) => url.clone(),
        None => fresh(&dir, "load.db"),
    };
    let postgres = db
        .to_str()
        .is_some_and(mnemo_host::storage::is_postgres_url);
    anyhow::ensure!(
        args.servers <= 1 || postgres,
        "--servers {} needs a Postgres --db: servers share a store there",
        args.servers
    );
    let servers = (0..args.servers.max(1))
        .map(|i| {
            let own = dir.join(format!("server-{i}"));
            std::fs::create_dir_all(&own)?;
            Server::start(&db, &own, &stub_env(&stubs.base, DIM))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let server = &servers[0];
    let mut corpus = Corpus::new(args.seed);
    let texts: Arc<Vec<String>> = Arc::new(
        (0..args.memories.max(1))
            .map(|_| corpus.sentence(8, 30))
            .collect(),
    );
    let held = ureq::get(&format!("{}/stats", server.base))
        .call()?
        .into_json::<serde_json::Value>()?["active"]
        .as_u64()
        .unwrap_or(0) as usize;
    // The first `REMEMBERED_FIRST` through `remember` (dedup, embedding),
    // the rest of a large store through `POST /import`, as `bench serve`
    // fills one.
    let remembered = texts.len().min(REMEMBERED_FIRST);
    let mut filled = Filled::default();
    if held < remembered {
        let rest = Arc::new(texts[held..remembered].to_vec());
        let started = Instant::now();
        super::fill::fill_spread(&server.base, &rest, FILL_CLIENTS, args.namespaces)?;
        filled.remembered = Some((rest.len(), started.elapsed()));
    }
    let from = held.max(remembered);
    if from < texts.len() {
        let started = Instant::now();
        super::fill::import(&server.base, &texts[from..], from, DIM, args.namespaces)?;
        filled.imported = Some((texts.len() - from, started.elapsed()));
    }

    let clients = args.clients.max(1);
    let deadline = Instant::now() + Duration::from_secs(args.seconds.max(1));
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (base, texts, seed) = (bases[c % bases.len()].clone(), texts.clone(), args.seed);
            let mix = mix(&args);
            let namespace = super::fill::spread(c, args.namespaces);
            std::thread::spawn(move || {
                let agent = Agent {
                    http: ureq::AgentBuilder::new()
                        .timeout(Duration::from_secs(120))
                        .build(),
                    namespace,
                };
                client(c, &base, &agent, &texts, seed, &mix, deadline)
            })
        })
        .collect();
    let mut seen = Seen::default();
    for h in handles {
        let s = h
            .join()
            .map_err(|_| anyhow::anyhow!("a load client panicked"))?;
        for (k, v) in s.ok {
            seen.ok.entry(k).or_default().extend(v);
        }
        seen.failed.extend(s.failed);
    }
    let seconds = started.elapsed().as_secs_f64();
    let backend = if postgres {
        format!("Postgres, {} server(s)", servers.len())
    } else {
        "SQLite, 1 server".to_string()
    };
    report(&args, &backend, clients, seconds, seen, &filled)
}

/// The kinds a client draws from, with their shares.
fn mix(args: &LoadBenchArgs) -> Vec<(&'static str, u64)> {
    MIX.into_iter()
        .filter(|(kind, _)| !args.reads_only || !WRITES.contains(kind))
        .filter(|(kind, _)| !args.without.iter().any(|w| w == kind))
        .collect()
}

/// One client's connection and the namespace it is an agent of.
struct Agent {
    http: ureq::Agent,
    namespace: String,
}

fn client(
    c: usize,
    base: &str,
    agent: &Agent,
    texts: &[String],
    seed: u64,
    mix: &[(&'static str, u64)],
    deadline: Instant,
) -> Seen {
    let total: u64 = mix.iter().map(|(_, share)| share).sum();
    let mut rng = (seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(c as u64 + 1) | 1;
    let mut corpus = Corpus::new(seed ^ (c as u64 + 7));
    let mut seen = Seen::default();
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let r = xorshift(&mut rng);
        let mut pick = r % total.max(1);
        let kind = mix
            .iter()
            .find(|(_, share)| {
                if pick < *share {
                    true
                } else {
                    pick -= share;
                    false
                }
            })
            .map_or("recall", |(k, _)| *k);
        let session = format!("load-{c}-{}", n / 20);
        let q = query(texts, r >> 7);
        let started = Instant::now();
        let answer = match kind {
            "remember" => post(
                agent,
                base,
                "/memories",
                json!({"content": format!("{} (client {c}, write {n})", corpus.sentence(8, 30))}),
            ),
            "turn" => post(
                agent,
                base,
                "/episodes",
                json!({"session_id": session, "role": "user", "content": corpus.sentence(6, 20)}),
            ),
            "context" => post(
                agent,
                base,
                "/context",
                json!({"prompt": q, "session_id": session}),
            ),
            "resume" => get(agent, base, "/resume"),
            "list" => get(agent, base, "/memories?limit=20"),
            "consolidate" => post(agent, base, "/consolidate", json!({})),
            _ => post(agent, base, "/recall", json!({"query": q, "limit": 10})),
        };
        match answer {
            Ok(()) => seen.ok.entry(kind).or_default().push(started.elapsed()),
            Err((status, message)) => seen.failed.push((kind, status, message)),
        }
    }
    seen
}

type Answer = Result<(), (u16, String)>;

fn post(agent: &Agent, base: &str, path: &str, body: serde_json::Value) -> Answer {
    answer(
        agent
            .http
            .post(&format!("{base}{path}"))
            .set("X-Namespace", &agent.namespace)
            .set("Content-Type", "application/json")
            .send_string(&body.to_string()),
    )
}

fn get(agent: &Agent, base: &str, path: &str) -> Answer {
    answer(
        agent
            .http
            .get(&format!("{base}{path}"))
            .set("X-Namespace", &agent.namespace)
            .call(),
    )
}

fn answer(res: Result<ureq::Response, ureq::Error>) -> Answer {
    match res {
        Ok(r) => {
            // Read the whole answer: a body cut short is a failure too.
            r.into_string().map(drop).map_err(|e| (0, e.to_string()))
        }
        Err(ureq::Error::Status(code, r)) => Err((code, r.into_string().unwrap_or_default())),
        Err(e) => Err((0, e.to_string())),
    }
}

fn report(
    args: &LoadBenchArgs,
    backend: &str,
    clients: usize,
    seconds: f64,
    seen: Seen,
    filled: &Filled,
) -> anyhow::Result<()> {
    let mut t = Table {
        json: args.json,
        rows: Vec::new(),
    };
    t.note(&format!(
        "mnemo-lab bench load: {clients} clients over HTTP on 127.0.0.1 for {seconds:.0} s ({backend}), {} memories stored first over {} namespace(s), {DIM}-d stub vectors, LLM off{}",
        args.memories,
        args.namespaces.max(1),
        if args.reads_only { ", reads only" } else { "" }
    ));
    if !args.without.is_empty() {
        t.note(&format!("left out of the mix: {}", args.without.join(", ")));
    }
    let rate = |(n, took): (usize, Duration)| format!("{:.0}", n as f64 / took.as_secs_f64());
    if let Some(r) = filled.remembered {
        t.row(
            "fill: ingest (remember)",
            rate(r),
            "mem/s",
            &format!(
                "{} memories, POST /memories/batch, {FILL_CLIENTS} clients; dedup + embed + insert",
                r.0
            ),
        );
    }
    if let Some(r) = filled.imported {
        t.row(
            "fill: ingest (import)",
            rate(r),
            "mem/s",
            &format!("{} memories, POST /import with their vectors", r.0),
        );
    }
    let how = format!("{clients} clients, {seconds:.0} s");
    for (kind, _) in mix(args) {
        let mut times = seen.ok.get(kind).cloned().unwrap_or_default();
        times.sort();
        let errors = seen.failed.iter().filter(|(k, _, _)| *k == kind).count();
        t.row(
            &format!("{kind}: done / errors"),
            format!("{} / {errors}", times.len()),
            "requests",
            &how,
        );
        if !times.is_empty() {
            let ms = |q: f64| percentile(&times, q).as_secs_f64() * 1e3;
            t.row(
                &format!("{kind}: p50 / p99"),
                format!("{:.1} / {:.1}", ms(0.5), ms(0.99)),
                "ms",
                &how,
            );
        }
    }
    let done: usize = seen.ok.values().map(Vec::len).sum();
    let busy = seen
        .failed
        .iter()
        .filter(|(_, _, m)| {
            let m = m.to_lowercase();
            m.contains("locked")
                || m.contains("busy")
                || m.contains("lock timeout")
                || m.contains("deadlock")
        })
        .count();
    t.row(
        "all: requests/s",
        format!("{:.0}", done as f64 / seconds),
        "requests/s",
        &how,
    );
    t.row(
        "all: errors",
        seen.failed.len().to_string(),
        "",
        "any answer but a success",
    );
    t.row(
        "all: lock timeouts",
        busy.to_string(),
        "",
        "errors naming a locked or busy database (SQLITE_BUSY; Postgres lock timeouts)",
    );
    for (kind, status, message) in seen.failed.iter().take(5) {
        t.note(&format!("error: {kind}: {status} {message}"));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}
