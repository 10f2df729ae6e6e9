//! The `mnemo` command line. Output is human-readable by default and JSON
//! with `--json`. Invalid input exits 2 with one line on stderr and writes
//! nothing; other failures exit 1.
//!
//! One file per command group, each with its `Args` beside its handler:
//! `memories.rs`, `dialogue.rs` (ingest, sessions, context, resume,
//! topics), `lifecycle.rs`, `knowledge.rs` (facts, entities, NER),
//! `store.rs` (stats, reindex, export, import, LLM usage), `plugins.rs`;
//! `output.rs` holds what they share. This file parses and dispatches.
//! Measuring rigs (benchmarks, evaluation, simulation) are the lab's
//! (`mnemo-lab`), which reuses [`setup`] and [`output`].

use std::path::PathBuf;
use std::process::ExitCode;

use crate::{Config, Mnemo};
use clap::{Parser, Subcommand};

mod dialogue;
mod keys;
mod knowledge;
mod lifecycle;
mod memories;
pub mod output;
mod plugins;
mod store;

use dialogue::{ContextArgs, IngestArgs, ResumeArgs, SessionsArgs, TopicsArgs};
use knowledge::{EntityArgs, FactsCommand, NerArgs};
use lifecycle::{ConsolidateArgs, DecisionsArgs, EnrichArgs, ReflectArgs, ReviewArgs};
use memories::{DeleteArgs, IdArgs, ListArgs, RecallArgs, RememberArgs};
use output::Out;
pub use output::progress;
use store::{ExportArgs, ImportArgs, ReindexArgs, StatsArgs, UsageArgs};

#[derive(Parser)]
#[command(name = "mnemo", version, about = "Long-term memory for AI agents", long_about = None)]
struct Cli {
    #[command(flatten)]
    store: StoreArgs,
    #[command(subcommand)]
    command: Command,
}

/// The two flags every command takes (`mnemo` and `mnemo-lab` alike).
#[derive(clap::Args)]
pub struct StoreArgs {
    /// Database file (default: <data dir>/memory.db).
    #[arg(long, global = true, env = "MNEMO_DB")]
    pub db: Option<PathBuf>,
    /// Config file (TOML; default: $MNEMO_CONFIG, else <data dir>/config.toml if present).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(crate::server::ServeArgs),
    /// Speak the Model Context Protocol over stdio (agent tools), with the
    /// server's engines and scheduler; `--listen` serves the HTTP API too.
    Mcp(crate::server::mcp::McpArgs),
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
    /// Change a memory's text, tags, importance or kind (the earlier state is kept).
    Edit(memories::EditArgs),
    /// Protect a memory for good: no fading, no eviction (seed 003's confirm_fact).
    Confirm(memories::IdArgs),
    /// Replace a memory with corrected text; the old one is superseded (seed 003's correct_fact).
    Correct(memories::CorrectArgs),
    /// A memory's earlier states (edits, merges, reverts), or `--revert N` to put one back.
    History(memories::HistoryArgs),
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Re-extract entities with the `accurate` strategy where few were found (seed 003's 02:00 task).
    Enrich(EnrichArgs),
    /// One consolidation cycle: sessions into facts, promotions, gate, dedup, eviction, importance decay.
    Consolidate(ConsolidateArgs),
    /// Memories modified in the last hours, newest first.
    Recent(dialogue::RecentArgs),
    /// `trigger:*` tags by how often their memories were read.
    Triggers(dialogue::TriggersArgs),
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
    /// Copy a whole store between a SQLite file and Postgres (either way), then verify the counts.
    Migrate(store::MigrateArgs),
    /// Facts: add a triple, query, walk the graph, list conflicts or history.
    #[command(subcommand)]
    Facts(FactsCommand),
    /// Run a NER strategy on a text: the merged entities of its plugins.
    Ner(NerArgs),
    /// The NER and LLM provider plugins: bundled and in the plugin folder, with their ABI versions.
    Plugins(plugins::PluginsArgs),
    /// The decision log: what the engine decided and why (reinforce, delete, restore, supersede, promote, ...).
    #[command(alias = "audit")]
    Decisions(DecisionsArgs),
    /// Seed 004's LLM review of Working and Core, under the review rules (seed 004's "audit").
    Review(ReviewArgs),
    /// The ledger of LLM and embedding calls: totals, then the latest calls.
    LlmUsage(UsageArgs),
    /// The LLM steps' circuits and the items whose step failed (waiting, or
    /// parked until `mnemo consolidate --retry`).
    LlmWaiting(StatsArgs),
    /// API keys scoped to namespaces, with a role: create, list, rotate, revoke.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match setup(cli.store.db.clone(), cli.store.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ran = run(cli, config);
    crate::traces::flush();
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message.lines().next().unwrap_or("failed"));
            ExitCode::from(f.code)
        }
    }
}

