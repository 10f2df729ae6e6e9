//! The `mnemo` command line. Output is human-readable by default and JSON
//! with `--json`. Invalid input exits 2 with one line on stderr and writes
//! nothing; other failures exit 1.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_host::runtime::CallError;
use mnemo_host::storage::AuditFilter;
use mnemo_host::{Config, Mnemo};

mod bench;
mod eval;

#[derive(Parser)]
#[command(name = "mnemo", version, about = "Long-term memory for AI agents", long_about = None)]
struct Cli {
    /// Database file (default: <data dir>/memory.db).
    #[arg(long, global = true, env = "MNEMO_DB")]
    db: Option<PathBuf>,
    /// Config file (TOML; default: $MNEMO_CONFIG, else <data dir>/config.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(crate::server::ServeArgs),
    /// Speak the Model Context Protocol over stdio (agent tools).
    Mcp,
    /// Store a memory (it lands in Buffer; a duplicate reinforces the existing one).
    Remember(RememberArgs),
    /// Search memories (and optionally dialogue episodes).
    Recall(RecallArgs),
    /// Store dialogue turns as episodes: one turn, or JSON lines with `--jsonl`.
    Ingest(IngestArgs),
    /// Show one memory.
    Get(IdArgs),
    /// List memories, newest first (`--deleted` lists the trash).
    List(ListArgs),
    /// Soft-delete a memory (restorable).
    Delete(DeleteArgs),
    /// Bring a memory back from the trash.
    Restore(IdArgs),
    /// Counts of memories, episodes, entities and vectors.
    Stats(StatsArgs),
    /// Write everything (memories incl. the trash, episodes, sessions, entities, facts) as JSON lines.
    Export(ExportArgs),
    /// Read an export back: ids, times and counts kept; duplicates folded.
    Import(ImportArgs),
    /// Embed every memory and episode that has no vector yet.
    Reindex(ReindexArgs),
    /// Everything about an entity: its profile and linked memories and episodes.
    Entity(EntityArgs),
    /// Fading: Ebbinghaus decay of confidence; faded memories go to the trash (seed 003's 04:00 task).
    #[command(alias = "decay")]
    Fade {
        #[arg(long)]
        json: bool,
    },
    /// Re-extract entities with the `accurate` strategy where few were found (seed 003's 02:00 task).
    Enrich(EnrichArgs),
    /// One consolidation cycle: sessions into facts, promotions, gate, dedup, eviction, decay.
    Consolidate(ConsolidateArgs),
    /// Session-recovery context: Core, Recent, Topics and Triggers (seed 004).
    Resume(ResumeArgs),
    /// The topic index, or the memories of the topics named.
    Topics(TopicsArgs),
    /// Sessions seen so far (most recently active first), or one session's turns.
    Sessions(SessionsArgs),
    /// The markdown block of relevant earlier facts for a prompt (seed 003 context injection).
    Context(ContextArgs),
    /// Write the weekly reflection (at most one in six days unless --force).
    Reflect(ReflectArgs),
    /// Facts: add a triple, query, walk the graph, list conflicts or history.
    #[command(subcommand)]
    Facts(FactsCommand),
    /// Run a NER strategy on a text: the merged entities of its plugins.
    Ner(NerArgs),
    /// The audit log of lifecycle decisions (reinforce, delete, restore, supersede, ...).
    Audit(AuditArgs),
    /// The ledger of LLM and embedding calls: totals, then the latest calls.
    LlmUsage(UsageArgs),
    /// Measure retrieval quality on an evaluation set.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Measure start-up, boundary calls, throughput and recall latency.
    Bench(bench::BenchArgs),
}

