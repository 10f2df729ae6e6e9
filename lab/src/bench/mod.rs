//! `mnemo-lab bench`: measures the component's start-up (cold compile vs cache vs
//! `InstancePre`), the price of a boundary crossing, write throughput and
//! recall latency — through the component and with the core linked natively
//! on the same database, whose ratio is the WASM tax. Prints a table; never
//! asserts a time.

use mnemo_core::ports::Storage as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use mnemo_core::model::*;
use mnemo_host::config::EmbedderChoice;
use mnemo_host::native::NativeMnemo;
use mnemo_host::runtime::Runtime;
use mnemo_host::{Config, Mnemo};

mod child;
mod fill;
mod llm;
mod load;
mod ready;
mod serve;
mod serve_args;
mod stalls;
mod stubs;
mod tenants;
mod waves;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    core: CoreArgs,
}

#[derive(clap::Subcommand)]
enum BenchCommand {
    /// Load through HTTP: a `mnemo serve` on 127.0.0.1 filled and queried by
    /// concurrent clients; ingest, recall, latency percentiles, RSS, size,
    /// the ANN index after a restart, and (with --stalls) recall during
    /// background embedding and an LLM cycle.
    Serve(serve::ServeBenchArgs),
    /// Many clients mixing recalls, writes, turns, context, resume, lists
    /// and consolidations against one `mnemo serve` on 127.0.0.1: requests
    /// and errors per kind, p50/p99, lock timeouts (default: 32 clients for
    /// 10 minutes).
    Load(load::LoadBenchArgs),
    /// What a provider as a sandboxed plugin costs per call: the `openai`
    /// plugin against a native client, on the same stub server.
    Llm(llm::LlmBenchArgs),
    /// One consolidation cycle of many independent LLM calls against a
    /// slow stub LLM, planned one call at a time and in parallel waves.
    Cycle(waves::CycleBenchArgs),
}

/// The in-process figures (`mnemo-lab bench` alone).
#[derive(clap::Args)]
struct CoreArgs {
    /// Memories in the recall store.
    #[arg(long, default_value_t = 10_000)]
    memories: usize,
    /// Recall queries per engine.
    #[arg(long, default_value_t = 300)]
    queries: usize,
    /// Turns ingested and memories remembered for the throughput rows.
    #[arg(long, default_value_t = 1_000)]
    writes: usize,
    /// Work folder (default: a fresh temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    json: bool,
}

/// Deterministic text: xorshift over a fixed vocabulary.
struct Corpus {
    state: u64,
    words: Vec<String>,
}

