//! The `llm_usage` table: writing the ledger and reading it back.

use rmcp::schemars::{self, JsonSchema};
use rusqlite::params;
use serde::Serialize;

use super::SqliteStore;

/// One LLM or embedding call, as the ledger records it (a row of `llm_usage`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Usage {
    /// When the call was made (milliseconds since the Unix epoch, UTC).
    pub at: i64,
    /// The pipeline step (`embedding`, `gate`, `merge`, `extract`, …).
    pub component: String,
    /// The model that answered.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Completion tokens.
    pub output_tokens: u32,
    /// How long it took (milliseconds).
    pub duration_ms: u64,
    /// `ok`, or the error kind (`timeout`, `http 429`, `malformed`, ...).
    pub outcome: String,
}

/// Totals per component and model.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UsageSummary {
    /// The pipeline step (`embedding`, `gate`, `merge`, `extract`, …).
    pub component: String,
    /// The model that answered.
    pub model: String,
    /// Calls made.
    pub calls: u64,
    /// Calls that failed (timeouts, HTTP errors, malformed answers).
    pub failures: u64,
    /// Prompt tokens, summed.
    pub input_tokens: u64,
    /// Completion tokens, summed.
    pub output_tokens: u64,
    /// Time spent, summed (milliseconds).
    pub total_ms: u64,
}

impl SqliteStore {
    pub fn record_usage(&self, entries: &[Usage]) -> anyhow::Result<()> {
        let mut stmt = self.connection().prepare_cached(
            "INSERT INTO llm_usage (at, component, model, input_tokens, output_tokens, duration_ms, outcome) \
             VALUES (?1,?2,?3,?4,?5,?6,?7)",
        )?;
        for u in entries {
            stmt.execute(params![
                u.at,
                u.component,
                u.model,
                u.input_tokens,
                u.output_tokens,
                u.duration_ms as i64,
                u.outcome
            ])?;
        }
        Ok(())
    }

    /// The latest calls, newest first.
    pub fn usage(&self, limit: u32) -> anyhow::Result<Vec<Usage>> {
        let mut stmt = self.connection().prepare_cached(
            "SELECT at, component, model, input_tokens, output_tokens, duration_ms, outcome FROM llm_usage \
             ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], |r| {
            Ok(Usage {
                at: r.get(0)?,
                component: r.get(1)?,
                model: r.get(2)?,
                input_tokens: r.get(3)?,
                output_tokens: r.get(4)?,
                duration_ms: r.get::<_, i64>(5)? as u64,
                outcome: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn usage_summary(&self) -> anyhow::Result<Vec<UsageSummary>> {
        let mut stmt = self.connection().prepare(
            "SELECT component, model, COUNT(*), SUM(outcome != 'ok'), SUM(input_tokens), SUM(output_tokens), \
             SUM(duration_ms) FROM llm_usage GROUP BY component, model ORDER BY component, model",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(UsageSummary {
                component: r.get(0)?,
                model: r.get(1)?,
                calls: r.get::<_, i64>(2)? as u64,
                failures: r.get::<_, i64>(3)? as u64,
                input_tokens: r.get::<_, i64>(4)? as u64,
                output_tokens: r.get::<_, i64>(5)? as u64,
                total_ms: r.get::<_, i64>(6)? as u64,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
