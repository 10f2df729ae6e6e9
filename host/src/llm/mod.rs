//! LLM providers behind the core's `Llm` port. Every provider is a
//! sandboxed plugin (`plugins/llm/`): the bundled `openai` (OpenAI, Ollama's
//! `/v1`, llama.cpp, vLLM, ...), `anthropic` and `ollama`, or one from the
//! plugin folder. This client routes each component to its tier's endpoint
//! (seed 004 §7), grants the plugin that endpoint's URL and key for the
//! call, and records every call in the usage ledger; retries, timeouts and
//! the concurrency limit are the host's (`http.rs`). With the level `off`
//! (the default) every call is refused with a typed error and the core
//! takes its heuristic path.

pub mod bounds;
pub mod rehearsal;
pub mod sampling;

use std::collections::HashMap;
use std::time::Instant;

use mnemo_core::model::{ChatRequest, ChatResponse, LlmComponent, LlmLevel, LlmTier};
use mnemo_core::ports::Llm;
use mnemo_core::{CoreError, CoreResult};

use crate::http::{HttpPolicy, Limiter};
use crate::ledger::{Ledger, Usage, now_ms};
use crate::plugins::llm::{CallError, Grant, LlmPlugins, ProviderError, Wire};

/// The provider plugin used when none is named.
pub const DEFAULT_PROVIDER: &str = "openai";

/// Where one model tier's calls go.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The LLM plugin's name: `openai`, `anthropic`, `ollama`, or one a
    /// plugin in the plugin folder declares.
    pub provider: String,
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
    /// The bounds of the core's LLM work (circuits, backoff, budgets).
    pub bounds: mnemo_core::model::LlmPolicy,
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
            bounds: Default::default(),
        }
    }
}

pub struct LlmClient {
    config: LlmConfig,
    limiter: Limiter,
    ledger: Ledger,
    plugins: Option<LlmPlugins>,
    /// Live, or a rehearsal's recording or replay (`rehearsal.rs`).
    pub answers: rehearsal::Answers,
}

impl LlmClient {
    pub fn off() -> Self {
        Self::new(LlmConfig::default(), Ledger::default())
    }

    /// A client over the bundled provider plugins (default limits).
    pub fn new(config: LlmConfig, ledger: Ledger) -> Self {
        let plugins = LlmPlugins::bundled(Default::default(), None)
            .map_err(|e| tracing::error!("the LLM plugin engine did not start: {e:#}"))
            .ok();
        Self::with_plugins(config, ledger, plugins)
    }

    /// A client over `plugins` (bundled and the plugin folder's).
    pub fn with_plugins(config: LlmConfig, ledger: Ledger, plugins: Option<LlmPlugins>) -> Self {
        let limiter = Limiter::new(config.concurrency);
        Self {
            config,
            limiter,
            ledger,
            plugins,
            answers: rehearsal::Answers::Live,
        }
    }

    /// Fails unless every configured endpoint names a known provider.
    pub fn check_providers(&self) -> anyhow::Result<()> {
        let Some(plugins) = &self.plugins else {
            return Ok(());
        };
        let endpoints = self.config.default.iter().chain(self.config.tiers.values());
        for ep in endpoints {
            if ep.provider != sampling::PROVIDER && !plugins.knows(&ep.provider) {
                anyhow::bail!(
                    "the LLM provider `{}` is not known; known: {}, and `sampling` (the MCP client's model) (an LLM plugin in MNEMO_PLUGIN_DIR adds its own name)",
                    ep.provider,
                    plugins.names().join(", ")
                );
            }
        }
        Ok(())
    }

    /// The same endpoints, concurrency limit and ledger, for another
    /// instance: the limit holds across all of them.
    pub fn share(&self) -> Self {
        Self {
            config: self.config.clone(),
            limiter: self.limiter.clone(),
            ledger: self.ledger.clone(),
            plugins: self.plugins.clone(),
            answers: rehearsal::Answers::Live,
        }
    }

