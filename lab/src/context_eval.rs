//! `mnemo-lab eval context`: how well context injection brings what matters
//! and stays silent when nothing does.
//!
//! Each labelled set (`tests/fixtures/context/*.json`: one made-up user's
//! memories, and prompts with the memories each needs — `expect` — and
//! those that bear on it without being needed — `ok` —, some prompts
//! off-topic) is remembered into a fresh store with the configured embedder
//! (the local model by default). Each prompt then goes through the core's
//! own `context`, in each relevance mode asked, and what it injects is
//! scored:
//!
//! - recall: the share of `expect` pairs injected (micro-averaged);
//! - precision: the share of injected memories in `expect` or `ok`;
//! - extra per prompt: injected memories in neither, per on-topic prompt;
//! - off-topic: the share of off-topic prompts that injected anything.
//!
//! A set says which split it is: `tune` (the constants of
//! `core/src/thresholds.rs` were chosen on it) or `report` (never tuned on:
//! the figures docs/evaluation.md reports). The scorer runs the core
//! linked natively on the same store (so both modes can be asked); the
//! component's `context`, the one every host calls, must inject the same
//! for the default mode, and a difference is reported (`context_differs`).
//! `--dump DIR` writes, per set, every memory's and prompt's vector and
//! recall's first `DUMP_HITS` hits with their evidence, for studying a gate
//! away from the engine.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use mnemo_core::ContextQuery;
use mnemo_core::model::*;
use mnemo_core::ports::{Embedder, Storage};
use mnemo_host::native::NativeMnemo;
use mnemo_host::{Config, Mnemo};
use serde::Deserialize;

/// The namespace each set is remembered into.
const NAMESPACE: &str = "context-set";
/// Recall's hits per prompt a dump keeps.
const DUMP_HITS: u32 = 20;
/// The sets scored when none is named.
const DEFAULT_SETS: [&str; 2] = [
    "tests/fixtures/context/tune-tomas.json",
    "tests/fixtures/context/report-aiko.json",
];

#[derive(clap::Args)]
pub struct ContextArgs {
    /// A labelled set (JSON: `user`, `split`, `memories` [{id, content}],
    /// `prompts` [{prompt, expect, ok, off_topic}]); repeat for several.
    #[arg(long = "set", default_values_t = DEFAULT_SETS.map(String::from))]
    sets: Vec<String>,
    /// The relevance mode(s) scored: `blend`, `semantic`, or both.
    #[arg(long, value_delimiter = ',', default_value = "blend,semantic")]
    relevance: Vec<Relevance>,
    /// Print each prompt's injections, misses and extras.
    #[arg(long)]
    verbose: bool,
    /// Print the scores as one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Write each set's vectors and recall's hits here (one JSON file a set).
    #[arg(long)]
    dump: Option<PathBuf>,
    /// With `--dump`: embed these domain descriptions (JSON [[name, text],
    /// ...]) instead of the core's.
    #[arg(long, requires = "dump")]
    prototypes: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Set {
    user: String,
    split: String,
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
    #[serde(default)]
    ok: Vec<String>,
    #[serde(default)]
    off_topic: bool,
}

/// One set in one mode, summed over its prompts.
#[derive(Default, Clone, Copy)]
struct Counts {
    injected: usize,
    right: usize,
    found: usize,
    expected: usize,
    extra: usize,
    on_topic: usize,
    off_topic: usize,
    off_topic_injecting: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        if self.injected == 0 {
            return 1.0;
        }
        self.right as f64 / self.injected as f64
    }
    fn recall(&self) -> f64 {
        self.found as f64 / self.expected.max(1) as f64
    }
    fn extra_per_prompt(&self) -> f64 {
        self.extra as f64 / self.on_topic.max(1) as f64
    }
    fn off_topic_share(&self) -> f64 {
        self.off_topic_injecting as f64 / self.off_topic.max(1) as f64
    }
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "recall": self.recall(),
            "precision": self.precision(),
            "extra_per_prompt": self.extra_per_prompt(),
            "off_topic_injecting": self.off_topic_share(),
            "injected": self.injected,
            "expected": self.expected,
        })
    }
}

fn read_set(path: &Path) -> anyhow::Result<Set> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let set: Set = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a context set", path.display()))?;
    if set.prompts.is_empty() {
        bail!("{} holds no prompts", path.display());
    }
    let ids: BTreeSet<&str> = set.memories.iter().map(|m| m.id.as_str()).collect();
    for p in &set.prompts {
        if let Some(bad) = p
            .expect
            .iter()
            .chain(&p.ok)
            .find(|id| !ids.contains(id.as_str()))
        {
            bail!("{}: `{bad}` is not a memory of the set", path.display());
        }
        if p.off_topic && !(p.expect.is_empty() && p.ok.is_empty()) {
            bail!(
                "{}: off-topic prompt `{}` has labels",
                path.display(),
                p.prompt
            );
        }
    }
    Ok(set)
}

