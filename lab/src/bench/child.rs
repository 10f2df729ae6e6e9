//! What the HTTP benches share: a `mnemo serve` child on 127.0.0.1 (the
//! binary beside `mnemo-lab`, or `MNEMO_BIN`), its environment, fresh
//! database files, seeded queries and recall loads against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::{Table, percentile};

/// The `mnemo` binary the benches start as `mnemo serve`: `MNEMO_BIN`, else
/// the one built beside this binary (same target folder), else `mnemo` on
/// the `PATH`.
fn mnemo_exe() -> PathBuf {
    if let Some(bin) = std::env::var_os("MNEMO_BIN") {
        return PathBuf::from(bin);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("mnemo")));
    match beside {
        Some(path) if path.is_file() => path,
        _ => PathBuf::from("mnemo"),
    }
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

/// `dir/name`, with any database of that name (its WAL, its folders) removed.
pub(super) fn fresh(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join(name);
    remove_db(&db);
    db
}

/// Bytes of the database's files (the .db, -wal and -shm).
pub(super) fn db_bytes(db: &Path) -> u64 {
    db_files(db)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Deletes a database with everything beside it: its `-wal` and `-shm`
/// files and its derived indexes' folders (`.ann/`, `.text/`), which a
/// new store of the same name must not inherit.
pub(super) fn remove_db(db: &Path) {
    for f in db_files(db) {
        let _ = if f.is_dir() {
            std::fs::remove_dir_all(f)
        } else {
            std::fs::remove_file(f)
        };
    }
}

pub(super) fn db_files(db: &Path) -> Vec<PathBuf> {
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

/// One dry recall of `q` (limit 10) in namespace `ns` (`None`: the
/// server's default): its time.
pub(super) fn recall_once_in(
    agent: &ureq::Agent,
    base: &str,
    q: &str,
    ns: Option<&str>,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut body = json!({"query": q, "dry": true, "limit": 10});
    if let Some(ns) = ns {
        body["namespace"] = json!(ns);
    }
    agent
        .post(&format!("{base}/recall"))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())
        .context("recall")?
        .into_string()?;
    Ok(started.elapsed())
}

/// Recall latencies of a load: every client's, sorted.
pub(super) struct Load {
    pub times: Vec<Duration>,
    /// Each recall's end since the load began, and its time, in the
    /// order they ended (`windows`).
    pub ended: Vec<(Duration, Duration)>,
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

/// The recall load's p50 in each `step` of its time: how a cliff after
/// bulk writes ends.
pub(super) fn windows(load: &Load, t: &mut Table, label: &str, step: Duration) {
    let mut at = Duration::ZERO;
    while at < Duration::from_secs_f64(load.seconds) {
        let mut times: Vec<Duration> = load
            .ended
            .iter()
            .filter(|(end, _)| *end >= at && *end < at + step)
            .map(|(_, d)| *d)
            .collect();
        times.sort();
        if !times.is_empty() {
            t.row(
                &format!(
                    "{label}: p50 in {}–{} s",
                    at.as_secs(),
                    (at + step).as_secs()
                ),
                format!("{:.1}", percentile(&times, 0.5).as_secs_f64() * 1e3),
                "ms",
                &format!("{} recalls ended then", times.len()),
            );
        }
        at += step;
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
    recall_load_in(base, texts, clients, seconds, salt, None)
}

/// [`recall_load`] in namespace `ns` (`None`: the server's default).
pub(super) fn recall_load_in(
    base: &str,
    texts: &Arc<Vec<String>>,
    clients: usize,
    seconds: u64,
    salt: u64,
    ns: Option<&str>,
) -> anyhow::Result<Load> {
    let stop = Arc::new(AtomicBool::new(false));
    let timer = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(seconds));
        timer.store(true, Ordering::SeqCst);
    });
    recall_until(base, texts, clients, salt, &stop, ns)
}

/// `clients` threads recalling until `stop` is set.
pub(super) fn recall_until(
    base: &str,
    texts: &Arc<Vec<String>>,
    clients: usize,
    salt: u64,
    stop: &Arc<AtomicBool>,
    ns: Option<&str>,
) -> anyhow::Result<Load> {
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (base, texts, stop) = (base.to_string(), texts.clone(), stop.clone());
            let ns = ns.map(str::to_string);
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ ((c as u64 + 1) * 7919 + salt);
                let (mut times, mut errors) = (Vec::new(), 0);
                while !stop.load(Ordering::SeqCst) {
                    let q = query(&texts, xorshift(&mut s));
                    match recall_once_in(&agent, &base, &q, ns.as_deref()) {
                        Ok(d) => times.push((started.elapsed(), d)),
                        Err(_) => errors += 1,
                    }
                }
                (times, errors)
            })
        })
        .collect();
    let mut load = Load {
        times: Vec::new(),
        ended: Vec::new(),
        seconds: 0.0,
        errors: 0,
    };
    for w in workers {
        let (times, errors) = w
            .join()
            .map_err(|_| anyhow::anyhow!("a recall client panicked"))?;
        load.times.extend(times.iter().map(|(_, d)| *d));
        load.ended.extend(times);
        load.errors += errors;
    }
    load.seconds = started.elapsed().as_secs_f64();
    load.times.sort();
    load.ended.sort();
    Ok(load)
}

/// A `mnemo serve` child on 127.0.0.1.
pub(super) struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    pub(super) fn start(db: &Path, dir: &Path, env: &[(String, String)]) -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader};
        let log_level = std::env::var("MNEMO_LOG").ok();
        let mut cmd = Command::new(mnemo_exe());
        cmd.arg("--db")
            .arg(db)
            .args(["serve", "--port", "0"])
            .env("MNEMO_DATA_DIR", dir)
            // The bench's own `MNEMO_LOG`, if set, is the server's level,
            // and its log goes to the bench's stderr (else dropped).
            .env("MNEMO_LOG", log_level.as_deref().unwrap_or("warn"))
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
        // What it said before listening, to show if it never does.
        let mut said: Vec<String> = Vec::new();
        let base = loop {
            let Some(line) = lines.next() else {
                let _ = child.wait();
                anyhow::bail!("mnemo serve exited before listening: {}", said.join("\n"));
            };
            let line = line?;
            said.push(line.clone());
            if let Some(rest) = line.strip_prefix("mnemo listening on ") {
                break rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        };
        let shown = log_level.is_some();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if shown {
                    eprintln!("{line}");
                }
            }
        });
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
