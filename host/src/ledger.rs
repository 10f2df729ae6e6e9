//! The usage ledger: every LLM and embedding call (component, model, tokens,
//! duration, outcome). Providers append to a shared in-memory queue; the
//! host writes the queue to the `llm_usage` table on its database thread
//! after each engine call, so providers never touch SQLite.

use std::sync::{Arc, Mutex};

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    pub at: i64,
    pub component: String,
    pub model: String,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub duration_ms: u64,
    /// `ok`, or the error kind (`timeout`, `http 429`, `malformed`, ...).
    pub outcome: String,
}

#[derive(Clone, Default)]
pub struct Ledger {
    pending: Arc<Mutex<Vec<Usage>>>,
}

impl Ledger {
    pub fn record(&self, u: Usage) {
        if let Ok(mut p) = self.pending.lock() {
            p.push(u);
        }
    }

    pub fn take(&self) -> Vec<Usage> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
