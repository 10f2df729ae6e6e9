//! `mnemo-lab eval context`: how well context injection picks what matters.
//! A labelled set (`tests/fixtures/context-set.json`: the memories of a
//! made-up user, and prompts with the memories each should inject — none
//! for some) is remembered into a fresh store with the configured embedder
//! (the local model by default); each prompt then goes through the recall
//! context injection runs (dry, `CONTEXT_LIMIT` hits, the relevance mode
//! asked), and the hits the core's `ContextGate` for that mode passes are
//! what would be injected. Precision and recall are micro-averaged over every
//! (prompt, memory) pair; a prompt that needs nothing counts every memory
//! it injects as a false one.
//!
//! `--sweep` prints the figures at each cosine floor from 0.30 to 0.60
//! (the gate's main knob, the rest held); `--out` writes every hit's
//! relevance and cosine, from which the constants in `thresholds.rs` were
//! chosen. The product's
//! own path (`context`, the default mode) is run too and must inject what
//! the scorer counted; a difference is reported.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use anyhow::{Context, bail};
use mnemo_core::ContextGate;
use mnemo_core::model::*;
use mnemo_core::ports::Embedder;
use mnemo_core::thresholds::CONTEXT_LIMIT;
use mnemo_host::{Config, Mnemo};
use serde::Deserialize;

/// The namespace the set is remembered into.
const NAMESPACE: &str = "context-set";
/// Cosine floors `--sweep` prints, in hundredths (the vector channel
/// returns nothing under seed 004's similarity floor, 0.30).
const SWEEP: std::ops::RangeInclusive<u32> = 30..=60;
const SWEEP_STEP: usize = 2;

#[derive(clap::Args)]
pub struct ContextArgs {
    /// The labelled set (JSON: `memories` [{id, content}], `prompts`
    /// [{prompt, expect: [memory id, ...]}]).
    #[arg(long, default_value = "tests/fixtures/context-set.json")]
    set: PathBuf,
    /// The relevance mode(s) scored: `blend`, `semantic`, or both.
    #[arg(long, value_delimiter = ',', default_value = "blend,semantic")]
    relevance: Vec<Relevance>,
    /// Also print precision and recall at each cosine floor.
    #[arg(long)]
    sweep: bool,
    /// Print each prompt's misses and false injections.
    #[arg(long)]
    verbose: bool,
    /// Also print how far any gate over the embedder's cosine alone can go
    /// (`context_ceiling.rs`).
    #[arg(long)]
    ceiling: bool,
    /// Print the scores as one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
    /// One JSON line per prompt and mode: its expected memories and every
    /// hit with its relevance, cosine and BM25 rank (for studying a
    /// threshold).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Set {
    memories: Vec<Labelled>,
    prompts: Vec<Prompt>,
}

#[derive(Deserialize)]
struct Labelled {
    id: String,
    content: String,
}

#[derive(Deserialize)]
struct Prompt {
    prompt: String,
    expect: Vec<String>,
}

/// One prompt's hits as recall ranked them.
type Hits = Vec<Hit>;

#[derive(Default, Clone, Copy)]
struct Counts {
    injected: usize,
    right: usize,
    expected: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        if self.injected == 0 {
            return 1.0;
        }
        self.right as f64 / self.injected as f64
    }
    fn recall(&self) -> f64 {
        self.right as f64 / self.expected.max(1) as f64
    }
}

/// The ids `gate` lets through.
fn injected<'a>(gate: &ContextGate, hits: &'a Hits) -> BTreeSet<&'a str> {
    hits.iter()
        .zip(gate.injected(hits))
        .filter(|(_, pass)| *pass)
        .map(|(h, _)| h.item.id())
        .collect()
}

fn score(prompts: &[(BTreeSet<String>, Hits)], gate: &ContextGate) -> Counts {
    let mut c = Counts::default();
    for (expect, hits) in prompts {
        let shown = injected(gate, hits);
        c.injected += shown.len();
        c.right += shown.iter().filter(|id| expect.contains(**id)).count();
        c.expected += expect.len();
    }
    c
}

