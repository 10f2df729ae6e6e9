//! `mnemo-lab simulate lifecycle`: the 90-day lifecycle simulation
//! (`mnemo_host::simulate`), printed as a table every ten days and the
//! verdicts, or as JSON. Exits 1 when a verdict is not zero.

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
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `off` (the default setting) or `scripted`: a local scripted LLM that
    /// also answers malformed and truncated output.
    #[arg(long, default_value = "off", value_parser = ["off", "scripted"])]
    llm: String,
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
    let report = simulate::run(
        config,
        &SimArgs {
            days: a.days,
            seed: a.seed,
            scripted_llm: a.llm == "scripted",
            keep: a.keep,
            real_embedder: a.embedder == "configured",
            unbounded_llm: a.llm_bounds == "off",
        },
    )?;
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
            "lost {}  hidden_recent {}  core_decayed {}",
            report.lost, report.hidden_recent, report.core_decayed
        );
        for e in &report.examples {
            println!("  {e}");
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
    if report.lost + report.hidden_recent + report.core_decayed > 0 {
        return Err(Failure {
            code: 1,
            message: format!(
                "lost {}, hidden_recent {}, core_decayed {}: not zero",
                report.lost, report.hidden_recent, report.core_decayed
            ),
        });
    }
    Ok(())
}
