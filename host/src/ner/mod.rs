//! NER through strategies: each strategy names an ordered list of providers;
//! their mentions are merged by span overlap (highest confidence, then the
//! longest span wins — seed 003).

use mnemo_core::CoreResult;
use mnemo_core::model::{Mention, NerResult, NerStrategy};
use mnemo_core::ports::Ner;

/// A named-entity provider (a sandboxed plugin component, or built in).
pub trait NerProvider: Send {
    fn name(&self) -> &str;
    fn extract(&mut self, text: &str) -> anyhow::Result<Vec<Mention>>;
}

/// The strategies and the providers they run. Without providers every
/// strategy returns no mentions and the entity channel stays empty.
#[derive(Default)]
pub struct NerPipeline {
    providers: Vec<std::cell::RefCell<Box<dyn NerProvider>>>,
    /// Provider indices per strategy, in order.
    fast: Vec<usize>,
    accurate: Vec<usize>,
}

impl NerPipeline {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Strategies name providers; a name with no loaded provider is reported
    /// in the returned warnings and skipped.
    pub fn new(
        providers: Vec<Box<dyn NerProvider>>,
        fast: &[String],
        accurate: &[String],
    ) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut resolve = |strategy: &str, names: &[String]| -> Vec<usize> {
            names
                .iter()
                .filter_map(|n| {
                    let i = providers.iter().position(|p| p.name() == n);
                    if i.is_none() {
                        warnings.push(format!(
                            "NER strategy `{strategy}` names `{n}`, which is not loaded"
                        ));
                    }
                    i
                })
                .collect()
        };
        let fast = resolve("fast", fast);
        let accurate = resolve("accurate", accurate);
        let providers = providers.into_iter().map(std::cell::RefCell::new).collect();
        (
            Self {
                providers,
                fast,
                accurate,
            },
            warnings,
        )
    }

    pub fn provider_names(&self) -> Vec<String> {
        self.providers
            .iter()
            .map(|p| p.borrow().name().to_string())
            .collect()
    }

    /// Merged mentions of the strategy's providers, and one message per
    /// provider that failed (the others still answer).
    pub fn extract_reporting(
        &self,
        text: &str,
        strategy: NerStrategy,
    ) -> (Vec<Mention>, Vec<String>) {
        let ids = if strategy == NerStrategy::Accurate {
            &self.accurate
        } else {
            &self.fast
        };
        let mut all = Vec::new();
        let mut failures = Vec::new();
        for &i in ids {
            let mut p = self.providers[i].borrow_mut();
            match p.extract(text) {
                Ok(found) => all.extend(found),
                Err(e) => failures.push(format!("{e:#}")),
            }
        }
        (merge_mentions(all), failures)
    }
}

pub use mnemo_core::merge_mentions;

impl Ner for NerPipeline {
    fn extract(&self, text: &str, strategy: NerStrategy) -> CoreResult<NerResult> {
        let (mentions, failures) = self.extract_reporting(text, strategy);
        for f in &failures {
            tracing::warn!(error = %f, "NER provider failed; the others still answered");
        }
        Ok(NerResult { mentions, failures })
    }

    fn accurate_available(&self) -> bool {
        self.accurate.iter().any(|i| !self.fast.contains(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::model::EntityType;

    fn m(start: u32, end: u32, confidence: f32) -> Mention {
        Mention {
            text: String::new(),
            entity_type: EntityType::Other,
            start,
            end,
            confidence,
            provider: String::new(),
        }
    }

    #[test]
    fn overlap_keeps_confident_then_longest() {
        let merged = merge_mentions(vec![
            m(0, 5, 0.5),
            m(0, 10, 0.5),
            m(3, 6, 0.9),
            m(20, 25, 0.1),
        ]);
        assert_eq!(
            merged.iter().map(|x| (x.start, x.end)).collect::<Vec<_>>(),
            [(3, 6), (20, 25)]
        );
        let merged = merge_mentions(vec![m(0, 5, 0.5), m(0, 10, 0.5)]);
        assert_eq!((merged[0].start, merged[0].end), (0, 10));
    }
}
