//! The settings that bound the core's LLM work (issue 42) — circuits,
//! backoff, budgets — turned into the policy the core keeps to
//! (`core/src/guard/`). The defaults are the core's named constants.

use mnemo_core::model::{BudgetScope, LlmBudget, LlmPolicy};

/// A cap as a setting spells it: `calls`, or `calls/tokens`, either `-`
/// for none (`200`, `200/400000`, `-/1000000`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cap {
    pub calls: Option<u32>,
    pub tokens: Option<u64>,
}

impl std::str::FromStr for Cap {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (calls, tokens) = s.split_once('/').unwrap_or((s, "-"));
        fn part<T: std::str::FromStr>(s: &str, what: &str) -> Result<Option<T>, String> {
            match s.trim() {
                "-" | "" => Ok(None),
                n => n
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("`{n}` is not a number of {what}")),
            }
        }
        let cap = Self {
            calls: part(calls, "calls")?,
            tokens: part(tokens, "tokens")?,
        };
        Ok(cap)
    }
}

/// The bounds as set: `None` keeps the core's default.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    pub circuit_failures: Option<u32>,
    pub circuit_cooldown_secs: Option<u64>,
    pub retry_base_secs: Option<u64>,
    pub retry_limit: Option<u32>,
    pub cycle: Option<Cap>,
    pub hour: Option<Cap>,
    pub namespace_cycle: Option<Cap>,
    pub namespace_hour: Option<Cap>,
}

impl Bounds {
    /// The policy for the core: each setting given, else the default.
    pub fn policy(&self) -> LlmPolicy {
        let d = LlmPolicy::default();
        let default_cap = |scope: BudgetScope| {
            d.budgets
                .iter()
                .find(|b| b.scope == scope && !b.per_namespace)
                .map(|b| Cap {
                    calls: b.calls,
                    tokens: b.tokens,
                })
        };
        let caps = [
            (
                BudgetScope::Cycle,
                false,
                self.cycle.or(default_cap(BudgetScope::Cycle)),
            ),
            (
                BudgetScope::Hour,
                false,
                self.hour.or(default_cap(BudgetScope::Hour)),
            ),
            (BudgetScope::Cycle, true, self.namespace_cycle),
            (BudgetScope::Hour, true, self.namespace_hour),
        ];
        let secs = |s: u64| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX);
        LlmPolicy {
            circuit_failures: self.circuit_failures.unwrap_or(d.circuit_failures),
            circuit_cooldown_ms: self
                .circuit_cooldown_secs
                .map_or(d.circuit_cooldown_ms, secs),
            retry_base_ms: self.retry_base_secs.map_or(d.retry_base_ms, secs),
            retry_limit: self.retry_limit.unwrap_or(d.retry_limit),
            budgets: caps
                .into_iter()
                .filter_map(|(scope, per_namespace, cap)| {
                    let cap = cap?;
                    (cap.calls.is_some() || cap.tokens.is_some()).then_some(LlmBudget {
                        scope,
                        per_namespace,
                        calls: cap.calls,
                        tokens: cap.tokens,
                    })
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_parse_and_the_defaults_are_the_cores() {
        let c: Cap = "200/400000".parse().unwrap();
        assert_eq!((c.calls, c.tokens), (Some(200), Some(400_000)));
        let c: Cap = "-/1000".parse().unwrap();
        assert_eq!((c.calls, c.tokens), (None, Some(1000)));
        assert_eq!("7".parse::<Cap>().unwrap().calls, Some(7));
        assert!("many".parse::<Cap>().is_err());
        assert_eq!(Bounds::default().policy(), LlmPolicy::default());
        let b = Bounds {
            cycle: Some("-".parse().unwrap()),
            namespace_hour: Some("5".parse().unwrap()),
            ..Default::default()
        };
        let p = b.policy();
        assert_eq!(p.budgets.len(), 2, "the cycle cap is lifted: {p:?}");
        assert!(
            p.budgets
                .iter()
                .any(|b| b.per_namespace && b.calls == Some(5))
        );
    }
}
