//! NER through strategies: each strategy names an ordered list of providers;
//! their mentions are merged by span overlap (highest confidence, then the
//! longest span wins — seed 003).

use mnemo_core::CoreResult;
use mnemo_core::model::Mention;
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
    fast: Vec<usize>,
    accurate: Vec<usize>,
    providers: Vec<std::cell::RefCell<Box<dyn NerProvider>>>,
}

impl NerPipeline {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Adds a provider to the named strategies.
    pub fn add(&mut self, provider: Box<dyn NerProvider>, fast: bool, accurate: bool) {
        let i = self.providers.len();
        self.providers.push(std::cell::RefCell::new(provider));
        if fast {
            self.fast.push(i);
        }
        if accurate {
            self.accurate.push(i);
        }
    }
}

/// Span-overlap merge: among overlapping mentions keep the most confident,
/// then the longest; output in text order.
pub fn merge_mentions(mut all: Vec<Mention>) -> Vec<Mention> {
    all.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| (b.end - b.start).cmp(&(a.end - a.start)))
            .then_with(|| a.start.cmp(&b.start))
    });
    let mut kept: Vec<Mention> = Vec::new();
    for m in all {
        if !kept.iter().any(|k| m.start < k.end && k.start < m.end) {
            kept.push(m);
        }
    }
    kept.sort_by_key(|m| m.start);
    kept
}

impl Ner for NerPipeline {
    fn extract(&self, text: &str, strategy: &str) -> CoreResult<Vec<Mention>> {
        let ids = if strategy == "accurate" {
            &self.accurate
        } else {
            &self.fast
        };
        let mut all = Vec::new();
        for &i in ids {
            let mut p = self.providers[i].borrow_mut();
            match p.extract(text) {
                Ok(found) => all.extend(found),
                Err(e) => {
                    tracing::warn!(provider = p.name(), error = %e, "NER provider failed; others still answer")
                }
            }
        }
        Ok(merge_mentions(all))
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
