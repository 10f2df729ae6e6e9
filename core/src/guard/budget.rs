//! The LLM budgets (issue 42): caps on the calls and tokens of background
//! steps per engine call (`cycle`) and per UTC clock hour, in all or per
//! namespace. A call that would pass a cap is refused before it is made,
//! and its item waits for a later cycle. The hour's spend is kept in the
//! metadata table (`llm_spent_hour`, `llm_spent_hour:<namespace>`), one row
//! each that a new hour starts over.

use super::state::Spend;
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Clock, Ports, Storage};

const HOUR_MS: i64 = 3_600_000;

/// The key spends are counted under: a namespace, or `""` for all.
fn scope_key(b: &LlmBudget, namespace: &str) -> String {
    if b.per_namespace {
        namespace.to_string()
    } else {
        String::new()
    }
}

fn meta_key(scope: &str) -> String {
    if scope.is_empty() {
        "llm_spent_hour".into()
    } else {
        format!("llm_spent_hour:{scope}")
    }
}

impl<P: Ports> Engine<P> {
    /// The current hour's spend under `scope` (`""`: all).
    fn hour_spend(&self, scope: &str) -> CoreResult<Spend> {
        let hour = self.ports().clock().now().div_euclid(HOUR_MS);
        let cached = self.guard.borrow().hour.get(scope).copied();
        let spend = match cached {
            Some(s) => s,
            None => {
                let stored = self.ports().storage().get_meta(&meta_key(scope))?;
                let s = stored
                    .and_then(|v| serde_json::from_str::<Spend>(&v).ok())
                    .unwrap_or_default();
                self.guard.borrow_mut().hour.insert(scope.to_string(), s);
                s
            }
        };
        Ok(if spend.hour == hour {
            spend
        } else {
            Spend {
                hour,
                ..Default::default()
            }
        })
    }

    /// `Ok` when one more call of `step` for `namespace` stays within every
    /// budget; otherwise the typed refusal, counted as left for later.
    pub(super) fn within_budget(&self, namespace: &str, step: LlmComponent) -> CoreResult<()> {
        let budgets = self.guard.borrow().policy.budgets.clone();
        for b in &budgets {
            let scope = scope_key(b, namespace);
            let spent = match b.scope {
                BudgetScope::Cycle => self
                    .guard
                    .borrow()
                    .call
                    .get(&scope)
                    .copied()
                    .unwrap_or_default(),
                BudgetScope::Hour => self.hour_spend(&scope)?,
            };
            let over_calls = b.calls.is_some_and(|cap| spent.calls >= u64::from(cap));
            let over_tokens = b.tokens.is_some_and(|cap| spent.tokens >= cap);
            if over_calls || over_tokens {
                *self.guard.borrow_mut().deferred.entry(step).or_default() += 1;
                let what = if over_calls {
                    format!("{} calls", b.calls.unwrap_or_default())
                } else {
                    format!("{} tokens", b.tokens.unwrap_or_default())
                };
                let whose = if b.per_namespace {
                    format!(" for namespace `{namespace}`")
                } else {
                    String::new()
                };
                return Err(CoreError::Unavailable(format!(
                    "LLM budget of {what} per {}{whose} reached: `{step}` left for a later cycle",
                    b.scope
                )));
            }
        }
        Ok(())
    }

    /// Counts `calls` and `tokens` against this engine call and the hour,
    /// in all and for `namespace`.
    pub(super) fn spend(&self, namespace: &str, calls: u64, tokens: u64) -> CoreResult<()> {
        for scope in ["", namespace] {
            {
                let mut g = self.guard.borrow_mut();
                let s = g.call.entry(scope.to_string()).or_default();
                s.calls += calls;
                s.tokens += tokens;
            }
            let mut hour = self.hour_spend(scope)?;
            hour.calls += calls;
            hour.tokens += tokens;
            self.guard.borrow_mut().hour.insert(scope.to_string(), hour);
            let text =
                serde_json::to_string(&hour).map_err(|e| CoreError::Storage(e.to_string()))?;
            self.ports().storage().set_meta(&meta_key(scope), &text)?;
            if namespace.is_empty() {
                break;
            }
        }
        Ok(())
    }
}
