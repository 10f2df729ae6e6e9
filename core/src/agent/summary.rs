//! The Core summary (seed 004 §3 step 19, "resume compress"): when a
//! namespace's Core no longer fits resume's budget (`RESUME_CORE_TOKENS`),
//! the cycle asks the LLM (`resume` tier) to compress it and caches the
//! summary in metadata with a fingerprint of the Core it summarises;
//! resume shows it while that Core is unchanged, and the full texts that
//! fit (with a count of the rest) otherwise. No LLM, no summary.

use serde::{Deserialize, Serialize};

use super::core_order::core_weight;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports, Storage};
use crate::prompts;
use crate::text;
use crate::thresholds::{CHARS_PER_TOKEN, RESUME_CORE_TOKENS};

/// Core memories read for a summary.
const CORE_READ: u32 = 500;

#[derive(Serialize, Deserialize)]
struct Stored {
    fingerprint: String,
    summary: String,
    at: Millis,
}

fn meta_key(namespace: &str) -> String {
    format!("core_summary:{namespace}")
}

/// Which Core a summary is of: its ids and modification times (FNV-1a).
pub(crate) fn fingerprint(core: &[Memory]) -> String {
    let mut parts: Vec<String> = core
        .iter()
        .map(|m| format!("{}@{}", m.id, m.modified_at))
        .collect();
    parts.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.join(",").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl<P: Ports> Engine<P> {
    /// The cached summary of `namespace`'s resume Core, if it is of exactly
    /// the Core with this fingerprint.
    pub(crate) fn core_summary(
        &self,
        namespace: &str,
        fingerprint: &str,
    ) -> CoreResult<Option<String>> {
        if fingerprint.is_empty() {
            return Ok(None);
        }
        let stored = self.ports().storage().get_meta(&meta_key(namespace))?;
        Ok(stored
            .and_then(|json| serde_json::from_str::<Stored>(&json).ok())
            .filter(|s| s.fingerprint == fingerprint)
            .map(|s| s.summary))
    }

    /// Writes a fresh summary when the namespace's resume Core is over its
    /// budget and changed since the last one. Returns a warning when the LLM
    /// failed (the next cycle asks again).
    pub(crate) fn summarise_core(&self, namespace: &str) -> CoreResult<Option<String>> {
        if self.ports().llm().level() == LlmLevel::Off {
            return Ok(None);
        }
        let storage = self.ports().storage();
        let mut core = storage.list_memories(&ListQuery {
            namespaces: self.readable_namespaces(namespace)?,
            layers: vec![Layer::Core],
            limit: CORE_READ,
            ..Default::default()
        })?;
        let tokens: usize = core.iter().map(|m| text::estimate_tokens(&m.content)).sum();
        if tokens <= RESUME_CORE_TOKENS {
            return Ok(None);
        }
        self.settle_all(&mut core)?;
        core.sort_by(|a, b| core_weight(b).total_cmp(&core_weight(a)));
        let fingerprint = fingerprint(&core);
        if self.core_summary(namespace, &fingerprint)?.is_some() {
            return Ok(None);
        }
        let max_chars = RESUME_CORE_TOKENS * CHARS_PER_TOKEN;
        let request = prompts::compress::request(&core, max_chars);
        let summary = match self.ask_llm(namespace, &request, |c| {
            prompts::compress::parse(c, max_chars)
        }) {
            Ok(s) => s,
            Err(e) => return Ok(Some(format!("Core summary of {namespace} skipped: {e}"))),
        };
        let stored = Stored {
            fingerprint,
            summary,
            at: self.now(),
        };
        let json = serde_json::to_string(&stored).map_err(|e| {
            crate::CoreError::Storage(format!("cannot encode the Core summary: {e}"))
        })?;
        storage.set_meta(&meta_key(namespace), &json)?;
        Ok(None)
    }
}
