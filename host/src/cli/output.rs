//! What every command shares: the failure type and its exit codes, JSON
//! and one-line printing, the namespace flag and the progress bar.

use crate::runtime::CallError;
use anyhow::Context;
use clap::Args;
use mnemo_core::CoreError;
use mnemo_core::model::*;

#[derive(Args)]
pub(super) struct Ns {
    /// Namespace (default: `default`).
    #[arg(long, short = 'n', default_value = "default")]
    pub(super) namespace: String,
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

pub type Out = Result<(), Failure>;

pub fn print_json(v: &impl serde::Serialize) -> Out {
    let s = serde_json::to_string_pretty(v).context("encoding JSON")?;
    println!("{s}");
    Ok(())
}

pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

pub(super) fn print_memory(m: &Memory) {
    println!(
        "{}  [{} {}]  {}",
        m.id,
        m.layer,
        m.kind,
        one_line(&m.content, 100)
    );
}

/// The progress bar of a long job: what it does, the bar, done/total, rate
/// and time left. indicatif draws it on a terminal only (stderr), so scripts
/// and `--json` output are left clean.
pub fn progress(len: u64, what: &'static str) -> indicatif::ProgressBar {
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>10} [{bar:32}] {pos}/{len} {per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    indicatif::ProgressBar::new(len)
        .with_style(style)
        .with_message(what)
}

/// A time in milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub(super) fn utc_minute(ms: i64) -> String {
    let (y, m, d) = mnemo_core::calendar::civil_from_millis(ms);
    let minutes = ms.rem_euclid(86_400_000) / 60_000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}
