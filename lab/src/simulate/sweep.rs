//! `mnemo-lab simulate lifecycle --seeds A..B`: the simulation over a
//! range of seeds, each with no LLM and with the scripted one (faults
//! included), `--jobs` at a time. Each seed's world differs (which facts,
//! when corrected, restated, forgotten; which days idle), so a sweep finds
//! the interleavings one seed never meets — seed 7's 18-link chain was
//! one. It prints one row per run and, for the first failing run, the
//! command that reproduces it alone, and fails when any verdict is not
//! zero.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use mnemo_host::Config;
use serde::Serialize;

use super::{SimArgs, SimReport};

/// A range `A..B` (B excluded) or `A..=B`.
pub fn parse_seeds(s: &str) -> Result<std::ops::Range<u64>, String> {
    let bad = || format!("`{s}` is not a seed range such as 1..41 or 1..=40");
    let (a, b, inclusive) = match (s.split_once("..="), s.split_once("..")) {
        (Some((a, b)), _) => (a, b, true),
        (None, Some((a, b))) => (a, b, false),
        _ => return Err(bad()),
    };
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    let end = if inclusive { b + 1 } else { b };
    if end <= a {
        return Err(format!("`{s}` holds no seed"));
    }
    Ok(a..end)
}

/// One run's verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub seed: u64,
    pub llm: &'static str,
    pub lost: usize,
    pub hidden_recent: usize,
    pub core_decayed: usize,
    /// Probe recall@10 on the last day.
    pub probe_recall: f32,
    /// Probes whose expected memory was not active on the last day.
    pub probe_inactive: usize,
    /// Scheduled runs that failed (they run again at their next time).
    pub failed_tasks: usize,
    /// The first day whose end broke an invariant.
    pub first_failing_day: Option<u32>,
    /// Earlier states kept in the histories at the end (history kept).
    pub versions: u64,
    /// What failed outright (the simulation could not finish), if anything.
    pub error: Option<String>,
}

impl SweepRow {
    pub fn failed(&self) -> bool {
        self.error.is_some()
            || self.first_failing_day.is_some()
            || self.lost + self.hidden_recent + self.core_decayed > 0
    }

    fn of(seed: u64, llm: &'static str, r: anyhow::Result<SimReport>) -> Self {
        match r {
            Ok(r) => Self {
                seed,
                llm,
                lost: r.lost,
                hidden_recent: r.hidden_recent,
                core_decayed: r.core_decayed,
                probe_recall: r.probe_recall.last().copied().unwrap_or(0.0),
                probe_inactive: r.probe_inactive.last().copied().unwrap_or(0),
                failed_tasks: r.failed_tasks.len(),
                first_failing_day: r.first_failure.map(|(d, _)| d),
                versions: r.versions,
                error: None,
            },
            Err(e) => Self {
                seed,
                llm,
                lost: 0,
                hidden_recent: 0,
                core_decayed: 0,
                probe_recall: 0.0,
                probe_inactive: 0,
                failed_tasks: 0,
                first_failing_day: None,
                versions: 0,
                error: Some(format!("{e:#}")),
            },
        }
    }
}

/// Runs every seed of `seeds` in each LLM mode of `modes` (`true`:
/// scripted), `jobs` at a time; rows in seed order.
pub fn run(
    config: &Config,
    base: &SimArgs,
    seeds: std::ops::Range<u64>,
    modes: &[bool],
    jobs: usize,
) -> Vec<SweepRow> {
    let runs: Vec<(u64, bool)> = seeds
        .flat_map(|s| modes.iter().map(move |&m| (s, m)))
        .collect();
    let next = AtomicUsize::new(0);
    let rows = Mutex::new(Vec::with_capacity(runs.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(seed, scripted)) = runs.get(i) else {
                        return;
                    };
                    let args = SimArgs {
                        seed,
                        scripted_llm: scripted,
                        keep: None,
                        ..base.clone()
                    };
                    let llm = if scripted { "scripted" } else { "off" };
                    let row = SweepRow::of(seed, llm, super::run(config, &args));
                    eprintln!(
                        "seed {seed} llm {llm}: {}",
                        if row.failed() { "FAILED" } else { "ok" }
                    );
                    rows.lock().unwrap_or_else(|e| e.into_inner()).push(row);
                }
            });
        }
    });
    let mut rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    rows.sort_by_key(|r| (r.seed, r.llm));
    rows
}

/// The table, a summary line, and the first failure's command.
pub fn print(rows: &[SweepRow], days: u32) {
    println!(
        "{:>6} {:>8} {:>5} {:>13} {:>12} {:>12} {:>14} {:>12} {:>8} {:>11}",
        "seed",
        "llm",
        "lost",
        "hidden_recent",
        "core_decayed",
        "probe_r@10",
        "probe_inactive",
        "failed_tasks",
        "versions",
        "first_fault"
    );
    for r in rows {
        println!(
            "{:>6} {:>8} {:>5} {:>13} {:>12} {:>12.3} {:>14} {:>12} {:>8} {:>11}{}",
            r.seed,
            r.llm,
            r.lost,
            r.hidden_recent,
            r.core_decayed,
            r.probe_recall,
            r.probe_inactive,
            r.failed_tasks,
            r.versions,
            r.first_failing_day
                .map_or_else(|| "-".to_string(), |d| format!("day {d}")),
            r.error
                .as_deref()
                .map(|e| format!("  error: {e}"))
                .unwrap_or_default()
        );
    }
    let failed = rows.iter().filter(|r| r.failed()).count();
    let mean =
        rows.iter().map(|r| f64::from(r.probe_recall)).sum::<f64>() / rows.len().max(1) as f64;
    println!(
        "\n{} runs over {days} days: {failed} failed; mean final probe recall@10 {mean:.3}; lost {} hidden_recent {} core_decayed {}",
        rows.len(),
        rows.iter().map(|r| r.lost).sum::<usize>(),
        rows.iter().map(|r| r.hidden_recent).sum::<usize>(),
        rows.iter().map(|r| r.core_decayed).sum::<usize>(),
    );
    if let Some(first) = rows.iter().find(|r| r.failed()) {
        println!(
            "first failure, alone: MNEMO_EMBEDDER=hash mnemo-lab simulate lifecycle --days {days} --seed {} --llm {} --keep /tmp/seed{}.db",
            first.seed, first.llm, first.seed
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_read_as_rust_writes_them() {
        assert_eq!(parse_seeds("1..41"), Ok(1..41));
        assert_eq!(parse_seeds("1..=40"), Ok(1..41));
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("7").is_err());
    }
}
