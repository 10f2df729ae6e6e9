//! `mnemo bench serve`: the server measured from outside, as a user's
//! clients see it. For each store size: a `mnemo serve` on 127.0.0.1 (hash
//! vectors of `--dimension` from an embedding stub, also on 127.0.0.1) is
//! filled (`fill.rs`) by `--clients` threads with a seeded corpus (8–30
//! Zipf-distributed words per memory), then queried by the same clients
//! for `--seconds` (3 words of a stored text, dry recall, limit 10), then
//! consolidated twice. Then it is killed (SIGKILL) and restarted, and the
//! time until its HNSW index serves again is measured. Prints a table;
//! asserts nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use super::fill::{cycle_rows, ingest_rows};
use super::{Corpus, Table, percentile, work_dir};

#[derive(clap::Args)]
pub struct ServeBenchArgs {
    /// Store sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    memories: Vec<usize>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds of recall load per size.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Dimension of the stub's vectors.
    #[arg(long, default_value_t = 64)]
    dimension: usize,
    /// Also measure recall during background embedding (local model) and
    /// during an LLM consolidation cycle (the stall table).
    #[arg(long)]
    stalls: bool,
    /// Seed of the corpus.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Work folder (default: a fresh temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    json: bool,
    /// Keep a size's store found in `--dir` from an earlier run (same seed)
    /// instead of filling it again: only the recall and restart rows are
    /// measured.
    #[arg(long, requires = "dir")]
    reuse: bool,
}

pub fn run(base: &mnemo_host::Config, args: ServeBenchArgs) -> anyhow::Result<()> {
    let (dir, _tmp) = work_dir(args.dir.as_ref())?;
    let stubs = super::stubs::start(args.dimension, Duration::from_secs(2))?;
    let mut t = Table {
        json: args.json,
        rows: Vec::new(),
    };
    t.note(&format!(
        "mnemo bench serve: {} clients over HTTP on 127.0.0.1, {}-d stub vectors, {} s of dry recall (limit 10) per size",
        args.clients, args.dimension, args.seconds
    ));
    for &n in &args.memories {
        size_rows(&mut t, &dir, &stubs.base, &args, n)?;
    }
    if args.stalls {
        super::stalls::run(&mut t, base, &dir, &stubs.base, &args)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}

impl ServeBenchArgs {
    pub(super) fn clients(&self) -> usize {
        self.clients.max(1)
    }
    pub(super) fn seconds(&self) -> u64 {
        self.seconds.max(1)
    }
    pub(super) fn seed(&self) -> u64 {
        self.seed
    }
    pub(super) fn dimension(&self) -> usize {
        self.dimension
    }
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
        for f in db_files(&db) {
            let _ = std::fs::remove_file(f);
        }
    }
    let env = stub_env(stub, args.dimension);
    let mut server = Server::start(&db, dir, &env)?;
    let mut corpus = Corpus::new(args.seed);
    let texts: Arc<Vec<String>> = Arc::new((0..n).map(|_| corpus.sentence(8, 30)).collect());
    let label = |what: &str| format!("{n} memories: {what}");
    if reused {
        t.note(&format!(
            "{n} memories: the store in {} is reused",
            db.display()
        ));
    } else {
        ingest_rows(t, &server.base, args, &texts, &label)?;
    }
    let ann_built = ann_ready(&server.base, &texts)?;
    t.row(
        &label("HNSW graph built after ingest"),
        format!("{:.1}", ann_built.as_secs_f64()),
        "s",
        "first recall until /health shows the graphs built",
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
    let size: u64 = db_files(&db)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    t.row(
        &label("database size"),
        format!("{:.1}", size as f64 / 1e6),
        "MB",
        "the .db, -wal and -shm files",
    );

    cycle_rows(t, &server.base, &label)?;

    // A restart after kill -9: how long until the graphs serve again.
    server.kill();
    let restarted = Instant::now();
    let server = Server::start(&db, dir, &env)?;
    let listening = restarted.elapsed();
    let ready = ann_ready(&server.base, &texts)?;
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

pub(super) fn stub_env(stub: &str, dimension: usize) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("MNEMO_EMBEDDER", "http"),
        ("MNEMO_EMBEDDING_URL", stub),
        ("MNEMO_EMBEDDING_MODEL", "bench-stub"),
        ("MNEMO_LLM_LEVEL", "off"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    env.push(("MNEMO_EMBEDDING_DIM".into(), dimension.to_string()));
    env.extend(no_cron());
    env
}

pub(super) fn no_cron() -> Vec<(String, String)> {
    [
        "MNEMO_CRON_INTERVAL",
        "MNEMO_CRON_CONSOLIDATE",
        "MNEMO_CRON_ENRICH",
        "MNEMO_CRON_FADE",
        "MNEMO_CRON_REFLECT",
    ]
    .iter()
    .map(|k| (k.to_string(), "off".to_string()))
    .collect()
}

/// `dir/name`, with any database of that name (and its WAL) removed.
pub(super) fn fresh(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join(name);
    for f in db_files(&db) {
        let _ = std::fs::remove_file(f);
    }
    db
}

fn db_files(db: &Path) -> Vec<PathBuf> {
    let name = db.file_name().map(|n| n.to_string_lossy().to_string());
    let Some(name) = name else {
        return Vec::new();
    };
    let dir = db.parent().unwrap_or(Path::new("."));
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|f| f.to_string_lossy().starts_with(&name))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A query: three consecutive words of a stored text.
pub(super) fn query(texts: &[String], r: u64) -> String {
    let text = &texts[(r as usize) % texts.len()];
    let words: Vec<&str> = text.split_whitespace().collect();
    let start = ((r >> 20) as usize) % words.len().saturating_sub(2).max(1);
    words[start..(start + 3).min(words.len())].join(" ")
}

pub(super) fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

pub(super) fn recall_once(agent: &ureq::Agent, base: &str, q: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    agent
        .post(&format!("{base}/recall"))
        .set("Content-Type", "application/json")
        .send_string(&json!({"query": q, "dry": true, "limit": 10}).to_string())
        .context("recall")?
        .into_string()?;
    Ok(started.elapsed())
}

/// Recall latencies of a load: every client's, sorted.
pub(super) struct Load {
    pub times: Vec<Duration>,
    pub seconds: f64,
    pub errors: usize,
}

impl Load {
    pub(super) fn p(&self, q: f64) -> f64 {
        percentile(&self.times, q).as_secs_f64() * 1e3
    }

    pub(super) fn rows(&self, t: &mut Table, label: &str, clients: usize) {
        let how = format!("{clients} clients, dry recall, limit 10");
        t.row(
            &format!("{label}: throughput"),
            format!("{:.0}", self.times.len() as f64 / self.seconds),
            "recalls/s",
            &how,
        );
        for (name, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
            t.row(
                &format!("{label}: {name}"),
                format!("{:.1}", self.p(q)),
                "ms",
                &how,
            );
        }
        if self.errors > 0 {
            t.row(
                &format!("{label}: errors"),
                self.errors.to_string(),
                "",
                &how,
            );
        }
    }
}

/// `clients` threads recalling for `seconds`; `salt` varies the queries.
pub(super) fn recall_load(
    base: &str,
    texts: &Arc<Vec<String>>,
    clients: usize,
    seconds: u64,
    salt: u64,
) -> anyhow::Result<Load> {
    let stop = Arc::new(AtomicBool::new(false));
    let timer = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(seconds));
        timer.store(true, Ordering::SeqCst);
    });
    recall_until(base, texts, clients, salt, &stop)
}