impl Corpus {
    fn new(seed: u64) -> Self {
        const SYLLABLES: &[&str] = &[
            "ka", "lo", "mi", "ren", "tor", "vel", "sa", "dun", "pri", "mo", "zen", "tal", "qui",
            "bra", "nor", "fi",
        ];
        let mut words = Vec::new();
        for a in SYLLABLES {
            for b in SYLLABLES {
                for c in ["", "n", "s", "ra"] {
                    words.push(format!("{a}{b}{c}"));
                }
            }
        }
        Self {
            state: seed.max(1),
            words,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// Zipf-ish word choice: common words are common.
    fn word(&mut self) -> String {
        let r = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let i = ((self.words.len() as f64).powf(r) as usize).saturating_sub(1);
        self.words[i.min(self.words.len() - 1)].clone()
    }

    fn sentence(&mut self, min: usize, max: usize) -> String {
        let n = min + (self.next() as usize % (max - min + 1));
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// The figures measured: printed as they come, or kept for `--json`.
struct Table {
    json: bool,
    rows: Vec<serde_json::Value>,
}

impl Table {
    fn row(&mut self, figure: &str, value: String, unit: &str, how: &str) {
        if self.json {
            self.rows.push(serde_json::json!({
                "figure": figure, "value": value, "unit": unit, "how": how,
            }));
        } else {
            println!("{figure:<44} {value:>12} {unit:<8} {how}");
        }
    }

    /// A remark that is not a figure (stderr under `--json`).
    fn note(&self, text: &str) {
        if self.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
}

/// Exact vector search unless a bench row turns the HNSW graph on.
fn config_in(dir: &Path, name: &str) -> Config {
    let mut c = Config::with_hash_embedder(dir.join(name), dir.to_path_buf());
    c.ann_min_rows = None;
    c
}

pub fn run(base: &Config, args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        Some(BenchCommand::Serve(a)) => serve::run(base, a),
        Some(BenchCommand::Load(a)) => load::run(a),
        Some(BenchCommand::Llm(a)) => llm::run(a),
        Some(BenchCommand::Cycle(a)) => waves::run(a),
        None => run_core(base, args.core),
    }
}

/// `dir` (created), or a fresh temporary folder removed when the second
/// value drops.
fn work_dir(dir: Option<&PathBuf>) -> anyhow::Result<(PathBuf, Option<TempDir>)> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            Ok((d.clone(), None))
        }
        None => {
            let tmp = tempdir()?;
            Ok((tmp.0.clone(), Some(tmp)))
        }
    }
}

fn run_core(base: &Config, args: CoreArgs) -> anyhow::Result<()> {
    let (dir, _tmp) = work_dir(args.dir.as_ref())?;
    let mut t = Table {
        json: args.json,
        rows: Vec::new(),
    };
    if !t.json {
        println!(
            "{:<44} {:>12} {:<8} how measured",
            "figure", "value", "unit"
        );
        println!("{}", "-".repeat(100));
    }

    // Start-up: cold compile, then the cached artifact, then InstancePre.
    let cache = dir.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let cold = Runtime::new(Some(&cache))?;
    t.row(
        "core component: compile (cold, Cranelift)",
        ms(cold.load.duration),
        "ms",
        "Component::new + serialize to cache",
    );
    let warm = Runtime::new(Some(&cache))?;
    anyhow::ensure!(
        warm.load.from_cache,
        "the second start did not use the cache"
    );
    t.row(
        "core component: load from cache",
        ms(warm.load.duration),
        "ms",
        "Component::deserialize_file of the .cwasm",
    );
    let mut mnemo = Mnemo::open_with(&warm, &config_in(&dir, "bench.db"))?;
    let mut inst = Vec::new();
    for _ in 0..50 {
        inst.push(mnemo.reinstantiate()?);
    }
    inst.sort();
    t.row(
        "instantiate from InstancePre (p50)",
        format!("{:.1}", percentile(&inst, 0.5).as_secs_f64() * 1e6),
        "us",
        "50 re-instantiations",
    );

    // Boundary crossings.
    let n = 20_000u32;
    let start = Instant::now();
    for _ in 0..n {
        mnemo.probe(0)?;
    }
    let export_call = start.elapsed() / n;
    t.row(
        "host -> guest export call",
        format!("{:.2}", export_call.as_secs_f64() * 1e6),
        "us",
        "probe(0), 20k calls",
    );
    let calls = 200_000u32;
    let start = Instant::now();
    mnemo.probe(calls)?;
    let import_call = start.elapsed().saturating_sub(export_call) / calls;
    t.row(
        "guest -> host import call (core -> host)",
        format!("{:.3}", import_call.as_secs_f64() * 1e6),
        "us",
        "probe(200k): clock.now imports",
    );

    // Write throughput.
    let mut corpus = Corpus::new(42);
    let start = Instant::now();
    for i in 0..args.writes {
        mnemo.ingest(Turn {
            session_id: format!("s{}", i / 20),
            role: if i % 2 == 0 {
                "user".into()
            } else {
                "assistant".into()
            },
            content: corpus.sentence(8, 24),
            ..Default::default()
        })?;
    }
    let rate = args.writes as f64 / start.elapsed().as_secs_f64();
    t.row(
        "ingest throughput (episodes, one commit each)",
        format!("{rate:.0}"),
        "turns/s",
        "hot path: no LLM, no embedding",
    );
    let start = Instant::now();
    for _ in 0..args.writes {
        mnemo.remember(RememberRequest {
            content: corpus.sentence(8, 24),
            ..Default::default()
        })?;
    }
    let rate = args.writes as f64 / start.elapsed().as_secs_f64();
    t.row(
        "remember throughput (dedup + embed + insert)",
        format!("{rate:.0}"),
        "mem/s",
        "hash embedder, one commit each",
    );

    // The recall store.
    let remaining = args.memories.saturating_sub(args.writes);
    let bar = mnemo_host::cli::progress(remaining as u64, "storing");
    mnemo.atomically(mnemo_host::runtime::Locks::All, |m| -> anyhow::Result<()> {
        for _ in 0..remaining {
            m.remember(RememberRequest {
                content: corpus.sentence(8, 24),
                skip_dedup: true,
                ..Default::default()
            })?;
            bar.inc(1);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    let queries: Vec<String> = (0..args.queries).map(|_| corpus.sentence(2, 4)).collect();
    let total = mnemo.stats(None)?.active;
    let label = format!("recall at {total} memories");
    let recall_ids = |m: &mut Mnemo, q: &str| -> anyhow::Result<Vec<String>> {
        Ok(m.recall(RecallRequest {
            query: q.into(),
            dry: true,
            ..Default::default()
        })?
        .hits
        .iter()
        .map(|h| h.item.id().to_string())
        .collect())
    };
    let wasm = time_recalls(&queries, |q| recall_ids(&mut mnemo, q).map(|h| h.len()))?;
    let exact: Vec<Vec<String>> = queries
        .iter()
        .map(|q| recall_ids(&mut mnemo, q))
        .collect::<anyhow::Result<_>>()?;

    // The same store through the HNSW graph.
    mnemo.ports().store.set_ann_min_rows(Some(1));
    recall_ids(&mut mnemo, &queries[0])?; // starts the build
    let graphs = mnemo.ports().store.ann_wait();
    let built: usize = graphs.iter().map(|(n, _)| n).sum();
    let build_ms: u128 = graphs.iter().map(|(_, ms)| ms).sum();
    let ann = time_recalls(&queries, |q| recall_ids(&mut mnemo, q).map(|h| h.len()))?;
    let mut same = 0usize;
    let mut all = 0usize;
    for (q, e) in queries.iter().zip(&exact) {
        let got = recall_ids(&mut mnemo, q)?;
        all += e.len();
        same += e.iter().filter(|id| got.contains(id)).count();
    }
    t.row(
        &format!("HNSW build ({built} vectors)"),
        format!("{build_ms}"),
        "ms",
        "instant-distance, ef_construction 64, background thread",
    );
    t.row(
        &format!("{label}: p50 (component, HNSW)"),
        ms(ann.0),
        "ms",
        "vector channel from the graph (+ fresh writes)",
    );
    t.row(
        &format!("{label}: p95 (component, HNSW)"),
        ms(ann.1),
        "ms",
        "",
    );
    raw_channel_rows(&mut t, &mnemo, &queries, ann.0)?;
    t.row(
        "HNSW recall: top-10 hits shared with exact search",
        format!("{:.3}", same as f64 / all.max(1) as f64),
        "share",
        "same queries, final ranked hits",
    );
    drop(mnemo);
    let native = NativeMnemo::open(&config_in(&dir, "bench.db"))?;
    let nat = time_recalls(&queries, |q| {
        native
            .engine
            .recall(RecallRequest {
                query: q.into(),
                dry: true,
                ..Default::default()
            })
            .map(|r| r.hits.len())
            .map_err(Into::into)
    })?;
    t.row(
        &format!("{label}: p50 (component, exact vectors)"),
        ms(wasm.0),
        "ms",
        "dry recall, limit 10, all channels, sqlite-vec brute force",
    );
    t.row(
        &format!("{label}: p95 (component, exact vectors)"),
        ms(wasm.1),
        "ms",
        "",
    );
    t.row(
        &format!("{label}: p50 (native core)"),
        ms(nat.0),
        "ms",
        "same queries, same database",
    );
    t.row(&format!("{label}: p95 (native core)"), ms(nat.1), "ms", "");
    t.row(
        "WASM tax on recall (p50 component / native)",
        format!(
            "{:.2}",
            wasm.0.as_secs_f64() / nat.0.as_secs_f64().max(1e-9)
        ),
        "x",
        "",
    );
    local_model_rows(base, &mut t, &mut corpus)?;
    if t.json {
        println!("{}", serde_json::to_string_pretty(&t.rows)?);
    }
    Ok(())
}

/// Throughput and query latency of the local embedding model, if installed.
fn local_model_rows(base: &Config, t: &mut Table, corpus: &mut Corpus) -> anyhow::Result<()> {
    use mnemo_host::embedding::{EmbeddingProvider, LocalEmbedder};
    let EmbedderChoice::Local {
        dir,
        dimension,
        precision,
    } = &base.embedder
    else {
        t.note("(local embedding model not configured: MNEMO_EMBEDDER is not `local`)");
        return Ok(());
    };
    let model = match LocalEmbedder::load_with(dir, *dimension, *precision) {
        Ok(m) => m,
        Err(e) => {
            t.note(&format!("(local embedding model skipped: {e:#})"));
            return Ok(());
        }
    };
    let name = model.info().model;
    let texts: Vec<String> = (0..256).map(|_| corpus.sentence(8, 24)).collect();
    model.embed(&texts[..4])?; // warm up
    let mut singles = Vec::new();
    for text in texts.iter().take(64) {
        let start = Instant::now();
        model.embed(std::slice::from_ref(text))?;
        singles.push(start.elapsed());
    }
    let total: Duration = singles.iter().sum();
    singles.sort();
    t.row(
        &format!("local model ({name}): batch 1"),
        format!("{:.1}", 64.0 / total.as_secs_f64()),
        "texts/s",
        "64 texts of 8-24 words, one per call",
    );
    let start = Instant::now();
    for chunk in texts.chunks(32) {
        model.embed(chunk)?;
    }
    t.row(
        &format!("local model ({name}): batch 32"),
        format!("{:.1}", texts.len() as f64 / start.elapsed().as_secs_f64()),
        "texts/s",
        "256 texts in batches of 32 (TOOLCHAIN.md quotes PyTorch at ~45/s)",
    );
    let mut queries = Vec::new();
    for text in texts.iter().take(64) {
        let start = Instant::now();
        model.embed_queries(std::slice::from_ref(text))?;
        queries.push(start.elapsed());
    }
    queries.sort();
    t.row(
        "query embedding latency (p50)",
        ms(percentile(&queries, 0.5)),
        "ms",
        "one query, uncached, on the query path (8-bit for MPNet at MNEMO_MODEL_PRECISION=auto)",
    );
    Ok(())
}

/// The raw channel queries a hybrid recall runs — FTS5 MATCH and the
/// vector lookup through the graph, at recall's fan-out, the query embedded
/// — without fusion, scoring or hydration; and hybrid recall's p50 over
/// theirs.
fn raw_channel_rows(
    t: &mut Table,
    mnemo: &Mnemo,
    queries: &[String],
    hybrid: Duration,
) -> anyhow::Result<()> {
    use mnemo_host::embedding::{EmbeddingProvider, HashEmbedder};
    let embedder = HashEmbedder::new(mnemo_host::config::DEFAULT_DIMENSION);
    let store = &mnemo.ports().store;
    let filter = SearchFilter {
        namespaces: vec!["default".into()],
        ..Default::default()
    };
    let fanout = mnemo_core::thresholds::CHANNEL_MIN;
    let raw = time_recalls(queries, |q| {
        let terms = mnemo_core::search_text::fts_terms(q);
        let fts = store.fts_search(Target::Memories, &terms, &filter, fanout, 0.0)?;
        let v = embedder.embed(&[q.to_string()])?.pop().unwrap_or_default();
        let near = store.vector_search(Target::Memories, &v, &filter, fanout)?;
        Ok(fts.len() + near.len())
    })?;
    t.row(
        "raw channel queries: p50",
        ms(raw.0),
        "ms",
        "FTS5 MATCH + HNSW lookup at recall's fan-out, query embedded; no fusion, scoring or hydration",
    );
    t.row(
        "hybrid recall / raw channel queries (p50)",
        format!(
            "{:.2}",
            hybrid.as_secs_f64() / raw.0.as_secs_f64().max(1e-9)
        ),
        "x",
        "recall through the component with the graph, over the row above",
    );
    Ok(())
}

fn time_recalls(
    queries: &[String],
    mut f: impl FnMut(&str) -> anyhow::Result<usize>,
) -> anyhow::Result<(Duration, Duration)> {
    for q in queries.iter().take(10) {
        f(q)?; // warm caches
    }
    let mut times = Vec::with_capacity(queries.len());
    for q in queries {
        let start = Instant::now();
        f(q)?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok((percentile(&times, 0.5), percentile(&times, 0.95)))
}

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> anyhow::Result<TempDir> {
    let dir = std::env::temp_dir().join(format!("mnemo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("creating the bench folder")?;
    Ok(TempDir(dir))
}
