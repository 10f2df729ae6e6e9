//! LLM providers behind the core's `Llm` port. With the level `off` (the
//! default) every call is refused with a typed error and the core takes its
//! heuristic path.

use mnemo_core::model::{ChatRequest, ChatResponse, LlmLevel};
use mnemo_core::ports::Llm;
use mnemo_core::{CoreError, CoreResult};

/// The configured LLM access.
pub struct LlmClient {
    level: LlmLevel,
}

impl LlmClient {
    pub fn off() -> Self {
        Self {
            level: LlmLevel::Off,
        }
    }
}

impl Llm for LlmClient {
    fn level(&self) -> LlmLevel {
        self.level
    }

    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        Err(CoreError::Unavailable(format!(
            "LLM step `{}` skipped: the LLM level is `{}` and no endpoint is configured",
            req.component, self.level
        )))
    }
}
