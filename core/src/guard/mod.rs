//! Bounded LLM work (issue 42): every LLM call of a background step goes
//! through [`Engine::ask_llm`], which
//!
//! - skips the step while its **circuit** is open (`circuit.rs`): after
//!   `circuit_failures` consecutive failures the step rests for a cool-down,
//!   then one probe call decides whether it closes;
//! - refuses a call that would pass a **budget** (`budget.rs`): calls and
//!   tokens per engine call and per clock hour, in all or per namespace;
//! - and lets each step record an **item** whose call failed (`waiting.rs`):
//!   it waits with exponential backoff for a later cycle, then is parked
//!   until retried by hand — listed, never dropped.
//!
//! A refusal is a typed `unavailable` error: the step's item stays as it
//! was for a later cycle, exactly as when the LLM level is `off`. Only an
//! `llm` error (an answer that could not be used after its repair, or the
//! provider's failure) counts as a failure.
//!
//! State lives in the metadata table so every instance of the core sees
//! it, and in [`Guard`] for the engine call under way: a planner's
//! rehearsal writes to storage that forgets (`host/src/llm/rehearsal.rs`),
//! so within one call the in-memory copy is what counts, and the real run
//! that applies the rehearsal writes the same state for good.

mod budget;
mod circuit;
pub(crate) mod state;
mod waiting;

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Llm, Ports};
use crate::prompts;

use state::Guard;

/// The `llm` port as one namespace's background step sees it: each call
/// is checked against the budgets first and counted after.
struct Metered<'a, P: Ports> {
    engine: &'a Engine<P>,
    namespace: &'a str,
}

impl<P: Ports> Llm for Metered<'_, P> {
    fn level(&self) -> LlmLevel {
        self.engine.ports().llm().level()
    }

    /// A call counts once it is asked, whatever comes back (a failed call
    /// may still have been paid for; a call a host defers to a later wave
    /// of a plan is still one it will make); its tokens count when known.
    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        self.engine.within_budget(self.namespace, req.component)?;
        self.engine.spend(self.namespace, 1, 0)?;
        let answer = self.engine.ports().llm().complete(req);
        if let Ok(a) = &answer {
            let tokens = u64::from(a.input_tokens) + u64::from(a.output_tokens);
            self.engine.spend(self.namespace, 0, tokens)?;
        }
        answer
    }
}

impl<P: Ports> Engine<P> {
    /// The bounds for the calls that follow.
    pub fn configure_llm(&self, policy: LlmPolicy) {
        self.guard.borrow_mut().policy = policy;
    }

    /// Starts an engine call that may use the LLM: its budget counts from
    /// zero and the state is read afresh from the metadata.
    pub(crate) fn begin_llm_work(&self) {
        let mut g = self.guard.borrow_mut();
        let policy = std::mem::take(&mut g.policy);
        *g = Guard {
            policy,
            ..Default::default()
        };
    }

    /// One background step's question to the LLM for `namespace` (seed
    /// 003/004's steps all come through here): [`prompts::ask`] within the
    /// step's circuit and the budgets.
    pub(crate) fn ask_llm<T>(
        &self,
        namespace: &str,
        request: &ChatRequest,
        parse: impl Fn(&str) -> CoreResult<T>,
    ) -> CoreResult<T> {
        let step = request.component;
        self.circuit_allows(step)?;
        let metered = Metered {
            engine: self,
            namespace,
        };
        let answer = prompts::ask(&metered, request, parse);
        match &answer {
            Ok(_) => self.circuit_success(step)?,
            Err(CoreError::Llm(why)) => self.circuit_failure(step, why)?,
            Err(_) => {}
        }
        answer
    }

    /// What this call left for later, as report warnings: the calls a
    /// budget refused and the steps an open circuit skipped.
    pub(crate) fn llm_leftovers(&self) -> Vec<String> {
        let g = self.guard.borrow();
        let list = |m: &BTreeMap<LlmComponent, u32>| {
            m.iter()
                .map(|(c, n)| format!("{c} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = Vec::new();
        if !g.deferred.is_empty() {
            out.push(format!(
                "LLM budget reached; left for a later cycle: {}",
                list(&g.deferred)
            ));
        }
        if !g.paused.is_empty() {
            out.push(format!(
                "LLM circuit open; steps skipped until it probes again: {}",
                list(&g.paused)
            ));
        }
        out
    }

    /// The circuits that have failed since their last success, and the
    /// items waiting (of one namespace, or all).
    pub fn llm_state(&self, namespace: Option<&str>) -> CoreResult<LlmState> {
        let namespace = namespace.map(crate::validate::namespace).transpose()?;
        let mut circuits = Vec::new();
        for step in LlmComponent::ALL {
            let c = self.circuit(*step)?;
            if c.failures > 0 || c.open {
                circuits.push(c);
            }
        }
        Ok(LlmState {
            circuits,
            waiting: self.waiting_items(namespace.as_deref())?,
        })
    }
}

#[cfg(test)]
mod tests;
