//! The guard's state: the policy a host set and what the engine call under
//! way has read, spent and left (kept apart from the engine that owns it so
//! the engine needs nothing else of `guard/`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::*;
use crate::thresholds::*;

impl Default for LlmPolicy {
    fn default() -> Self {
        Self {
            circuit_failures: LLM_CIRCUIT_FAILURES,
            circuit_cooldown_ms: LLM_CIRCUIT_COOLDOWN_MS,
            retry_base_ms: LLM_RETRY_BASE_MS,
            retry_limit: LLM_RETRY_LIMIT,
            budgets: vec![
                LlmBudget {
                    scope: BudgetScope::Cycle,
                    per_namespace: false,
                    calls: Some(LLM_CYCLE_CALLS),
                    tokens: None,
                },
                LlmBudget {
                    scope: BudgetScope::Hour,
                    per_namespace: false,
                    calls: Some(LLM_HOUR_CALLS),
                    tokens: None,
                },
            ],
        }
    }
}

/// The state of the engine call under way, over what the metadata holds.
#[derive(Default)]
pub(crate) struct Guard {
    pub(crate) policy: LlmPolicy,
    /// Circuits read (or changed) during this call.
    pub(super) circuits: BTreeMap<LlmComponent, CircuitState>,
    /// This call's spend: in all (`""`) and per namespace.
    pub(super) call: BTreeMap<String, Spend>,
    /// The hour's spend read (or added to) during this call.
    pub(super) hour: BTreeMap<String, Spend>,
    /// Waiting items read (or changed) during this call, per namespace.
    pub(super) waiting: BTreeMap<String, BTreeMap<String, WaitingItem>>,
    /// Calls refused for a budget, per step: what this call left for later.
    pub(super) deferred: BTreeMap<LlmComponent, u32>,
    /// Calls skipped for an open circuit, per step.
    pub(super) paused: BTreeMap<LlmComponent, u32>,
    /// Steps whose probe this call has made: until its answer closes the
    /// circuit, the step's other calls wait.
    pub(super) probing: BTreeSet<LlmComponent>,
}

impl Guard {
    pub(crate) fn new(policy: LlmPolicy) -> RefCell<Self> {
        RefCell::new(Self {
            policy,
            ..Default::default()
        })
    }
}

/// Calls and tokens spent, within one hour for the hour's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spend {
    pub(crate) hour: i64,
    pub(crate) calls: u64,
    pub(crate) tokens: u64,
}
