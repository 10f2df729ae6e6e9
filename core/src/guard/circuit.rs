//! The circuit of one LLM step (issue 42): closed while it answers; open
//! after `circuit_failures` consecutive failures, when the step is skipped
//! (its items wait); after the cool-down the next call is a probe, whose
//! success closes the circuit and whose failure opens it again for another
//! cool-down. Kept in the metadata table (`llm_circuit:<step>`), shared by
//! every instance and server of the store.

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};

/// The metadata key of a step's circuit.
fn key(step: LlmComponent) -> String {
    format!("llm_circuit:{step}")
}

fn closed(step: LlmComponent) -> CircuitState {
    CircuitState {
        component: step,
        open: false,
        failures: 0,
        opened_at: None,
        last_error: None,
        last_error_at: None,
    }
}

/// The longest error text kept with a circuit or a waiting item.
const ERROR_CHARS: usize = 300;

pub(super) fn clip(error: &str) -> String {
    match error.char_indices().nth(ERROR_CHARS) {
        Some((at, _)) => format!("{}…", error.get(..at).unwrap_or_default()),
        None => error.to_string(),
    }
}

impl<P: Ports> Engine<P> {
    /// A step's circuit: this call's copy, else the stored one.
    pub(super) fn circuit(&self, step: LlmComponent) -> CoreResult<CircuitState> {
        if let Some(c) = self.guard.borrow().circuits.get(&step) {
            return Ok(c.clone());
        }
        let stored = self.ports().storage().get_meta(&key(step))?;
        let c = stored
            .and_then(|v| serde_json::from_str::<CircuitState>(&v).ok())
            .unwrap_or_else(|| closed(step));
        self.guard.borrow_mut().circuits.insert(step, c.clone());
        Ok(c)
    }

    fn save_circuit(&self, c: CircuitState) -> CoreResult<()> {
        let text = serde_json::to_string(&c).map_err(|e| CoreError::Storage(e.to_string()))?;
        self.ports().storage().set_meta(&key(c.component), &text)?;
        self.guard.borrow_mut().circuits.insert(c.component, c);
        Ok(())
    }

    /// `Ok` when the step may call: its circuit is closed, or open with the
    /// cool-down over (this call is the probe). Otherwise the typed refusal.
    pub(super) fn circuit_allows(&self, step: LlmComponent) -> CoreResult<()> {
        let c = self.circuit(step)?;
        let cooldown = self.guard.borrow().policy.circuit_cooldown_ms;
        let resting = c
            .opened_at
            .is_some_and(|at| self.ports().clock().now() < at.saturating_add(cooldown));
        // After the cool-down, one call is the probe; the others wait for it.
        let probing = c.open && !resting && !self.guard.borrow_mut().probing.insert(step);
        match c.opened_at {
            Some(_) if c.open && (resting || probing) => {
                *self.guard.borrow_mut().paused.entry(step).or_default() += 1;
                Err(CoreError::Unavailable(format!(
                    "LLM step `{step}` paused: its circuit opened after {} consecutive failures \
                     (last: {}); one probe call is made once the cool-down has passed",
                    c.failures,
                    c.last_error.as_deref().unwrap_or("unknown"),
                )))
            }
            _ => Ok(()),
        }
    }

    /// A usable answer: the circuit closes and its failures are forgotten.
    pub(super) fn circuit_success(&self, step: LlmComponent) -> CoreResult<()> {
        let c = self.circuit(step)?;
        if c.failures == 0 && !c.open {
            return Ok(());
        }
        self.save_circuit(closed(step))
    }

    /// A failure: counted; at the limit (or when a probe fails) the circuit
    /// opens for a cool-down from now.
    pub(super) fn circuit_failure(&self, step: LlmComponent, why: &str) -> CoreResult<()> {
        let mut c = self.circuit(step)?;
        let now = self.ports().clock().now();
        let limit = self.guard.borrow().policy.circuit_failures.max(1);
        c.failures = c.failures.saturating_add(1);
        c.last_error = Some(clip(why));
        c.last_error_at = Some(now);
        if c.open || c.failures >= limit {
            c.open = true;
            c.opened_at = Some(now);
        }
        self.save_circuit(c)
    }
}