pub fn run(config: &Config, args: ContextArgs) -> anyhow::Result<()> {
    let mut report = Vec::new();
    let mut model = String::new();
    let mut differs = 0;
    if !args.json {
        println!(
            "| user | split | relevance | recall | precision | extra / prompt | off-topic injecting | prompts |\n|---|---|---|---|---|---|---|---|"
        );
    }
    for path in &args.sets {
        let set = read_set(Path::new(path))?;
        let dir = tempfile::tempdir()?;
        let mut cfg = config.clone();
        cfg.db_path = dir.path().join("context.db");
        // The set's ids → the stored ids (a restatement the dedup merged
        // maps two labels to one memory).
        let mut stored: HashMap<String, String> = HashMap::new();
        {
            let mut mnemo = Mnemo::open(&cfg)?;
            for m in &set.memories {
                let out = mnemo.remember(RememberRequest {
                    content: m.content.clone(),
                    namespace: NAMESPACE.into(),
                    ..Default::default()
                })?;
                stored.insert(m.id.clone(), out.memory.id);
            }
            mnemo.backfill_all(128, |_| {})?;
            // The product's path, the component every host calls, in the
            // default mode: kept to compare with the scorer's below.
            let mut product = Vec::new();
            for p in &set.prompts {
                let block = mnemo.context(NAMESPACE, &p.prompt, None, 0)?;
                product.push(ids_of(&block));
            }
            let native = NativeMnemo::open(&cfg)?;
            // The query path the component's context embeds with.
            let _queries = native.engine.ports().embeddings.searching();
            for (p, got) in set.prompts.iter().zip(&product) {
                let block = native.engine.context_for(&ContextQuery {
                    namespace: NAMESPACE,
                    prompt: &p.prompt,
                    ..Default::default()
                })?;
                if &ids_of(&block) != got {
                    differs += 1;
                    eprintln!(
                        "the component and the scorer differ on {:?}: {got:?} against {:?}",
                        p.prompt,
                        ids_of(&block)
                    );
                }
            }
        }
        let label: HashMap<&String, &String> = stored.iter().map(|(k, v)| (v, k)).collect();
        let native = NativeMnemo::open(&cfg)?;
        let queries = native.engine.ports().embeddings.searching();
        model = native.engine.ports().embeddings.info().model;
        let mut modes = serde_json::Map::new();
        for &mode in &args.relevance {
            let mut c = Counts::default();
            for p in &set.prompts {
                let block = native.engine.context_for(&ContextQuery {
                    namespace: NAMESPACE,
                    prompt: &p.prompt,
                    relevance: mode,
                    ..Default::default()
                })?;
                let shown: BTreeSet<&str> = block
                    .memories
                    .iter()
                    .filter_map(|m| label.get(&m.id).map(|s| s.as_str()))
                    .collect();
                let expect: BTreeSet<&str> = p.expect.iter().map(String::as_str).collect();
                let ok: BTreeSet<&str> = p.ok.iter().map(String::as_str).collect();
                let found: Vec<&str> = expect.intersection(&shown).copied().collect();
                let extra: Vec<&str> = shown
                    .iter()
                    .filter(|id| !expect.contains(*id) && !ok.contains(*id))
                    .copied()
                    .collect();
                c.injected += shown.len();
                c.right += shown.len() - extra.len();
                c.found += found.len();
                c.expected += expect.len();
                if p.off_topic {
                    c.off_topic += 1;
                    c.off_topic_injecting += usize::from(!shown.is_empty());
                } else {
                    c.on_topic += 1;
                    c.extra += extra.len();
                }
                if args.verbose {
                    let missed: Vec<&&str> =
                        expect.iter().filter(|id| !shown.contains(*id)).collect();
                    println!(
                        "[{} {mode}] {} | found {found:?} | missed {missed:?} | extra {extra:?}",
                        set.user, p.prompt
                    );
                }
            }
            if !args.json {
                println!(
                    "| {} | {} | {mode} | {:.3} | {:.3} | {:.2} | {:.3} ({} of {}) | {} |",
                    set.user,
                    set.split,
                    c.recall(),
                    c.precision(),
                    c.extra_per_prompt(),
                    c.off_topic_share(),
                    c.off_topic_injecting,
                    c.off_topic,
                    set.prompts.len()
                );
            }
            modes.insert(mode.to_string(), c.json());
        }
        drop(queries);
        if let Some(out) = &args.dump {
            let domains: Vec<(String, String)> = match &args.prototypes {
                Some(p) => serde_json::from_str(&std::fs::read_to_string(p)?)?,
                None => mnemo_core::agent_domains()
                    .map(|(n, t)| (n.to_string(), t.to_string()))
                    .collect(),
            };
            dump(
                &native,
                &set,
                &stored,
                &label,
                &args.relevance,
                &domains,
                out,
            )?;
        }
        report.push(serde_json::json!({
            "user": set.user,
            "split": set.split,
            "memories": set.memories.len(),
            "merged_by_dedup": set.memories.len() - stored.values().collect::<BTreeSet<_>>().len(),
            "prompts": set.prompts.len(),
            "off_topic": set.prompts.iter().filter(|p| p.off_topic).count(),
            "modes": modes,
        }));
    }
    if differs > 0 {
        eprintln!(
            "warning: the component's `context` injected another set than the scorer's for {differs} prompts"
        );
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({"model": model, "sets": report, "context_differs": differs})
        );
    } else {
        println!("\nembedder {model}; the component's context differs on {differs} prompts");
    }
    Ok(())
}