/// The clap definition of `mnemo`, for the generated CLI reference.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// What every command line does first: the settings (file, environment,
/// `--db`) become a [`Config`], and logging starts as `MNEMO_LOG` and
/// `MNEMO_LOG_FORMAT` say. On failure, the message is printed and the
/// exit code returned.
pub fn setup(db: Option<PathBuf>, config: Option<&std::path::Path>) -> Result<Config, ExitCode> {
    let config =
        match crate::config::Settings::load(config).and_then(|s| Config::from_settings(db, &s)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e:#}");
                return Err(ExitCode::from(1));
            }
        };
    let filter =
        match tracing_subscriber::EnvFilter::try_new(config.log.as_deref().unwrap_or("warn")) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("mnemo: MNEMO_LOG is not a log filter: {e}");
                return Err(ExitCode::from(2));
            }
        };
    // `MNEMO_LOG_FORMAT=json`: one JSON object per event, for log shippers.
    // Otherwise text, coloured on a terminal only (a file gets key=value).
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match config.log_format.as_deref() {
        Some("json") => fmt.json().with_filter(filter).boxed(),
        Some("text") | None => fmt
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter)
            .boxed(),
        Some(other) => {
            eprintln!("mnemo: MNEMO_LOG_FORMAT `{other}` is not `text` or `json`");
            return Err(ExitCode::from(2));
        }
    };
    // Traces (opt in): mnemo's own spans at `info`, whatever the log filter.
    let traces = match config.otlp_endpoint.as_deref() {
        Some(endpoint) => match crate::traces::layer(endpoint) {
            Ok(layer) => Some(
                layer.with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("mnemo_host", tracing::Level::INFO),
                ),
            ),
            Err(e) => {
                eprintln!("error: MNEMO_OTLP_ENDPOINT: {e:#}");
                return Err(ExitCode::from(2));
            }
        },
        None => None,
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .init();
    Ok(config)
}

fn run(cli: Cli, config: Config) -> Out {
    if let Command::Serve(args) = cli.command {
        return crate::server::serve(config, args).map_err(Into::into);
    }
    if let Command::Mcp(args) = cli.command {
        return crate::server::mcp::serve_stdio(config, args).map_err(Into::into);
    }
    if let Command::Ner(a) = &cli.command {
        return knowledge::ner(&config, a);
    }
    if let Command::Plugins(a) = &cli.command {
        return plugins::plugins(&config, a);
    }
    if let Command::Migrate(a) = cli.command {
        return store::migrate(a);
    }
    if let Command::Keys(c) = cli.command {
        return keys::run(&config, c);
    }
    let mut mnemo = Mnemo::open(&config)?;
    let m = &mut mnemo;
    match cli.command {
        Command::Remember(a) => memories::remember(m, a),
        Command::Recall(a) => memories::recall(m, a),
        Command::Get(a) => memories::get(m, a),
        Command::List(a) => memories::list(m, a),
        Command::Delete(a) => memories::delete(m, a),
        Command::Restore(a) => memories::restore(m, a),
        Command::Edit(a) => memories::edit(m, a),
        Command::History(a) => memories::history(m, a),
        Command::Confirm(a) => memories::confirm(m, a),
        Command::Correct(a) => memories::correct(m, a),
        Command::Ingest(a) => dialogue::ingest(m, a),
        Command::Sessions(a) => dialogue::sessions(m, a),
        Command::Context(a) => dialogue::context(m, a),
        Command::Resume(a) => dialogue::resume(m, a),
        Command::Recent(a) => dialogue::recent(m, a),
        Command::Triggers(a) => dialogue::triggers(m, a),
        Command::Topics(a) => dialogue::topics(m, a),
        Command::Consolidate(a) => lifecycle::consolidate(m, a),
        Command::Fade { json } => lifecycle::fade(m, json),
        Command::Enrich(a) => lifecycle::enrich(m, a),
        Command::Reflect(a) => lifecycle::reflect(m, a),
        Command::Decisions(a) => lifecycle::decisions(m, a),
        Command::Review(a) => lifecycle::review(m, a),
        Command::Facts(c) => knowledge::facts(m, c),
        Command::Entity(a) => knowledge::entity(m, a),
        Command::Stats(a) => store::stats(m, a),
        Command::Reindex(a) => store::reindex(m, a),
        Command::Export(a) => store::export(m, a),
        Command::Import(a) => store::import(m, a),
        Command::LlmUsage(a) => store::llm_usage(m, a),
        Command::LlmWaiting(a) => store::llm_waiting(m, a),
        Command::Serve(_)
        | Command::Ner(_)
        | Command::Plugins(_)
        | Command::Migrate(_)
        | Command::Keys(_)
        | Command::Mcp(_) => Ok(()),
    }
}