/// `clients` threads recalling until `stop` is set.
pub(super) fn recall_until(
    base: &str,
    texts: &Arc<Vec<String>>,
    clients: usize,
    salt: u64,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Load> {
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (base, texts, stop) = (base.to_string(), texts.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ ((c as u64 + 1) * 7919 + salt);
                let (mut times, mut errors) = (Vec::new(), 0);
                while !stop.load(Ordering::SeqCst) {
                    let q = query(&texts, xorshift(&mut s));
                    match recall_once(&agent, &base, &q) {
                        Ok(d) => times.push(d),
                        Err(_) => errors += 1,
                    }
                }
                (times, errors)
            })
        })
        .collect();
    let mut load = Load {
        times: Vec::new(),
        seconds: 0.0,
        errors: 0,
    };
    for w in workers {
        let (times, errors) = w
            .join()
            .map_err(|_| anyhow::anyhow!("a recall client panicked"))?;
        load.times.extend(times);
        load.errors += errors;
    }
    load.seconds = started.elapsed().as_secs_f64();
    load.times.sort();
    Ok(load)
}

/// Recalls until the HNSW index is settled: no build running, and a graph
/// for a large partition whose fresh (exactly scanned) vectors are too few
/// to start a rebuild. A build starts on the first search of a partition
/// that needs one. Returns the time taken.
fn ann_ready(base: &str, texts: &Arc<Vec<String>>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let agent = ureq::AgentBuilder::new().build();
    let deadline = started + Duration::from_secs(3 * 3600);
    let large = texts.len() >= mnemo_host::storage::ANN_MIN_ROWS;
    for round in 0.. {
        recall_once(&agent, base, &query(texts, round))?;
        let ann = loop {
            let health: Value = agent.get(&format!("{base}/health")).call()?.into_json()?;
            if health["ann"]["building"].as_u64() == Some(0) {
                break health["ann"].clone();
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the HNSW graph was not built in 3 hours"
            );
            std::thread::sleep(Duration::from_millis(250));
        };
        let points = ann["points"].as_u64().unwrap_or(0);
        let fresh = ann["fresh"].as_u64().unwrap_or(0);
        let settled = ann["enabled"] == false
            || !large
            || (points > 0 && fresh < mnemo_host::storage::ann::ANN_FLUSH_AT as u64);
        if settled {
            break;
        }
    }
    Ok(started.elapsed())
}

/// A `mnemo serve` child on 127.0.0.1.
pub(super) struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    pub(super) fn start(db: &Path, dir: &Path, env: &[(String, String)]) -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader};
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.arg("--db")
            .arg(db)
            .args(["serve", "--port", "0"])
            .env("MNEMO_DATA_DIR", dir)
            .env("MNEMO_LOG", "warn")
            .env_remove("MNEMO_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().context("starting mnemo serve")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let base = loop {
            let Some(line) = lines.next() else {
                let _ = child.wait();
                anyhow::bail!("mnemo serve exited before listening");
            };
            let line = line?;
            if let Some(rest) = line.strip_prefix("mnemo listening on ") {
                break rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Self { child, base })
    }

    /// (VmRSS, VmHWM, RssAnon) in MB. VmRSS counts the database pages
    /// SQLite maps (file-backed, reclaimable); RssAnon is the server's own
    /// memory.
    pub(super) fn rss_mb(&self) -> (f64, f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .map_or(0.0, |kb| kb / 1024.0)
        };
        (field("VmRSS:"), field("VmHWM:"), field("RssAnon:"))
    }

    pub(super) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
