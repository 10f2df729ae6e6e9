//! Plan, then apply: how a write that needs the LLM (a consolidation cycle,
//! a session's distillation, a reflection, topic naming) never holds the
//! writer while a model thinks.
//!
//! The call runs twice at the same pinned time. First as a *rehearsal* on an
//! instance whose storage accepts and forgets every write
//! (`storage/reader.rs`): its LLM calls go to the provider and each answer
//! is kept in a [`Script`], keyed by the whole request. Then for real on the
//! writer, where every LLM call is answered from the script and none reaches
//! the network, so the write transaction lasts as long as the local work.
//!
//! A rehearsal runs in *waves* when the provider takes calls in parallel
//! (`MNEMO_LLM_CONCURRENCY` above 1): a pass answers what the script knows
//! and only collects the calls it has no answer for (at most the
//! concurrency per pass), which the host then makes at once; the next pass
//! goes further with those answers, until a pass asks nothing new. The
//! independent calls of a cycle (each session's extraction, the gate, the
//! triage, the pairs) so fly together, while a call that depends on an
//! answer (a repair, a session's next chunk) waits for its wave. Every pass
//! starts from the same stored state at the same pinned time, so the
//! answers — and the applied result — are those of a pass made one call at
//! a time.
//!
//! The key is the request itself, and the prompts carry the texts they
//! judge: when a memory changed between the two runs, its prompt differs,
//! the script has no answer, and the step is skipped with a warning exactly
//! as for a provider that failed — left for the next cycle, never applied
//! on an answer about text that is no longer there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mnemo_core::CoreError;
use mnemo_core::model::{ChatRequest, ChatResponse};

/// The answers a rehearsal got, by request.
#[derive(Default)]
pub struct Script {
    /// Each request's answer, or the provider's error (replayed as such:
    /// the real run reports the failure the rehearsal met, and the step is
    /// retried later as for any failed call).
    answers: Mutex<HashMap<String, Result<ChatResponse, CoreError>>>,
    /// Requests the real run asked that the rehearsal had not.
    misses: Mutex<u32>,
}

impl Script {
    fn key(req: &ChatRequest) -> String {
        serde_json::to_string(req).unwrap_or_default()
    }

    pub(super) fn keep(&self, req: &ChatRequest, answer: &ChatResponse) {
        if let Ok(mut a) = self.answers.lock() {
            a.insert(Self::key(req), Ok(answer.clone()));
        }
    }

    pub(super) fn keep_failure(&self, req: &ChatRequest, error: &CoreError) {
        if let Ok(mut a) = self.answers.lock() {
            a.insert(Self::key(req), Err(error.clone()));
        }
    }

    /// The answer kept for `req`, if any.
    pub(super) fn known(&self, req: &ChatRequest) -> Option<Result<ChatResponse, CoreError>> {
        self.answers
            .lock()
            .ok()
            .and_then(|a| a.get(&Self::key(req)).cloned())
    }

    pub(super) fn answer(&self, req: &ChatRequest) -> Result<ChatResponse, CoreError> {
        self.known(req).unwrap_or_else(|| {
            if let Ok(mut m) = self.misses.lock() {
                *m += 1;
            }
            Err(CoreError::Unavailable(format!(
                "LLM step `{}` left for the next cycle: what it judges changed after it was planned",
                req.component
            )))
        })
    }

    /// Answers kept so far.
    pub fn len(&self) -> usize {
        self.answers.lock().map(|a| a.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests of the real run the rehearsal had no answer for.
    pub fn misses(&self) -> u32 {
        self.misses.lock().map(|m| *m).unwrap_or(0)
    }
}

/// The calls a pass of a rehearsal had no answer for, to be made together.
pub struct Wave {
    requests: Mutex<Vec<ChatRequest>>,
    limit: usize,
}

impl Wave {
    /// A wave of at most `limit` calls.
    pub fn new(limit: usize) -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            limit: limit.max(1),
        }
    }

    /// Adds `req` unless it is there or the wave is full; the caller gets
    /// a typed refusal either way (the pass is only a plan).
    pub(super) fn add(&self, req: &ChatRequest) -> CoreError {
        if let Ok(mut r) = self.requests.lock()
            && r.len() < self.limit
            && !r.contains(req)
        {
            r.push(req.clone());
        }
        CoreError::Unavailable(format!(
            "LLM step `{}` waits for its wave of calls",
            req.component
        ))
    }

    /// The calls collected.
    pub fn take(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }
}

/// How an instance's LLM calls are answered.
#[derive(Clone, Default)]
pub enum Answers {
    /// By the provider.
    #[default]
    Live,
    /// By the provider, each answer kept in the script (a rehearsal).
    Record(Arc<Script>),
    /// From the script only (the real run after a rehearsal).
    Replay(Arc<Script>),
    /// From the script, collecting the calls it cannot answer into the
    /// wave (a pass of a rehearsal in waves).
    Collect(Arc<Script>, Arc<Wave>),
}
