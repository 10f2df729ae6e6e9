//! `mnemo-lab eval locomo`: retrieval quality on LoCoMo-format data. Each
//! conversation is ingested as episodes (one namespace per conversation, one
//! session per LoCoMo session, the session's date as event time); every
//! question of categories 1–4 is asked through recall over episodes, and the
//! ranked turns are scored against the evidence: R@5, R@10, all@10, Hit@1,
//! MRR, NDCG@10 (binary gains), overall and per category.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mnemo_core::calendar::{MONTH_NAMES, days_from_civil};
use mnemo_core::model::*;
use mnemo_host::runtime::timings;
use mnemo_host::{Config, Mnemo};
use serde_json::Value;

#[derive(clap::Subcommand)]
pub enum EvalCommand {
    /// LoCoMo (snap-research/LoCoMo) conversations and questions.
    Locomo(LocomoArgs),
    /// Context injection's precision and recall on a labelled set.
    Context(crate::context_eval::ContextArgs),
}

#[derive(clap::Args)]
pub struct LocomoArgs {
    /// A JSON file in LoCoMo's format.
    #[arg(long)]
    data: PathBuf,
    /// Depth of the ranking scored (and written with --out).
    #[arg(long, default_value_t = 10)]
    k: u32,
    /// One JSON line per question: {"qid": "<sample_id>#<index in qa>", "ranked": ["D1:3", ...], "scores": [...]}.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the evaluation database here (default: a temporary file).
    #[arg(long)]
    keep_db: Option<PathBuf>,
    /// With --keep-db: when that store already holds turns, ask its stored
    /// conversations again instead of ingesting and embedding them anew
    /// (for comparing ranking changes quickly; the store must come from
    /// the same --data).
    #[arg(long, requires = "keep_db")]
    reuse: bool,
    /// With --out: each line also carries every ranked turn's score
    /// explanation (channels, ranks, the factors that moved it).
    #[arg(long, requires = "out")]
    explain: bool,
    /// Print the scores as one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// How evidence becomes relevance (`blend` or seed 004's `semantic`).
    #[arg(long, default_value = "blend")]
    relevance: Relevance,
    /// Run at this time (milliseconds since the Unix epoch) with
    /// reproducible ids: a driven clock, so two runs — or two hosts, the
    /// JavaScript host's parity test — score the same.
    #[arg(long)]
    at: Option<i64>,
    /// LLM query expansion, with an LLM configured: `auto` when the best
    /// hit is weak (recall's default), `on` for every question, `off`.
    #[arg(long, value_enum, default_value_t = Expand::Auto)]
    expand: Expand,
    /// LLM re-ordering of each question's page of hits (with an LLM configured).
    #[arg(long)]
    rerank: bool,
    /// Also print where recall's time went: each host import the core
    /// called (full-text and vector search, the query's embedding, …), its
    /// calls and mean milliseconds per question.
    #[arg(long)]
    timings: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Expand {
    Auto,
    On,
    Off,
}

/// "1:56 pm on 8 May, 2023" → milliseconds (UTC).
pub fn parse_locomo_date(s: &str) -> Option<Millis> {
    let lower = s.to_lowercase();
    let (time, date) = lower.split_once(" on ")?;
    let (hm, ampm) = time.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (mut h, m): (i64, i64) = (h.trim().parse().ok()?, m.trim().parse().ok()?);
    if ampm.trim() == "pm" && h != 12 {
        h += 12;
    } else if ampm.trim() == "am" && h == 12 {
        h = 0;
    }
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let [day, month, year] = parts.as_slice() else {
        return None;
    };
    let month = MONTH_NAMES.iter().position(|mo| mo.starts_with(month))? as u32 + 1;
    let days = days_from_civil(year.parse().ok()?, month, day.parse().ok()?);
    Some(((days * 24 + h) * 60 + m) * 60_000)
}

/// Every `D<n>:<n>` in an evidence string (some are malformed, e.g. "D8:6; D9:17").
pub fn evidence_ids(raw: &str) -> Vec<String> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'D' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + 1 && j < b.len() && b[j] == b':' {
                let mut k = j + 1;
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                if k > j + 1 {
                    out.push(raw.get(i..k).unwrap_or_default().to_string());
                    i = k;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

#[derive(Default, Clone)]
struct Scores {
    n: usize,
    r5: f64,
    r10: f64,
    all10: f64,
    hit1: f64,
    mrr: f64,
    ndcg10: f64,
}

impl Scores {
    fn add(&mut self, ranked: &[String], evidence: &HashSet<String>) {
        let hits = |k: usize| {
            ranked
                .iter()
                .take(k)
                .filter(|d| evidence.contains(*d))
                .count() as f64
        };
        let e = evidence.len() as f64;
        self.n += 1;
        self.r5 += hits(5) / e;
        self.r10 += hits(10) / e;
        self.all10 += f64::from(u8::from(hits(10) == e));
        self.hit1 += f64::from(u8::from(
            ranked.first().is_some_and(|d| evidence.contains(d)),
        ));
        self.mrr += ranked
            .iter()
            .position(|d| evidence.contains(d))
            .map(|p| 1.0 / (p as f64 + 1.0))
            .unwrap_or(0.0);
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, d)| evidence.contains(*d))
            .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        let idcg: f64 = (0..evidence.len().min(10))
            .map(|i| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        self.ndcg10 += dcg / idcg;
    }

    fn json(&self) -> serde_json::Value {
        let n = self.n.max(1) as f64;
        serde_json::json!({
            "n": self.n,
            "r@5": self.r5 / n,
            "r@10": self.r10 / n,
            "all@10": self.all10 / n,
            "hit@1": self.hit1 / n,
            "mrr": self.mrr / n,
            "ndcg@10": self.ndcg10 / n,
        })
    }

    fn row(&self, label: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {label} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            self.n,
            self.r5 / n,
            self.r10 / n,
            self.all10 / n,
            self.hit1 / n,
            self.mrr / n,
            self.ndcg10 / n
        )
    }
}

fn namespace_of(sample_id: &str) -> String {
    let ns: String = sample_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("locomo-{ns}")
}

pub fn run(config: &Config, cmd: EvalCommand) -> anyhow::Result<()> {
    let args = match cmd {
        EvalCommand::Locomo(args) => args,
        EvalCommand::Context(args) => return crate::context_eval::run(config, args),
    };
    let text = std::fs::read_to_string(&args.data)
        .with_context(|| format!("reading {}", args.data.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not LoCoMo JSON", args.data.display()))?;
    if samples.is_empty() {
        bail!("{} holds no conversations", args.data.display());
    }
    let dir = std::env::temp_dir().join(format!("mnemo-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut cfg = config.clone();
    cfg.db_path = args.keep_db.clone().unwrap_or_else(|| dir.join("eval.db"));
    if let Some(at) = args.at {
        cfg.clock = mnemo_host::clock::HostClock::driven(std::sync::Arc::new(
            std::sync::atomic::AtomicI64::new(at),
        ));
    }
    if !args.reuse {
        let _ = std::fs::remove_file(&cfg.db_path);
    }
    let mut mnemo = Mnemo::open(&cfg)?;
    // A kept store (a file or a Postgres database) that already holds turns
    // is asked again as it is; an empty one is filled.
    let reuse = args.reuse && mnemo.stats(None)?.episodes > 0;

    // Ingest.
    let started = Instant::now();
    let mut turns = 0usize;
    let mut known: HashMap<String, HashSet<String>> = HashMap::new();
    mnemo.atomically(mnemo_host::runtime::Locks::All, |m| -> anyhow::Result<()> {
        for sample in &samples {
            let sid = sample["sample_id"]
                .as_str()
                .context("a sample has no sample_id")?;
            let ns = namespace_of(sid);
            let conv = &sample["conversation"];
            let mut n = 1;
            while let Some(session) = conv[format!("session_{n}")].as_array() {
                let date = conv[format!("session_{n}_date_time")]
                    .as_str()
                    .and_then(parse_locomo_date)
                    .unwrap_or(0);
                for (i, t) in session.iter().enumerate() {
                    let speaker = t["speaker"].as_str().unwrap_or("speaker");
                    let dia = t["dia_id"].as_str().unwrap_or_default().to_string();
                    let mut content =
                        format!("{speaker}: {}", t["text"].as_str().unwrap_or_default());
                    if let Some(c) = t["blip_caption"].as_str() {
                        content.push_str(&format!(" [shares {c}]"));
                    }
                    known
                        .entry(sid.to_string())
                        .or_default()
                        .insert(dia.clone());
                    turns += 1;
                    if reuse {
                        continue;
                    }
                    m.ingest(Turn {
                        namespace: ns.clone(),
                        session_id: format!("session_{n}"),
                        role: speaker.to_string(),
                        content,
                        event_time: Some(date + i as i64 * 1000),
                        attributes: Some(serde_json::json!({ "dia_id": dia }).to_string()),
                    })?;
                }
                n += 1;
            }
        }
        Ok(())
    })?;
    let stored = started.elapsed();
    let bar = mnemo_host::cli::progress(turns as u64, "embedding");
    let embedded = mnemo.backfill_all(128, |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    let ingest_time = started.elapsed();

    // Ask.
    let mut out = match &args.out {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let mut overall = Scores::default();
    let mut by_cat: BTreeMap<u64, Scores> = BTreeMap::new();
    let mut latencies: Vec<Duration> = Vec::new();
    let questions: usize = samples
        .iter()
        .map(|s| s["qa"].as_array().map_or(0, Vec::len))
        .sum();
    let bar = mnemo_host::cli::progress(questions as u64, "asking");
    timings::record(args.timings);
    for sample in &samples {
        let sid = sample["sample_id"].as_str().unwrap_or_default();
        let ns = namespace_of(sid);
        let dias = known.get(sid).cloned().unwrap_or_default();
        for (qi, qa) in sample["qa"].as_array().into_iter().flatten().enumerate() {
            bar.inc(1);
            let cat = qa["category"].as_u64().unwrap_or(0);
            if !(1..=4).contains(&cat) {
                continue;
            }
            let evidence: HashSet<String> = qa["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .flat_map(evidence_ids)
                .filter(|d| dias.contains(d))
                .collect();
            let question = qa["question"].as_str().unwrap_or_default();
            let start = Instant::now();
            let res = mnemo.recall(RecallRequest {
                query: question.to_string(),
                namespace: ns.clone(),
                episodes_only: true,
                limit: args.k,
                dry: true,
                relevance: args.relevance,
                expand: match args.expand {
                    Expand::Auto => None,
                    Expand::On => Some(true),
                    Expand::Off => Some(false),
                },
                rerank: args.rerank,
                ..Default::default()
            })?;
            latencies.push(start.elapsed());
            let (ranked, scores): (Vec<String>, Vec<f32>) = res
                .hits
                .iter()
                .filter_map(|h| match &h.item {
                    Item::Episode(e) => {
                        serde_json::from_str::<Value>(&e.attributes).ok()?["dia_id"]
                            .as_str()
                            .map(|d| (d.to_string(), h.score))
                    }
                    Item::Memory(_) => None,
                })
                .unzip();
            if let Some(w) = out.as_mut() {
                let mut line = serde_json::json!({ "qid": format!("{sid}#{qi}"), "ranked": ranked, "scores": scores });
                if args.explain {
                    let explained: Vec<&Explanation> =
                        res.hits.iter().map(|h| &h.explanation).collect();
                    line["explanations"] = serde_json::to_value(explained)?;
                }
                writeln!(w, "{line}")?;
            }
            if evidence.is_empty() {
                continue;
            }
            overall.add(&ranked, &evidence);
            by_cat.entry(cat).or_default().add(&ranked, &evidence);
        }
    }
    bar.finish_and_clear();
    timings::record(false);
    let asked = latencies.len().max(1) as f64;
    let recall_ms: f64 = latencies.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / asked;
    let spent: Vec<(&str, f64, f64)> = if args.timings {
        timings::summed()
            .iter()
            .map(|t| {
                let ms = t.total.as_secs_f64() * 1e3 / asked;
                (t.import, t.calls as f64 / asked, ms)
            })
            .collect()
    } else {
        Vec::new()
    };
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    if args.keep_db.is_none() {
        drop(mnemo);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let names = [
        "",
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
    ];
    if args.json {
        let categories: serde_json::Map<String, Value> = by_cat
            .iter()
            .map(|(c, s)| {
                let name = names.get(*c as usize).copied().unwrap_or("other");
                (name.to_string(), s.json())
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "all": overall.json(),
                "categories": categories,
                "conversations": samples.len(),
                "turns": turns,
                "stored_s": stored.as_secs_f64(),
                "embedded": embedded,
                "embed_s": (ingest_time - stored).as_secs_f64(),
                "recall_p50_ms": pct(0.5).as_secs_f64() * 1e3,
                "recall_p95_ms": pct(0.95).as_secs_f64() * 1e3,
                "relevance": args.relevance.as_str(),
                "recall_mean_ms": recall_ms,
                "timings": spent.iter().map(|(import, calls, ms)| serde_json::json!({
                    "import": import, "calls_per_question": calls, "ms_per_question": ms,
                })).collect::<Vec<_>>(),
            }))?
        );
        return Ok(());
    }
    println!("| questions | n | R@5 | R@10 | all@10 | Hit@1 | MRR | NDCG@10 |");
    println!("|---|---|---|---|---|---|---|---|");
    println!("{}", overall.row("all (1-4)"));
    for (c, s) in &by_cat {
        println!(
            "{}",
            s.row(names.get(*c as usize).copied().unwrap_or("other"))
        );
    }
    println!();
    println!(
        "{} conversations, {turns} turns: stored in {:.2} s, embedded {embedded} in {:.1} s; recall p50 {:.2} ms, p95 {:.2} ms ({} questions)",
        samples.len(),
        stored.as_secs_f64(),
        (ingest_time - stored).as_secs_f64(),
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.95).as_secs_f64() * 1e3,
        latencies.len()
    );
    if args.timings {
        print_timings(&spent, recall_ms);
    }
    Ok(())
}

/// `--timings`: each import's share of a question's mean recall time; the
/// rest is the core's own work and the calls across the boundary.
fn print_timings(spent: &[(&str, f64, f64)], recall_ms: f64) {
    println!();
    println!("| where recall's time went | calls / question | ms / question | share |");
    println!("|---|---|---|---|");
    for (import, calls, ms) in spent {
        println!(
            "| {import} | {calls:.2} | {ms:.2} | {:.0}% |",
            100.0 * ms / recall_ms.max(f64::EPSILON)
        );
    }
    let imports: f64 = spent.iter().map(|s| s.2).sum();
    println!(
        "| the core and the boundary | | {:.2} | {:.0}% |",
        recall_ms - imports,
        100.0 * (recall_ms - imports) / recall_ms.max(f64::EPSILON)
    );
    println!("| recall (mean) | | {recall_ms:.2} | 100% |");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locomo_dates() {
        // 2023-05-08 13:56 UTC
        assert_eq!(
            parse_locomo_date("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160_000)
        );
        assert_eq!(
            parse_locomo_date("12:09 am on 13 September, 2023").map(|t| t % 86_400_000),
            Some(9 * 60_000)
        );
        assert_eq!(parse_locomo_date("nonsense"), None);
    }

    #[test]
    fn malformed_evidence_is_split() {
        assert_eq!(evidence_ids("D8:6; D9:17"), ["D8:6", "D9:17"]);
        assert_eq!(evidence_ids("D1:3"), ["D1:3"]);
        assert!(evidence_ids("D:3 Dx").is_empty());
    }

    #[test]
    fn metrics_follow_their_definitions() {
        let ev: HashSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let ranked: Vec<String> = ["x", "a", "y", "b"].iter().map(|s| s.to_string()).collect();
        let mut s = Scores::default();
        s.add(&ranked, &ev);
        assert_eq!((s.r5, s.r10, s.all10, s.hit1), (1.0, 1.0, 1.0, 0.0));
        assert!((s.mrr - 0.5).abs() < 1e-9);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((s.ndcg10 - dcg / idcg).abs() < 1e-9);
    }
}