    /// The bounds the core keeps its LLM work within.
    pub fn bounds(&self) -> &mnemo_core::model::LlmPolicy {
        &self.config.bounds
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

/// The core's error for a failed plugin call, and the ledger's outcome:
/// the HTTP status or transport failure the host saw where there was one.
fn failure(e: CallError, wire: &Wire) -> (CoreError, String) {
    match e {
        CallError::Provider { plugin, error } => match error {
            ProviderError::MalformedResponse(m) => (malformed(m), "malformed".into()),
            ProviderError::RateLimited(ms) => (
                CoreError::Llm(format!(
                    "plugin `{plugin}`: rate limited{}",
                    ms.map(|ms| format!(" (retry after {ms} ms)"))
                        .unwrap_or_default()
                )),
                wire.outcome().unwrap_or_else(|| "rate limited".into()),
            ),
            ProviderError::Unavailable(m) => (
                CoreError::Llm(format!("plugin `{plugin}`: unavailable: {m}")),
                wire.outcome().unwrap_or_else(|| "unavailable".into()),
            ),
            ProviderError::InvalidRequest(m) => (
                CoreError::Llm(format!("plugin `{plugin}`: request refused: {m}")),
                wire.outcome().unwrap_or_else(|| "invalid".into()),
            ),
            ProviderError::Unsupported(m) => (
                CoreError::Unavailable(format!("plugin `{plugin}`: {m}")),
                "unsupported".into(),
            ),
        },
        e @ CallError::Denied { .. } => (CoreError::Llm(e.to_string()), "denied".into()),
        e @ CallError::Trapped { .. } => (CoreError::Llm(e.to_string()), "trapped".into()),
        e @ CallError::Refused { .. } => (CoreError::Llm(e.to_string()), "refused".into()),
    }
}

impl LlmClient {
    /// One completion through the endpoint's provider plugin, granted the
    /// endpoint's URL and key for this call only.
    fn through_plugin(
        &self,
        endpoint: &Endpoint,
        req: &ChatRequest,
        max_tokens: u32,
    ) -> Result<ChatResponse, (CoreError, String)> {
        let plugin = self
            .plugins
            .as_ref()
            .ok_or_else(|| "the LLM plugin engine is not running".to_string())
            .and_then(|p| p.get(&endpoint.provider))
            .map_err(|e| (CoreError::Unavailable(e), "no provider".to_string()))?;
        let grant = Grant {
            base_url: endpoint.base_url.clone(),
            key: endpoint.api_key.clone(),
            policy: self.config.policy.clone(),
            limiter: self.limiter.clone(),
        };
        let (result, wire) = plugin.chat(grant, &endpoint.model, req, max_tokens);
        result.map_err(|e| failure(e, &wire))
    }
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
        match &self.answers {
            rehearsal::Answers::Replay(script) => return script.answer(req),
            rehearsal::Answers::Collect(script, wave) => {
                return script.known(req).unwrap_or_else(|| Err(wave.add(req)));
            }
            rehearsal::Answers::Record(script) => {
                if let Some(known) = script.known(req) {
                    return known;
                }
            }
            rehearsal::Answers::Live => {}
        }
        self.live(req)
    }
}

impl LlmClient {
    /// Provider calls in flight at once.
    pub fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    /// Makes `requests` at once (at most the concurrency in flight) and
    /// keeps each answer, or its failure, in `script`.
    pub fn fetch(&self, requests: Vec<ChatRequest>, script: &rehearsal::Script) {
        let queue = std::sync::Mutex::new(requests);
        let workers = self.config.concurrency.max(1);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop());
                        let Some(req) = next else { return };
                        match self.live(&req) {
                            Ok(answer) => script.keep(&req, &answer),
                            Err(e) => script.keep_failure(&req, &e),
                        }
                    }
                });
            }
        });
    }

    /// One call to the provider, recorded in the ledger (and, in a
    /// rehearsal, in its script).
    fn live(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        let Some(endpoint) = self.endpoint_for(req.component) else {
            return Err(CoreError::Unavailable(format!(
                "no LLM endpoint configured for `{}`",
                req.component
            )));
        };
        let started = Instant::now();
        let max_tokens = req.max_tokens.unwrap_or(self.config.max_tokens);
        let sampled = endpoint.provider == sampling::PROVIDER;
        let result = match sampled {
            true => sampling::complete(req, max_tokens),
            false => self.through_plugin(endpoint, req, max_tokens),
        };
        let (input_tokens, output_tokens, outcome) = match &result {
            Ok(r) => (r.input_tokens, r.output_tokens, "ok".to_string()),
            Err((_, outcome)) => (0, 0, outcome.clone()),
        };
        // A sampled call is recorded as such, with the model the client
        // says it used.
        let model = match (&result, sampled) {
            (Ok(r), true) => format!("{}:{}", sampling::PROVIDER, r.model),
            (Err(_), true) => sampling::PROVIDER.to_string(),
            _ => endpoint.model.clone(),
        };
        self.ledger.record(Usage {
            at: now_ms(),
            component: req.component.to_string(),
            model,
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