#[derive(Args)]
struct ConsolidateArgs {
    /// Only this namespace (default: every namespace).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Report what would happen; write nothing.
    #[arg(long)]
    dry_run: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ResumeArgs {
    #[command(flatten)]
    ns: Ns,
    /// The "Recent" window in hours.
    #[arg(long, default_value_t = 24)]
    hours: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct TopicsArgs {
    /// Topic ids (kb1, kb2, ...); none lists the index.
    ids: Vec<String>,
    #[command(flatten)]
    ns: Ns,
    /// Rebuild the trees first.
    #[arg(long)]
    rebuild: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct SessionsArgs {
    /// A session id: print its turns in dialogue order.
    id: Option<String>,
    #[command(flatten)]
    ns: Ns,
    /// Only the sessions not yet consolidated.
    #[arg(long)]
    pending: bool,
    #[arg(long, default_value_t = 100)]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ContextArgs {
    prompt: String,
    #[command(flatten)]
    ns: Ns,
    /// The current session: its own memories are left out.
    #[arg(long)]
    session: Option<String>,
    #[arg(long, default_value_t = 5)]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ReflectArgs {
    #[command(flatten)]
    ns: Ns,
    #[arg(long)]
    force: bool,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum FactsCommand {
    /// Add a (subject, predicate, object) triple.
    Add {
        subject: String,
        predicate: String,
        object: String,
        #[command(flatten)]
        ns: Ns,
        /// The predicate holds one value: supersede the subject's other objects.
        #[arg(long)]
        exclusive: bool,
    },
    /// Valid facts about an entity (as subject or object).
    Query {
        entity: String,
        #[command(flatten)]
        ns: Ns,
        /// Superseded facts too.
        #[arg(long)]
        history: bool,
    },
    /// Facts reachable from an entity in up to two hops.
    Graph {
        entity: String,
        #[command(flatten)]
        ns: Ns,
        #[arg(long, default_value_t = 2)]
        hops: u32,
    },
    /// Valid facts that disagree (same subject and predicate).
    Conflicts {
        #[command(flatten)]
        ns: Ns,
    },
}

fn print_facts(facts: &[Fact]) {
    if facts.is_empty() {
        println!("no facts");
    }
    for f in facts {
        let state = match &f.superseded_by {
            Some(by) => format!("  (superseded by {by})"),
            None => String::new(),
        };
        println!(
            "{}  {} | {} | {}{state}",
            f.id, f.subject, f.predicate, f.object
        );
    }
}

#[derive(Args)]
struct EntityArgs {
    name: String,
    #[command(flatten)]
    ns: Ns,
    #[arg(long, default_value_t = 20)]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct EnrichArgs {
    /// Items per target (memories, episodes) this run.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct AuditArgs {
    /// Run seed 004's LLM audit of Working and Core instead of reading the log.
    #[arg(long)]
    run: bool,
    /// With --run: show the proposals and verdicts; change nothing.
    #[arg(long, requires = "run")]
    dry_run: bool,
    /// Only this namespace (and, reading the log, the store-wide entries
    /// such as scheduled runs).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// How many entries to read, newest first.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Only decisions about this memory, episode or session.
    #[arg(long)]
    target: Option<String>,
    /// Only this action: promote, demote, merge, evict, supersede, inject,
    /// delete, restore, reinforce, scheduled, ...
    #[arg(long)]
    action: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ExportArgs {
    /// Output file (default: stdout).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Only this namespace.
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Include the vectors (otherwise the importer re-embeds).
    #[arg(long)]
    vectors: bool,
}

#[derive(Args)]
struct ImportArgs {
    /// An export file; `-` reads stdin.
    file: PathBuf,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct NerArgs {
    text: String,
    /// fast | accurate
    #[arg(long, default_value = "fast")]
    strategy: NerStrategy,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct UsageArgs {
    /// How many of the latest calls to show.
    #[arg(long, default_value_t = 20)]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct Ns {
    /// Namespace (default: `default`).
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
}

#[derive(Args)]
struct RememberArgs {
    text: String,
    #[arg(long = "tag", short = 't')]
    tags: Vec<String>,
    /// episodic | semantic | procedural
    #[arg(long)]
    kind: Option<Kind>,
    #[arg(long)]
    source: Option<String>,
    #[arg(long)]
    importance: Option<f32>,
    #[command(flatten)]
    ns: Ns,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RecallArgs {
    query: String,
    #[arg(long, default_value_t = 10)]
    limit: u32,
    #[arg(long, default_value_t = 0)]
    offset: u32,
    #[command(flatten)]
    ns: Ns,
    /// Rank memories with this tag higher (repeatable; a soft boost, not a filter).
    #[arg(long = "tag")]
    tags: Vec<String>,
    #[arg(long = "kind")]
    kinds: Vec<Kind>,
    #[arg(long = "layer")]
    layers: Vec<Layer>,
    /// Search dialogue episodes too.
    #[arg(long)]
    episodes: bool,
    /// Don't reinforce the hits.
    #[arg(long)]
    dry: bool,
    #[arg(long)]
    min_score: Option<f32>,
    /// LLM query expansion: always (`--expand`) or never (`--no-expand`);
    /// default: automatic when the best hit is weak (LLM level not `off`).
    #[arg(long, conflicts_with = "no_expand")]
    expand: bool,
    #[arg(long)]
    no_expand: bool,
    /// Let the LLM re-order the hits.
    #[arg(long)]
    rerank: bool,
    /// How evidence becomes relevance: `blend` (BM25 and cosine weighed
    /// equally; for the local model) or `semantic` (seed 004's cosine-led
    /// relevance; for a strong embedder).
    #[arg(long, default_value = "blend")]
    relevance: Relevance,
    /// Print how each hit was scored.
    #[arg(long)]
    explain: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct IngestArgs {
    /// The turn's text (omit with --jsonl).
    text: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// user | assistant (or an agent name)
    #[arg(long)]
    role: Option<String>,
    /// JSON lines, one turn each: {"session_id", "role", "content", "namespace"?, "event_time"?}; `-` is stdin.
    #[arg(long, conflicts_with = "text")]
    jsonl: Option<PathBuf>,
    #[command(flatten)]
    ns: Ns,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct IdArgs {
    id: String,
    #[command(flatten)]
    ns: Ns,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ListArgs {
    #[command(flatten)]
    ns: Ns,
    /// List the trash (soft-deleted memories) instead.
    #[arg(long)]
    deleted: bool,
    /// Only these layers (repeatable).
    #[arg(long = "layer")]
    layers: Vec<Layer>,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    kinds: Vec<Kind>,
    /// Only memories carrying every one of these tags (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    #[arg(long, default_value_t = 50)]
    limit: u32,
    #[arg(long, default_value_t = 0)]
    offset: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct DeleteArgs {
    id: String,
    #[arg(long, default_value = "deleted")]
    reason: String,
    #[command(flatten)]
    ns: Ns,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StatsArgs {
    /// Only this namespace (default: the whole store).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ReindexArgs {
    /// Forget all vectors and re-embed everything with the configured embedder.
    #[arg(long)]
    embeddings: bool,
    #[arg(long)]
    json: bool,
}

/// A failure and its exit code.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Self {
            code: 1,
            message: format!("{e:#}"),
        }
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        let code = match &e {
            CallError::Core(CoreError::InvalidInput(_)) => 2,
            CallError::Core(CoreError::NotFound(_)) => 3,
            CallError::Core(CoreError::Conflict(_)) => 4,
            _ => 1,
        };
        Self {
            code,
            message: e.to_string(),
        }
    }
}

type Out = Result<(), Failure>;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("MNEMO_LOG").unwrap_or_else(|_| "warn".into());
    // `MNEMO_LOG_FORMAT=json`: one JSON object per event, for log shippers.
    // Otherwise text, coloured on a terminal only (a file gets key=value).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match std::env::var("MNEMO_LOG_FORMAT").as_deref() {
        Ok("json") => builder.json().init(),
        Ok("text") | Err(_) => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        Ok(other) => {
            eprintln!("mnemo: MNEMO_LOG_FORMAT `{other}` is not `text` or `json`");
            return ExitCode::from(2);
        }
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message.lines().next().unwrap_or("failed"));
            ExitCode::from(f.code)
        }
    }
}

fn print_json(v: &impl serde::Serialize) -> Out {
    let s = serde_json::to_string_pretty(v).context("encoding JSON")?;
    println!("{s}");
    Ok(())
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

fn print_memory(m: &Memory) {
    println!(
        "{}  [{} {}]  {}",
        m.id,
        m.layer,
        m.kind,
        one_line(&m.content, 100)
    );
}

fn run(cli: Cli) -> Out {
    let settings = mnemo_host::config::Settings::load(cli.config.as_deref())?;
    let config = Config::from_settings(cli.db, &settings)?;
    if let Command::Serve(args) = cli.command {
        return crate::server::serve(config, args).map_err(Into::into);
    }
    if let Command::Mcp = cli.command {
        return crate::mcp::run(&config).map_err(Into::into);
    }
    if let Command::Ner(a) = &cli.command {
        return ner(&config, a);
    }
    if let Command::Eval(cmd) = cli.command {
        return eval::run(&config, cmd).map_err(Into::into);
    }
    if let Command::Bench(args) = cli.command {
        return bench::run(&config, args).map_err(Into::into);
    }
    let mut mnemo = Mnemo::open(&config)?;
    match cli.command {
        Command::Remember(a) => {
            let out = mnemo.remember(RememberRequest {
                namespace: a.ns.namespace,
                content: a.text,
                kind: a.kind,
                tags: a.tags,
                source: a.source,
                importance: a.importance,
                ..Default::default()
            })?;
            if a.json {
                return print_json(&out);
            }
            match out.dedup_reason {
                None => println!("remembered {}", out.memory.id),
                Some(r) => println!(
                    "reinforced {} ({r} duplicate; repetitions: {})",
                    out.memory.id, out.memory.repetition_count
                ),
            }
        }
        Command::Recall(a) => {
            let res = mnemo.recall(RecallRequest {
                query: a.query,
                namespace: a.ns.namespace,
                limit: a.limit,
                offset: a.offset,
                tags: a.tags,
                kinds: a.kinds,
                layers: a.layers,
                include_episodes: a.episodes,
                dry: a.dry,
                expand: match (a.expand, a.no_expand) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                rerank: a.rerank,
                relevance: a.relevance,
                min_score: a.min_score,
                ..Default::default()
            })?;
            if a.json {
                return print_json(&res);
            }
            for w in &res.warnings {
                eprintln!("note: {w}");
            }
            if res.hits.is_empty() {
                println!("no memories found");
            }
            for (i, h) in res.hits.iter().enumerate() {
                println!(
                    "{:>2}. {:.3}  {}  {}",
                    i + 1,
                    h.score,
                    h.item.id(),
                    one_line(h.item.content(), 100)
                );
                if a.explain {
                    let e = &h.explanation;
                    let chans: Vec<String> = e
                        .channels
                        .iter()
                        .map(|c| format!("{}#{} ({:.3})", c.channel, c.rank, c.raw_score))
                        .collect();
                    println!(
                        "      channels: {}  rrf {:.4}\n      relevance {:.3}  importance {:.3}  recency {:.3}  layer x{:.2}",
                        chans.join(", "),
                        e.rrf,
                        e.relevance,
                        e.importance,
                        e.recency,
                        e.layer_bonus
                    );
                    for n in &e.notes {
                        println!("      - {n}");
                    }
                }
            }
        }
        Command::Ingest(a) => ingest(&mut mnemo, a)?,
        Command::Get(a) => {
            let m = mnemo.get(&a.ns.namespace, &a.id)?;
            if a.json {
                return print_json(&m);
            }
            print_memory(&m);
            println!(
                "  importance {:.2}  confidence {:.2}  accessed {}x  repeated {}x  tags [{}]",
                m.importance,
                m.confidence,
                m.access_count,
                m.repetition_count,
                m.tags.join(", ")
            );
        }
        Command::List(a) => {
            let list = mnemo.list(ListRequest {
                namespace: a.ns.namespace,
                layers: a.layers,
                kinds: a.kinds,
                tags: a.tags,
                deleted: a.deleted,
                limit: a.limit,
                offset: a.offset,
            })?;
            if a.json {
                return print_json(&list);
            }
            list.iter().for_each(print_memory);
        }
        Command::Delete(a) => {
            let m = mnemo.delete(&a.ns.namespace, &a.id, &a.reason)?;
            if a.json {
                return print_json(&m);
            }
            println!("deleted {} (restore with `mnemo restore {}`)", m.id, m.id);
        }
        Command::Restore(a) => {
            let m = mnemo.restore(&a.ns.namespace, &a.id)?;
            if a.json {
                return print_json(&m);
            }
            println!("restored {}", m.id);
        }
        Command::Stats(a) => {
            let s = mnemo.stats(a.namespace.as_deref())?;
            if a.json {
                let mut v = serde_json::to_value(&s).context("encoding stats")?;
                v["total"] = serde_json::json!(s.active);
                return print_json(&v);
            }
            println!(
                "memories: {} active (buffer {}, working {}, core {}), {} in trash\nepisodes: {}  sessions: {}  entities: {}  facts: {}\nvectors: {} memories, {} episodes",
                s.active,
                s.buffer,
                s.working,
                s.core,
                s.deleted,
                s.episodes,
                s.sessions,
                s.entities,
                s.facts,
                s.memory_vectors,
                s.episode_vectors
            );
        }
        Command::Reindex(a) => {
            if a.embeddings {
                let info = {
                    use mnemo_core::ports::Embedder;
                    mnemo.ports().embeddings.info()
                };
                mnemo
                    .ports()
                    .store
                    .reset_vectors(&info.model, info.dimension)?;
            }
            let n = backfill_with_progress(&mut mnemo)?;
            if a.json {
                return print_json(&serde_json::json!({ "embedded": n, "reset": a.embeddings }));
            }
            println!("embedded {n} rows");
        }
        Command::Audit(a) if a.run => {
            let (ns, dry) = (a.namespace.clone(), a.dry_run);
            let r = mnemo.review(ns.as_deref(), dry)?;
            if a.json {
                return print_json(&r);
            }
            println!(
                "{} proposals, {:.0}% passed the sandbox, {} applied{}",
                r.ops.len(),
                r.safety * 100.0,
                r.executed,
                if r.dry { " (dry run)" } else { "" }
            );
            for o in &r.ops {
                let mark = if o.allowed { "ok " } else { "no " };
                println!(
                    "  {mark} {:<8} {}  {}{}",
                    o.op,
                    o.ids.join(","),
                    o.reason,
                    if o.verdict.is_empty() {
                        String::new()
                    } else {
                        format!("  [{}]", o.verdict)
                    }
                );
            }
        }
        Command::Audit(a) => {
            let entries = mnemo.ports().store.audit_log(&AuditFilter {
                limit: a.limit,
                target: a.target.clone(),
                action: a.action.clone(),
                namespace: a.namespace.clone(),
                since: None,
            })?;
            if a.json {
                return print_json(&entries);
            }
            for e in &entries {
                println!(
                    "{}  {:<10} {:<12} {}  {}",
                    e.at, e.namespace, e.action, e.target_id, e.detail
                );
            }
        }
        Command::Export(a) => {
            let ns = a.namespace.as_deref();
            let Some(path) = &a.out else {
                mnemo_host::transfer::export(&mnemo, &mut std::io::stdout().lock(), ns, a.vectors)?;
                return Ok(());
            };
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            let c = mnemo_host::transfer::export(
                &mnemo,
                &mut std::io::BufWriter::new(file),
                ns,
                a.vectors,
            )?;
            eprintln!(
                "exported {} memories, {} episodes, {} sessions, {} entities, {} facts, {} vectors to {}",
                c.memories,
                c.episodes,
                c.sessions,
                c.entities,
                c.facts,
                c.vectors,
                path.display()
            );
        }
        Command::Import(a) => {
            let reader: Box<dyn BufRead> = if a.file.as_os_str() == "-" {
                Box::new(std::io::stdin().lock())
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(&a.file)
                        .with_context(|| format!("opening {}", a.file.display()))?,
                ))
            };
            let bar = progress(0, "importing");
            let c = mnemo_host::transfer::import(&mut mnemo, reader, |done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })?;
            bar.finish_and_clear();
            let embedded = backfill_with_progress(&mut mnemo)?;
            if a.json {
                return print_json(&serde_json::json!({ "counts": c, "embedded": embedded }));
            }
            println!(
                "imported {} memories, {} episodes, {} sessions, {} entities, {} facts: {} created, {} already there, {} merged; {} vectors kept, {} embedded",
                c.memories,
                c.episodes,
                c.sessions,
                c.entities,
                c.facts,
                c.created,
                c.existing,
                c.merged,
                c.vectors,
                embedded
            );
        }
        Command::Entity(a) => {
            let profiles = mnemo.entity_info(&a.ns.namespace, &a.name, a.limit)?;
            if a.json {
                return print_json(&profiles);
            }
            if profiles.is_empty() {
                return Err(Failure {
                    code: 3,
                    message: format!("no entity named `{}`", a.name),
                });
            }
            for p in &profiles {
                let e = &p.entity;
                println!(
                    "{} ({}) — {} mentions; aliases: {}",
                    e.canonical_name,
                    e.entity_type.as_str(),
                    e.mention_count,
                    e.aliases.join(", ")
                );
                p.memories.iter().for_each(print_memory);
                for ep in &p.episodes {
                    println!(
                        "{}  [{} {}]  {}",
                        ep.id,
                        ep.session_id,
                        ep.source_role,
                        one_line(&ep.content, 100)
                    );
                }
            }
        }
        Command::Fade { json } => {
            let r = mnemo.fade()?;
            if json {
                return print_json(&r);
            }
            println!(
                "examined {}, faded {}, moved {} to the trash",
                r.examined, r.faded, r.pruned
            );
        }
        Command::Consolidate(a) => {
            let req = ConsolidateRequest {
                namespace: a.namespace,
                dry: a.dry_run,
                if_changed: false,
            };
            let r = mnemo.consolidate(req)?;
            if a.json {
                return print_json(&r);
            }
            println!(
                "epoch {}{}: examined {}, decayed {}, {} sessions consolidated, {} facts added, {} topics",
                r.epoch,
                if r.dry {
                    " (dry run: nothing written)"
                } else {
                    ""
                },
                r.examined,
                r.decayed,
                r.sessions.len(),
                r.facts_added,
                r.topics
            );
            for x in &r.actions {
                let layers = match (x.from_layer, x.to_layer) {
                    (Some(f), Some(t)) => format!(" {f}→{t}"),
                    _ => String::new(),
                };
                println!("  {:<12} {}{layers}  {}", x.action, x.memory_id, x.detail);
            }
            for w in &r.warnings {
                eprintln!("warning: {w}");
            }
        }
        Command::Resume(a) => {
            let r = mnemo.resume(ResumeRequest {
                namespace: a.ns.namespace,
                hours: a.hours,
            })?;
            if a.json {
                return print_json(&r);
            }
            print!("{}", r.text);
        }
        Command::Sessions(a) => {
            use mnemo_core::ports::Storage;
            let store = &mnemo.ports().store;
            let ns = &a.ns.namespace;
            let Some(id) = &a.id else {
                let sessions = store.sessions(ns, a.pending, a.limit)?;
                if a.json {
                    return print_json(&sessions);
                }
                for s in &sessions {
                    let state = match s.consolidated_at {
                        Some(at) => format!("consolidated at {at}"),
                        None => "pending".to_string(),
                    };
                    println!(
                        "{}  {} turns  last seen {}  {state}",
                        s.id, s.turn_count, s.last_seen_at
                    );
                }
                return Ok(());
            };
            let session = store
                .get_session(ns, id)
                .map_err(anyhow::Error::from)?
                .ok_or_else(|| Failure {
                    code: 3,
                    message: format!("no session `{id}` in namespace `{ns}`"),
                })?;
            let turns = store
                .session_episodes(ns, id, 0, a.limit)
                .map_err(anyhow::Error::from)?;
            if a.json {
                return print_json(&serde_json::json!({ "session": session, "episodes": turns }));
            }
            for t in &turns {
                println!("{}  {}: {}", t.event_time, t.source_role, t.content);
            }
        }
        Command::Topics(a) => {
            if a.rebuild {
                mnemo.rebuild_topics(Some(&a.ns.namespace))?;
            }
            let topics = mnemo.topics(&a.ns.namespace, &a.ids)?;
            if a.json {
                return print_json(&topics);
            }
            if topics.is_empty() {
                println!("no topics yet (they are built by `mnemo consolidate` or `--rebuild`)");
            }
            for t in topics {
                println!("{}: \"{}\"", t.id, t.name);
                for m in &t.memories {
                    println!("  {}  {}", m.id, one_line(&m.content, 100));
                }
            }
        }
        Command::Context(a) => {
            let b = mnemo.context(&a.ns.namespace, &a.prompt, a.session.as_deref(), a.limit)?;
            if a.json {
                return print_json(&b);
            }
            print!("{}", b.text);
        }
        Command::Reflect(a) => {
            let r = mnemo.reflect(&a.ns.namespace, a.force)?;
            if a.json {
                return print_json(&r);
            }
            match (&r.memory, &r.skipped) {
                (Some(m), _) => println!("{}  {}", m.id, m.content),
                (None, Some(why)) => println!("no reflection: {why}"),
                (None, None) => {}
            }
        }
        Command::Facts(c) => match c {
            FactsCommand::Add {
                subject,
                predicate,
                object,
                ns,
                exclusive,
            } => {
                let out = mnemo.add_fact(FactInput {
                    namespace: ns.namespace,
                    subject,
                    predicate,
                    object,
                    exclusive,
                    ..Default::default()
                })?;
                print_facts(std::slice::from_ref(&out.fact));
                for old in out.superseded {
                    println!("superseded {} ({})", old.id, old.object);
                }
            }
            FactsCommand::Query {
                entity,
                ns,
                history,
            } => print_facts(&mnemo.query_facts(FactQuery {
                namespaces: vec![ns.namespace],
                entity: Some(entity),
                include_invalid: history,
                ..Default::default()
            })?),
            FactsCommand::Graph { entity, ns, hops } => {
                print_facts(&mnemo.fact_graph(&ns.namespace, &entity, hops)?)
            }
            FactsCommand::Conflicts { ns } => {
                let pairs = mnemo.fact_conflicts(&ns.namespace)?;
                if pairs.is_empty() {
                    println!("no conflicts");
                }
                for (a, b) in pairs {
                    println!(
                        "{} {}: `{}` ({}) vs `{}` ({})",
                        a.subject, a.predicate, a.object, a.id, b.object, b.id
                    );
                }
            }
        },
        Command::Enrich(a) => {
            let r = mnemo.enrich(a.limit)?;
            if a.json {
                return print_json(&r);
            }
            if r.ran {
                println!("examined {}, linked {} entities", r.examined, r.linked);
            } else {
                println!("skipped: no accurate NER provider beyond the fast ones");
            }
        }
        Command::LlmUsage(a) => {
            let store = &mnemo.ports().store;
            let (summary, latest) = (store.usage_summary()?, store.usage(a.limit)?);
            if a.json {
                return print_json(&serde_json::json!({ "summary": summary, "latest": latest }));
            }
            if summary.is_empty() {
                println!("no LLM or embedding calls recorded");
            }
            for s in &summary {
                println!(
                    "{:<16} {:<28} {:>6} calls {:>4} failed {:>9} in {:>9} out {:>8} ms",
                    s.component,
                    s.model,
                    s.calls,
                    s.failures,
                    s.input_tokens,
                    s.output_tokens,
                    s.total_ms
                );
            }
        }
        Command::Serve(_)
        | Command::Bench(_)
        | Command::Ner(_)
        | Command::Eval(_)
        | Command::Mcp => {}
    }
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnLine {
    session_id: String,
    role: String,
    content: String,
    namespace: Option<String>,
    event_time: Option<Millis>,
    attributes: Option<serde_json::Value>,
}

fn ingest(mnemo: &mut Mnemo, a: IngestArgs) -> Out {
    let Some(path) = a.jsonl else {
        let turn = Turn {
            namespace: a.ns.namespace,
            session_id: a.session.unwrap_or_default(),
            role: a.role.unwrap_or_default(),
            content: a.text.unwrap_or_default(),
            ..Default::default()
        };
        let out = mnemo.ingest(turn)?;
        if a.json {
            return print_json(&out);
        }
        println!(
            "stored {} in session {}",
            out.episode.id, out.episode.session_id
        );
        if !out.pending_sessions.is_empty() {
            println!(
                "sessions due for consolidation: {}",
                out.pending_sessions.join(", ")
            );
        }
        return Ok(());
    };
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?,
        ))
    };
    // Parse everything first: a bad line means nothing is written.
    let mut turns = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.context("reading turns")?;
        if line.trim().is_empty() {
            continue;
        }
        let t: TurnLine = serde_json::from_str(&line).map_err(|e| Failure {
            code: 2,
            message: format!("line {}: {e}", i + 1),
        })?;
        turns.push(Turn {
            namespace: t.namespace.unwrap_or_else(|| a.ns.namespace.clone()),
            session_id: t.session_id,
            role: t.role,
            content: t.content,
            event_time: t.event_time,
            attributes: t.attributes.map(|v| v.to_string()),
        });
    }
    let bar = progress(turns.len() as u64, "ingesting");
    let stored = turns.len();
    mnemo.atomically(|m| -> Out {
        for (i, t) in turns.into_iter().enumerate() {
            m.ingest(t).map_err(|e| {
                let f = Failure::from(e);
                Failure {
                    code: f.code,
                    message: format!("turn {}: {}", i + 1, f.message),
                }
            })?;
            bar.inc(1);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    let n = mnemo.backfill_all(256, |_| {})?;
    if a.json {
        return print_json(&serde_json::json!({ "stored": stored, "embedded": n }));
    }
    let _ = writeln!(std::io::stdout(), "stored {stored} turns");
    Ok(())
}

fn ner(config: &Config, a: &NerArgs) -> Out {
    let pipeline = mnemo_host::mnemo::ner_pipeline(config)?;
    let (mentions, failures) = pipeline.extract_reporting(&a.text, a.strategy);
    for f in &failures {
        eprintln!("warning: {f}");
    }
    if a.json {
        return print_json(&mentions);
    }
    if mentions.is_empty() {
        println!("no entities");
    }
    for m in &mentions {
        println!(
            "{:<14} {:<30} {:>4}..{:<4} {:.2}  {}",
            m.entity_type.as_str(),
            m.text,
            m.start,
            m.end,
            m.confidence,
            m.provider
        );
    }
    Ok(())
}

/// The progress bar of a long job: what it does, the bar, done/total, rate
/// and time left. indicatif draws it on a terminal only (stderr), so scripts
/// and `--json` output are left clean.
pub(crate) fn progress(len: u64, what: &'static str) -> indicatif::ProgressBar {
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>10} [{bar:32}] {pos}/{len} {per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    indicatif::ProgressBar::new(len)
        .with_style(style)
        .with_message(what)
}

/// Embeds every row still without a vector, behind a progress bar sized by
/// the store's count of missing vectors.
fn backfill_with_progress(mnemo: &mut Mnemo) -> anyhow::Result<usize> {
    let missing = mnemo.ports().store.integrity()?.missing_vectors;
    let bar = progress(missing, "embedding");
    let n = mnemo.backfill_all(256, |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    Ok(n)
}
