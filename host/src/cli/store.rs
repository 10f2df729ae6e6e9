//! Commands on the store as a whole: stats, reindex, export, import,
//! llm-usage.

use std::io::BufRead;
use std::path::PathBuf;

use crate::Mnemo;
use anyhow::Context;
use clap::Args;

use super::output::*;

#[derive(Args)]
pub(super) struct StatsArgs {
    /// Only this namespace (default: the whole store).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ReindexArgs {
    /// Forget all vectors and re-embed everything with the configured embedder.
    #[arg(long)]
    embeddings: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ExportArgs {
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
pub(super) struct ImportArgs {
    /// An export file; `-` reads stdin.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct UsageArgs {
    /// How many of the latest calls to show.
    #[arg(long, default_value_t = crate::ledger::USAGE_LIMIT)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn stats(mnemo: &mut Mnemo, a: StatsArgs) -> Out {
    let s = mnemo.stats(a.namespace.as_deref())?;
    let llm = mnemo.llm_status(a.namespace.as_deref())?;
    if a.json {
        let mut v = serde_json::to_value(&s).context("encoding stats")?;
        v["total"] = serde_json::json!(s.active);
        v["llm"] = serde_json::to_value(&llm).context("encoding the LLM state")?;
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
    print_llm_state(&llm, false);
    Ok(())
}

/// The circuits that failed and the waiting items: counts, or (`items`)
/// one line each.
fn print_llm_state(state: &mnemo_core::model::LlmState, items: bool) {
    for c in &state.circuits {
        let since = c
            .opened_at
            .map_or(String::new(), |at| format!(" since {}", utc_minute(at)));
        println!(
            "llm step {}: {}{since}, {} consecutive failure(s); last: {}",
            c.component,
            if c.open { "OPEN" } else { "closed" },
            c.failures,
            c.last_error.as_deref().unwrap_or("-")
        );
    }
    let parked = state
        .waiting
        .iter()
        .filter(|w| w.retry_at.is_none())
        .count();
    if !state.waiting.is_empty() {
        println!(
            "llm waiting: {} item(s), {parked} parked (`mnemo llm-waiting`)",
            state.waiting.len()
        );
    }
    if !items {
        return;
    }
    for w in &state.waiting {
        let when = w.retry_at.map_or("parked".into(), |at| {
            format!("retry after {}", utc_minute(at))
        });
        println!(
            "{}/{} {} — {} failure(s), {when}; last: {}",
            w.namespace, w.step, w.id, w.failures, w.last_error
        );
    }
}

pub(super) fn llm_waiting(mnemo: &mut Mnemo, a: StatsArgs) -> Out {
    let state = mnemo.llm_status(a.namespace.as_deref())?;
    if a.json {
        return print_json(&state);
    }
    if state.circuits.is_empty() && state.waiting.is_empty() {
        println!("every LLM step answers; nothing waits");
    }
    print_llm_state(&state, true);
    Ok(())
}

pub(super) fn reindex(mnemo: &mut Mnemo, a: ReindexArgs) -> Out {
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
    let n = backfill_with_progress(mnemo)?;
    if a.json {
        return print_json(&serde_json::json!({ "embedded": n, "reset": a.embeddings }));
    }
    println!("embedded {n} rows");
    Ok(())
}

pub(super) fn export(mnemo: &mut Mnemo, a: ExportArgs) -> Out {
    let ns = a.namespace.as_deref();
    let Some(path) = &a.out else {
        crate::transfer::export(mnemo, &mut std::io::stdout().lock(), ns, a.vectors)?;
        return Ok(());
    };
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let c = crate::transfer::export(mnemo, &mut std::io::BufWriter::new(file), ns, a.vectors)?;
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
    Ok(())
}

pub(super) fn import(mnemo: &mut Mnemo, a: ImportArgs) -> Out {
    let reader: Box<dyn BufRead> = if a.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(&a.file)
                .with_context(|| format!("opening {}", a.file.display()))?,
        ))
    };
    let bar = progress(0, "importing");
    let c = crate::transfer::import(mnemo, reader, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let embedded = backfill_with_progress(mnemo)?;
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
    Ok(())
}

pub(super) fn llm_usage(mnemo: &mut Mnemo, a: UsageArgs) -> Out {
    let report = mnemo.usage_report(a.limit)?;
    if a.json {
        return print_json(&report);
    }
    if report.summary.is_empty() {
        println!("no LLM or embedding calls recorded");
    }
    for row in &report.summary {
        let s = &row.totals;
        let cost = row
            .cost_usd
            .map_or("no price".into(), |c| format!("${c:.4}"));
        println!(
            "{:<16} {:<28} {:>6} calls {:>4} failed {:>9} in {:>9} out {:>8} ms {:>10}",
            s.component,
            s.model,
            s.calls,
            s.failures,
            s.input_tokens,
            s.output_tokens,
            s.total_ms,
            cost
        );
    }
    Ok(())
}

/// Embeds every row still without a vector, behind a progress bar sized by
/// the store's count of missing vectors.
pub(super) fn backfill_with_progress(mnemo: &mut Mnemo) -> anyhow::Result<usize> {
    let missing = mnemo.ports().store.integrity()?.missing_vectors;
    let bar = progress(missing, "embedding");
    let n = mnemo.backfill_all(256, |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    Ok(n)
}

#[derive(Args)]
pub struct MigrateArgs {
    /// The store to copy: a SQLite file or a `postgres://` URL.
    #[arg(long)]
    from: PathBuf,
    /// The empty store to copy into: a `postgres://` URL or a SQLite file.
    #[arg(long)]
    to: PathBuf,
    /// Print what was copied as JSON.
    #[arg(long)]
    json: bool,
}

/// `mnemo migrate`: everything from one backend into another, with a
/// progress bar per kind, then the counts verified (`migrate.rs`).
pub(super) fn migrate(a: MigrateArgs) -> Out {
    let mut bar: Option<(&'static str, indicatif::ProgressBar)> = None;
    let copied = crate::migrate::migrate(&a.from, &a.to, |what, done, total| {
        if bar.as_ref().is_none_or(|(w, _)| *w != what) {
            if let Some((_, b)) = bar.take() {
                b.finish();
            }
            bar = Some((what, progress(total, what)));
        }
        if let Some((_, b)) = &bar {
            b.set_position(done);
        }
    });
    if let Some((_, b)) = bar {
        b.finish();
    }
    let c = copied?;
    if a.json {
        return print_json(&c);
    }
    println!(
        "copied and verified: {} memories ({} vectors), {} turns ({} vectors), {} sessions, {} entities ({} links), \
         {} facts, {} versions, {} decisions, {} usage lines, {} metadata entries",
        c.memories,
        c.memory_vectors,
        c.episodes,
        c.episode_vectors,
        c.sessions,
        c.entities,
        c.links,
        c.facts,
        c.versions,
        c.decisions,
        c.usage,
        c.metadata
    );
    Ok(())
}
