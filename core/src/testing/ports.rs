//! In-memory fakes of the other ports: a bag-of-words embedder, a scripted
//! LLM, a capitalised-words NER and a settable clock, bundled with
//! `MemStorage` as `FakePorts`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use super::storage::MemStorage;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::*;
use crate::text;

/// Bag-of-words embedder: hashed token counts, L2-normalised. Texts sharing
/// words get high cosine, as a real model would give paraphrases. A test
/// can make it fail like a provider that is down.
#[derive(Default)]
pub struct BowEmbedder {
    pub failing: Cell<bool>,
}

impl Embedder for BowEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model: "bow-test".into(),
            dimension: 64,
        }
    }
    fn embed(&self, texts: &[String]) -> CoreResult<Vec<Vec<f32>>> {
        if self.failing.get() {
            return Err(CoreError::Embedding("the test embedder is down".into()));
        }
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                for tok in text::tokens(t) {
                    let h = tok
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
                    v[(h % 64) as usize] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

/// An LLM that answers from a script, keyed by the request's component
/// (`gate`, `extract`, ...). Off unless a test sets a level; an unscripted
/// component is an `llm` error. Every request is kept for assertions.
#[derive(Default)]
pub struct ScriptedLlm {
    pub level: Cell<Option<LlmLevel>>,
    pub answers: RefCell<BTreeMap<LlmComponent, Vec<String>>>,
    pub requests: RefCell<Vec<ChatRequest>>,
}

impl ScriptedLlm {
    pub fn script(&self, level: LlmLevel, component: LlmComponent, answer: &str) {
        self.level.set(Some(level));
        self.answers
            .borrow_mut()
            .entry(component)
            .or_default()
            .push(answer.into());
    }
}

impl Llm for ScriptedLlm {
    fn level(&self) -> LlmLevel {
        self.level.get().unwrap_or(LlmLevel::Off)
    }
    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        self.requests.borrow_mut().push(req.clone());
        if self.level() == LlmLevel::Off {
            return Err(CoreError::Unavailable("llm is off".into()));
        }
        let mut answers = self.answers.borrow_mut();
        let queue = answers.entry(req.component).or_default();
        if queue.is_empty() {
            return Err(CoreError::Llm(format!(
                "nothing scripted for {}",
                req.component
            )));
        }
        Ok(ChatResponse {
            content: queue.remove(0),
            model: "scripted".into(),
            input_tokens: 1,
            output_tokens: 1,
        })
    }
}

/// Capitalised words are people; `#x` hashtags.
pub struct CapsNer;
impl Ner for CapsNer {
    fn extract(&self, text: &str, _strategy: NerStrategy) -> CoreResult<NerResult> {
        let mut out = Vec::new();
        let mut offset = 0;
        for word in text.split(' ') {
            let w = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '#');
            if let Some(tag) = w.strip_prefix('#') {
                out.push(Mention {
                    text: tag.into(),
                    entity_type: EntityType::Hashtag,
                    start: offset as u32,
                    end: (offset + word.len()) as u32,
                    confidence: 1.0,
                    provider: "caps".into(),
                });
            } else if w.chars().next().is_some_and(char::is_uppercase) && w.len() > 1 {
                out.push(Mention {
                    text: w.into(),
                    entity_type: EntityType::Person,
                    start: offset as u32,
                    end: (offset + w.len()) as u32,
                    confidence: 0.5,
                    provider: "caps".into(),
                });
            }
            offset += word.len() + 1;
        }
        Ok(NerResult {
            mentions: out,
            failures: Vec::new(),
        })
    }
    fn accurate_available(&self) -> bool {
        false
    }
}

/// A clock the test moves by hand; `random` counts up.
pub struct TestClock {
    pub now: Cell<Millis>,
    pub seq: Cell<u64>,
}

impl Default for TestClock {
    fn default() -> Self {
        Self {
            now: Cell::new(1_700_000_000_000),
            seq: Cell::new(0),
        }
    }
}

impl TestClock {
    pub fn advance_hours(&self, h: i64) {
        self.now.set(self.now.get() + h * 3_600_000);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Millis {
        self.now.get()
    }
    fn random(&self) -> u64 {
        self.seq.set(self.seq.get() + 1);
        self.seq.get()
    }
}

#[derive(Default)]
pub struct FakePorts {
    pub storage: MemStorage,
    pub clock: TestClock,
    pub llm: ScriptedLlm,
    pub embedder: BowEmbedder,
}

impl Ports for FakePorts {
    type Storage = MemStorage;
    type Embedder = BowEmbedder;
    type Llm = ScriptedLlm;
    type Ner = CapsNer;
    type Clock = TestClock;
    fn storage(&self) -> &MemStorage {
        &self.storage
    }
    fn embedder(&self) -> &BowEmbedder {
        &self.embedder
    }
    fn llm(&self) -> &ScriptedLlm {
        &self.llm
    }
    fn ner(&self) -> &CapsNer {
        &CapsNer
    }
    fn clock(&self) -> &TestClock {
        &self.clock
    }
}
