//! The usage ledger: every LLM and embedding call (component, model, tokens,
//! duration, outcome). Providers append to a shared in-memory queue; the
//! host writes the queue to the `llm_usage` table on its database thread
//! after each engine call, so providers never touch SQLite.

use rmcp::schemars::{self, JsonSchema};
use std::sync::{Arc, Mutex};

use serde::Serialize;

pub use crate::storage::Usage;

/// Latest calls a usage report lists unless asked otherwise (every surface).
pub const USAGE_LIMIT: u32 = 50;

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

/// What calls cost: per model, USD per million input and output tokens
/// (`MNEMO_PRICES`, e.g. `gpt-4o-mini=0.15/0.60,claude-haiku-4-5=1/5`).
/// A model without a price has no cost rather than a made-up one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices(Vec<(String, f64, f64)>);

impl std::str::FromStr for Prices {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (model, price) = item
                .rsplit_once('=')
                .ok_or_else(|| format!("`{item}`: expected model=input/output"))?;
            let (input, output) = price
                .split_once('/')
                .ok_or_else(|| format!("`{item}`: expected model=input/output"))?;
            let number = |x: &str| match x.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(format!(
                    "`{item}`: `{x}` is not a price (USD per million tokens)"
                )),
            };
            out.push((model.trim().to_string(), number(input)?, number(output)?));
        }
        Ok(Self(out))
    }
}

impl Prices {
    /// What `input` and `output` tokens of `model` cost, if it has a price.
    pub fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        let (_, i, o) = self.0.iter().find(|(m, _, _)| m == model)?;
        Some((input as f64 * i + output as f64 * o) / 1_000_000.0)
    }
}

/// One row of the ledger's totals with its cost.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PricedSummary {
    #[serde(flatten)]
    pub totals: crate::storage::UsageSummary,
    /// USD, from `MNEMO_PRICES`; absent when the model has no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `GET /llm-usage`, `mnemo llm-usage` and the `llm_usage` tool's answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UsageReport {
    /// Totals per component and model, priced.
    pub summary: Vec<PricedSummary>,
    /// The latest calls, newest first.
    pub latest: Vec<Usage>,
}

impl UsageReport {
    pub fn new(
        totals: Vec<crate::storage::UsageSummary>,
        latest: Vec<Usage>,
        prices: &Prices,
    ) -> Self {
        let summary = totals
            .into_iter()
            .map(|t| PricedSummary {
                cost_usd: prices.cost(&t.model, t.input_tokens, t.output_tokens),
                totals: t,
            })
            .collect();
        Self { summary, latest }
    }
}

#[cfg(test)]
mod tests {
    use super::Prices;

    #[test]
    fn prices_parse_and_price_a_model() {
        let p: Prices = "gpt-4o-mini=0.15/0.60, local = 0/0".parse().unwrap();
        assert_eq!(p.cost("gpt-4o-mini", 1_000_000, 500_000), Some(0.45));
        assert_eq!(p.cost("local", 10, 10), Some(0.0));
        assert_eq!(p.cost("other", 10, 10), None);
        assert!("gpt=0.1".parse::<Prices>().is_err());
        assert!("gpt=x/1".parse::<Prices>().is_err());
        assert!("gpt=-1/1".parse::<Prices>().is_err());
        assert_eq!("".parse::<Prices>().unwrap(), Prices::default());
    }
}
