//! LLM providers behind the core's `Llm` port: OpenAI-compatible chat
//! completions (OpenAI, Ollama, llama.cpp, vLLM, ...) and Anthropic messages,
//! with per-component model routing (seed 004 §7), retries, a concurrency
//! limit, and every call in the usage ledger. With the level `off` (the
//! default) every call is refused with a typed error and the core takes its
//! heuristic path.

mod anthropic;
mod openai;
pub mod rehearsal;

use std::collections::HashMap;
use std::time::Instant;

use mnemo_core::model::{ChatRequest, ChatResponse, LlmComponent, LlmLevel, LlmTier};
use mnemo_core::ports::Llm;
use mnemo_core::{CoreError, CoreResult};

use crate::http::{HttpPolicy, Limiter};
use crate::ledger::{Ledger, Usage, now_ms};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
}

/// Where one model tier's calls go.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub provider: Provider,
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

/// Every tier that can be configured on its own (seed 004 §7); which
/// component uses which is the core's `LlmComponent::tier`.
pub const TIERS: &[LlmTier] = LlmTier::ALL;

#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub level: LlmLevel,
    pub default: Option<Endpoint>,
    /// Per-tier endpoints (already merged with the global settings).
    pub tiers: HashMap<LlmTier, Endpoint>,
    pub policy: HttpPolicy,
    pub concurrency: usize,
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            level: LlmLevel::Off,
            default: None,
            tiers: HashMap::new(),
            policy: HttpPolicy::default(),
            concurrency: 2,
            max_tokens: 1024,
        }
    }
}

pub struct LlmClient {
    config: LlmConfig,
    limiter: Limiter,
    ledger: Ledger,
    /// Live, or a rehearsal's recording or replay (`rehearsal.rs`).
    pub answers: rehearsal::Answers,
}

impl LlmClient {
    pub fn off() -> Self {
        Self::new(LlmConfig::default(), Ledger::default())
    }

    pub fn new(config: LlmConfig, ledger: Ledger) -> Self {
        let limiter = Limiter::new(config.concurrency);
        Self {
            config,
            limiter,
            ledger,
            answers: rehearsal::Answers::Live,
        }
    }

    /// The same endpoints, concurrency limit and ledger, for another
    /// instance: the limit holds across all of them.
    pub fn share(&self) -> Self {
        Self {
            config: self.config.clone(),
            limiter: self.limiter.clone(),
            ledger: self.ledger.clone(),
            answers: rehearsal::Answers::Live,
        }
    }

    /// The endpoint a component's calls go to.
    pub fn endpoint_for(&self, component: LlmComponent) -> Option<&Endpoint> {
        let (tier, fallback) = component.tier();
        self.config
            .tiers
            .get(&tier)
            .or_else(|| fallback.and_then(|f| self.config.tiers.get(&f)))
            .or(self.config.default.as_ref())
    }
}

/// An answer that could not be used: the caller sees a typed error.
pub(crate) fn malformed(what: impl std::fmt::Display) -> CoreError {
    CoreError::Llm(format!("malformed LLM response: {what}"))
}

impl Llm for LlmClient {
    fn level(&self) -> LlmLevel {
        self.config.level
    }

    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        if self.config.level == LlmLevel::Off {
            return Err(CoreError::Unavailable(format!(
                "LLM step `{}` skipped: the LLM level is `off` (set MNEMO_LLM_LEVEL and MNEMO_LLM_URL)",
                req.component
            )));
        }
        if let rehearsal::Answers::Replay(script) = &self.answers {
            return script.answer(req);
        }
        let Some(endpoint) = self.endpoint_for(req.component) else {
            return Err(CoreError::Unavailable(format!(
                "no LLM endpoint configured for `{}`",
                req.component
            )));
        };
        let started = Instant::now();
        let max_tokens = req.max_tokens.unwrap_or(self.config.max_tokens);
        let result = match endpoint.provider {
            Provider::OpenAi => openai::complete(
                endpoint,
                req,
                max_tokens,
                &self.config.policy,
                &self.limiter,
            ),
            Provider::Anthropic => anthropic::complete(
                endpoint,
                req,
                max_tokens,
                &self.config.policy,
                &self.limiter,
            ),
        };
        let (input_tokens, output_tokens, outcome) = match &result {
            Ok(r) => (r.input_tokens, r.output_tokens, "ok".to_string()),
            Err((_, outcome)) => (0, 0, outcome.clone()),
        };
        self.ledger.record(Usage {
            at: now_ms(),
            component: req.component.to_string(),
            model: endpoint.model.clone(),
            input_tokens,
            output_tokens,
            duration_ms: started.elapsed().as_millis() as u64,
            outcome,
        });
        if let rehearsal::Answers::Record(script) = &self.answers {
            match &result {
                Ok(answer) => script.keep(req, answer),
                Err((e, _)) => script.keep_failure(req, e),
            }
        }
        result.map_err(|(e, _)| e)
    }
}
