//! `mnemo-lab simulate lifecycle`: the 90-day lifecycle simulation
//! (`mnemo_host::simulate`), printed as a table every ten days and the
//! verdicts, or as JSON; with `--seeds A..B`, a sweep of many seeds
//! (`sweep.rs`). Exits 1 when a verdict is not zero.

use crate::simulate::{self, SimArgs};
use clap::{Args, Subcommand};
use mnemo_host::Config;

use mnemo_host::cli::output::{Failure, Out, print_json};

#[derive(Subcommand)]
pub enum SimulateCommand {
    /// Days of sessions, restatements, corrections, idle weeks and every
    /// scheduled task, through the real core on a real SQLite file.
    Lifecycle(LifecycleArgs),
}

#[derive(Args)]
pub struct LifecycleArgs {
    #[arg(long, default_value_t = 90)]
    days: u32,
    #[arg(long, default_value_t = 1, conflicts_with = "seeds")]
    seed: u64,
    /// A sweep: every seed of the range (`1..41`, `1..=40`), one row each.
    #[arg(long, value_parser = crate::simulate::sweep::parse_seeds)]
    seeds: Option<std::ops::Range<u64>>,
    /// Runs of a sweep at a time (default: one per CPU).
    #[arg(long)]
    jobs: Option<usize>,
    /// `off` (the default setting), `scripted` (a local scripted LLM that
    /// also answers malformed and truncated output) or `both` (the
    /// default of a sweep: each seed in both modes).
    #[arg(long, value_parser = ["off", "scripted", "both"])]
    llm: Option<String>,
    /// `hash` (default: fast, no model) or `configured` (the embedder of
    /// the configuration, the local model unless set otherwise).
    #[arg(long, default_value = "hash", value_parser = ["hash", "configured"])]
    embedder: String,
    /// `default` or `off`: with `off` the bounds of LLM work are lifted
    /// (failed items retried at every cycle, no circuit, no budget), for
    /// the calls per day before and after them.
    #[arg(long, default_value = "default", value_parser = ["default", "off"])]
    llm_bounds: String,
    /// Keep the simulated store in this new file (inspect it with
    /// `mnemo --db FILE ...`).
    #[arg(long, value_name = "FILE")]
    keep: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn run(config: &Config, cmd: SimulateCommand) -> Out {
    let SimulateCommand::Lifecycle(a) = cmd;
    let args = SimArgs {
        days: a.days,
        seed: a.seed,
        scripted_llm: a.llm.as_deref() == Some("scripted"),
        keep: a.keep.clone(),
        real_embedder: a.embedder == "configured",
        unbounded_llm: a.llm_bounds == "off",
    };
    if let Some(seeds) = a.seeds.clone() {
        return sweep(config, &args, seeds, &a);
    }
    if a.llm.as_deref() == Some("both") {
        return Err(Failure {
            code: 2,
            message: "--llm both is for a sweep (--seeds A..B)".into(),
        });
    }
    let report = simulate::run(config, &args)?;
    if a.json {
        print_json(&report)?;
    } else {
        println!(
            "{:>4} {:>6} {:>6} {:>7} {:>5} {:>6} {:>8} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>8}",
            "day",
            "stored",
            "buffer",
            "working",
            "core",
            "trash",
            "promoted",
            "merged",
            "evicted",
            "faded",
            "restored",
            "facts",
            "topics",
            "llm/day"
        );
        let mut last = (0u32, 0u64);
        for r in &report.rows {
            println!(
                "{:>4} {:>6} {:>6} {:>7} {:>5} {:>6} {:>8} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>8}",
                r.day,
                r.stored,
                r.buffer,
                r.working,
                r.core,
                r.trash,
                r.promoted,
                r.merged,
                r.evicted,
                r.faded,
                r.restored,
                r.facts,
                r.topics,
                format!(
                    "{:.1}",
                    (r.llm_calls - last.1) as f64 / f64::from((r.day - last.0).max(1))
                )
            );
            last = (r.day, r.llm_calls);
        }
        let recall: Vec<String> = report
            .probe_days
            .iter()
            .zip(&report.probe_recall)
            .map(|(d, r)| format!("day {d}: {r:.3}"))
            .collect();
        println!(
            "\nllm {} ({} calls, {} malformed or truncated); embedder {}; {} statements; {} probes",
            report.llm,
            report.llm_calls,
            report.llm_faults,
            report.embedder,
            report.statements,
            report.probes
        );
        println!("probe recall@10  {}", recall.join("  "));
        println!(
            "probe answers not active: {}",
            report
                .probe_inactive
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        );
        println!(
            "lost {}  hidden_recent {}  core_decayed {}  (earlier states kept: {})",
            report.lost, report.hidden_recent, report.core_decayed, report.versions
        );
        for e in &report.examples {
            println!("  {e}");
        }
        if let Some((day, example)) = &report.first_failure {
            println!("first broken at the end of day {day}: {example}");
        }
        if !report.failed_tasks.is_empty() {
            println!(
                "{} scheduled runs failed (each task runs again at its next time):",
                report.failed_tasks.len()
            );
            for e in &report.failed_tasks {
                println!("  {e}");
            }
        }
    }
    if report.lost + report.hidden_recent + report.core_decayed > 0
        || report.first_failure.is_some()
    {
        return Err(Failure {
            code: 1,
            message: format!(
                "lost {}, hidden_recent {}, core_decayed {} (first broken on day {}): not zero",
                report.lost,
                report.hidden_recent,
                report.core_decayed,
                report.first_failure.as_ref().map_or(0, |(d, _)| *d)
            ),
        });
    }
    Ok(())
}

fn sweep(config: &Config, args: &SimArgs, seeds: std::ops::Range<u64>, a: &LifecycleArgs) -> Out {
    use crate::simulate::sweep;
    if a.keep.is_some() {
        return Err(Failure {
            code: 2,
            message: "--keep names one store: give it with --seed, not --seeds".into(),
        });
    }
    let modes: &[bool] = match a.llm.as_deref() {
        Some("off") => &[false],
        Some("scripted") => &[true],
        _ => &[false, true],
    };
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let rows = sweep::run(config, args, seeds, modes, jobs);
    if a.json {
        print_json(&rows)?;
    } else {
        sweep::print(&rows, a.days);
    }
    let failed = rows.iter().filter(|r| r.failed()).count();
    if failed > 0 {
        return Err(Failure {
            code: 1,
            message: format!("{failed} of {} runs failed", rows.len()),
        });
    }
    Ok(())
}
