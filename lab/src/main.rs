//! `mnemo-lab`: the measuring rigs behind mnemo's published figures —
//! benchmarks and load generators (`bench`), the LoCoMo retrieval evaluation
//! (`eval`) and the lifecycle simulation (`simulate`). It drives the host as
//! a library (and `mnemo serve` as a child process for the HTTP benches), so
//! the `mnemo` binary stays what an operator runs. docs/benchmarks.md,
//! docs/evaluation.md and docs/reliability.md name the command behind each
//! figure.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod context_eval;
mod eval;
mod simulate;

#[derive(Parser)]
#[command(name = "mnemo-lab", version, about = "mnemo's benchmarks, evaluation and simulation", long_about = None)]
struct Lab {
    #[command(flatten)]
    store: mnemo_host::cli::StoreArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure retrieval quality on an evaluation set.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Simulate days of an agent's life through the real core and check nothing was lost.
    #[command(subcommand)]
    Simulate(simulate::cli::SimulateCommand),
    /// Measure start-up, boundary calls, throughput and recall latency.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    mnemo_host::embedding::configure_threads();
    let lab = Lab::parse();
    let config = match mnemo_host::cli::setup(lab.store.db, lab.store.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result: mnemo_host::cli::output::Out = match lab.command {
        Command::Eval(cmd) => eval::run(&config, cmd).map_err(Into::into),
        Command::Simulate(cmd) => simulate::cli::run(&config, cmd),
        Command::Bench(args) => bench::run(&config, args).map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message.lines().next().unwrap_or("failed"));
            ExitCode::from(f.code)
        }
    }
}