pub fn run(config: &Config, args: ContextArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.set)
        .with_context(|| format!("reading {}", args.set.display()))?;
    let set: Set = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a context set", args.set.display()))?;
    if set.prompts.is_empty() {
        bail!("{} holds no prompts", args.set.display());
    }
    let dir = tempfile::tempdir()?;
    let mut cfg = config.clone();
    cfg.db_path = dir.path().join("context.db");
    let mut mnemo = Mnemo::open(&cfg)?;

    // The set's ids → the stored ids (a restatement the dedup merged maps
    // two labels to one memory).
    let mut stored: HashMap<String, String> = HashMap::new();
    for m in &set.memories {
        let out = mnemo.remember(RememberRequest {
            content: m.content.clone(),
            namespace: NAMESPACE.into(),
            ..Default::default()
        })?;
        stored.insert(m.id.clone(), out.memory.id);
    }
    let merged = set.memories.len() - stored.values().collect::<BTreeSet<_>>().len();
    mnemo.backfill_all(128, |_| {})?;
    let label: HashMap<&String, &String> = stored.iter().map(|(k, v)| (v, k)).collect();
    let model = mnemo.ports().embeddings.info().model;

    let mut report = serde_json::Map::new();
    if !args.json {
        println!(
            "| relevance | gate | precision | recall | injected | right | expected |\n|---|---|---|---|---|---|---|"
        );
    }
    for &mode in &args.relevance {
        let mut asked: Vec<(BTreeSet<String>, Hits)> = Vec::new();
        let mut lines = Vec::new();
        for p in &set.prompts {
            let expect: BTreeSet<String> = p
                .expect
                .iter()
                .map(|id| {
                    stored
                        .get(id)
                        .cloned()
                        .with_context(|| format!("`{id}` is not a memory of the set"))
                })
                .collect::<anyhow::Result<_>>()?;
            let r = mnemo.recall(RecallRequest {
                query: p.prompt.clone(),
                namespace: NAMESPACE.into(),
                limit: CONTEXT_LIMIT,
                dry: true,
                relevance: mode,
                ..Default::default()
            })?;
            if args.out.is_some() {
                let channel = |h: &Hit, c: Channel| {
                    h.explanation
                        .channels
                        .iter()
                        .find(|x| x.channel == c)
                        .map(|x| (x.rank, x.raw_score))
                };
                let shown: Vec<serde_json::Value> = r
                    .hits
                    .iter()
                    .map(|h| {
                        let id = h.item.id().to_string();
                        serde_json::json!({
                            "memory": label.get(&id).map_or(id.clone(), |s| s.to_string()),
                            "relevance": h.explanation.relevance,
                            "cosine": channel(h, Channel::Vector).map(|c| c.1),
                            "fts_rank": channel(h, Channel::Fts).map(|c| c.0),
                        "entity": channel(h, Channel::Entity).is_some(),
                        "fact": channel(h, Channel::Fact).is_some(),
                        })
                    })
                    .collect();
                lines.push(serde_json::json!({"mode": mode.to_string(), "prompt": p.prompt, "expect": p.expect, "hits": shown}).to_string());
            }
            asked.push((expect, r.hits));
        }
        if let Some(path) = &args.out {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            for l in &lines {
                writeln!(f, "{l}")?;
            }
        }
        let gate = ContextGate::for_mode(mode, &model);
        let at = score(&asked, &gate);
        if args.verbose {
            for (p, (expect, hits)) in set.prompts.iter().zip(&asked) {
                let shown = injected(&gate, hits);
                let name = |id: &str| {
                    label
                        .get(&id.to_string())
                        .map_or(id.to_string(), |s| s.to_string())
                };
                let injected: Vec<String> = shown.iter().map(|id| name(id)).collect();
                let missed: Vec<String> = expect
                    .iter()
                    .filter(|id| !shown.contains(id.as_str()))
                    .map(|id| name(id))
                    .collect();
                println!(
                    "[{mode}] {} | injected {injected:?} | missed {missed:?}",
                    p.prompt
                );
            }
        }
        // The cosine floor is the gate's main knob; the rest stay.
        let mut sweep = Vec::new();
        for t in SWEEP.step_by(SWEEP_STEP) {
            let t = t as f32 / 100.0;
            let c = score(
                &asked,
                &ContextGate {
                    min_cosine: Some(t),
                    ..gate
                },
            );
            sweep.push((t, c));
        }
        report.insert(
            mode.to_string(),
            serde_json::json!({
                "min_cosine": gate.min_cosine,
                "top_cosine_share": gate.top_cosine_share,
                "min_relevance": gate.min_relevance,
                "precision": at.precision(),
                "recall": at.recall(),
                "injected": at.injected,
                "right": at.right,
                "expected": at.expected,
                "sweep": sweep.iter().map(|(t, c)| serde_json::json!({"min_cosine": t, "precision": c.precision(), "recall": c.recall()})).collect::<Vec<_>>(),
            }),
        );
        if !args.json {
            println!(
                "| {mode} | {} | {:.3} | {:.3} | {} | {} | {} |",
                describe(&gate),
                at.precision(),
                at.recall(),
                at.injected,
                at.right,
                at.expected
            );
            if args.sweep {
                println!("\n| {mode}: cosine floor | precision | recall |\n|---|---|---|");
                for (t, c) in &sweep {
                    println!("| {t:.2} | {:.3} | {:.3} |", c.precision(), c.recall());
                }
                println!();
            }
        }
        // The product's path for the default mode: what `context` injects
        // must be what was counted.
        if mode == RecallRequest::default().relevance {
            let mut differ = 0;
            for (p, (_, hits)) in set.prompts.iter().zip(&asked) {
                let block = mnemo.context(NAMESPACE, &p.prompt, None, 0)?;
                let got: BTreeSet<&str> = block.memories.iter().map(|m| m.id.as_str()).collect();
                let counted = injected(&gate, hits);
                differ += usize::from(got != counted);
            }
            report.insert("context_differs".into(), differ.into());
            if differ > 0 {
                eprintln!(
                    "warning: `context` injected another set than counted for {differ} prompts"
                );
            }
        }
    }
    if args.ceiling && !args.json {
        let texts: Vec<String> = set.memories.iter().map(|m| m.content.clone()).collect();
        let index: HashMap<&str, usize> = set
            .memories
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.as_str(), i))
            .collect();
        let prompts: Vec<(String, Vec<usize>)> = set
            .prompts
            .iter()
            .map(|p| {
                let want = p
                    .expect
                    .iter()
                    .filter_map(|id| index.get(id.as_str()).copied());
                (p.prompt.clone(), want.collect())
            })
            .collect();
        crate::context_ceiling::print(&mnemo, &texts, &prompts)?;
    }
    report.insert("memories".into(), set.memories.len().into());
    report.insert("merged_by_dedup".into(), merged.into());
    report.insert("prompts".into(), set.prompts.len().into());
    if args.json {
        report.insert("model".into(), model.into());
        println!("{}", serde_json::Value::Object(report));
    } else {
        println!(
            "\n{} memories ({merged} merged by dedup), {} prompts, embedder {model}",
            set.memories.len(),
            set.prompts.len(),
        );
    }
    Ok(())
}

/// A gate in words, for the table.
fn describe(gate: &ContextGate) -> String {
    match gate.min_cosine {
        Some(c) => format!(
            "cosine ≥ {c:.2} and ≥ {:.2} × best, or relevance ≥ {:.2}",
            gate.top_cosine_share, gate.min_relevance
        ),
        None if gate.best_keyword_match => format!(
            "relevance ≥ {:.2}, or the best keyword match",
            gate.min_relevance
        ),
        None => format!("relevance ≥ {:.2}", gate.min_relevance),
    }
}