/// The memories a block injects (as a set: two candidates of one score
/// may come in either order).
fn ids_of(block: &ContextBlock) -> BTreeSet<String> {
    block.memories.iter().map(|m| m.id.clone()).collect()
}

/// Every memory's and prompt's vector (the prompts through the query path,
/// as recall embeds them) and recall's first hits in each mode.
fn dump(
    native: &NativeMnemo,
    set: &Set,
    stored: &HashMap<String, String>,
    label: &HashMap<&String, &String>,
    modes: &[Relevance],
    domains: &[(String, String)],
    dir: &Path,
) -> anyhow::Result<()> {
    let engine = &native.engine;
    let ports = engine.ports();
    let ids: Vec<String> = set.memories.iter().map(|m| stored[&m.id].clone()).collect();
    let vectors: HashMap<String, Vec<f32>> = ports
        .store
        .get_vectors(Target::Memories, &ids)?
        .into_iter()
        .collect();
    let memories: Vec<serde_json::Value> = set
        .memories
        .iter()
        .map(|m| {
            serde_json::json!({"id": m.id, "content": m.content, "vector": vectors.get(&stored[&m.id])})
        })
        .collect();
    let _queries = ports.embeddings.searching();
    let mut prompts = Vec::new();
    for p in &set.prompts {
        let vector = ports.embeddings.embed(&[p.prompt.trim().to_string()])?;
        let mut hits = serde_json::Map::new();
        for &mode in modes {
            let r = engine.recall(RecallRequest {
                query: p.prompt.clone(),
                namespace: NAMESPACE.into(),
                limit: DUMP_HITS,
                dry: true,
                relevance: mode,
                ..Default::default()
            })?;
            let rows: Vec<serde_json::Value> = r
                .hits
                .iter()
                .map(|h| {
                    let id = h.item.id().to_string();
                    let channel = |c: Channel| {
                        h.explanation
                            .channels
                            .iter()
                            .find(|x| x.channel == c)
                            .map(|x| (x.rank, x.raw_score))
                    };
                    serde_json::json!({
                        "id": label.get(&id).map_or(id.clone(), |s| s.to_string()),
                        "relevance": h.explanation.relevance,
                        "score": h.score,
                        "vector": channel(Channel::Vector),
                        "fts": channel(Channel::Fts),
                        "entity": channel(Channel::Entity).is_some(),
                        "fact": channel(Channel::Fact).is_some(),
                    })
                })
                .collect();
            hits.insert(mode.to_string(), rows.into());
        }
        prompts.push(serde_json::json!({
            "prompt": p.prompt, "expect": p.expect, "ok": p.ok, "off_topic": p.off_topic,
            "vector": vector.first(), "hits": hits,
        }));
    }
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}.json", set.user));
    let mut extra = Vec::new();
    for (name, text) in domains {
        let v = ports.embeddings.embed(std::slice::from_ref(text))?;
        extra.push(serde_json::json!({"name": name, "text": text, "vector": v.first()}));
    }
    std::fs::write(
        &path,
        serde_json::json!({"user": set.user, "memories": memories, "prompts": prompts, "domains": extra})
            .to_string(),
    )?;
    eprintln!("dumped {}", path.display());
    Ok(())
}
