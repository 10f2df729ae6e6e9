//! The core's error type: one variant per kind of failure a caller can act on.
//! Mirrors the WIT `error` variant one to one.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "code", content = "message", rename_all = "snake_case")]
pub enum CoreError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("storage: {0}")]
    Storage(String),
    #[error("embedding: {0}")]
    Embedding(String),
    #[error("llm: {0}")]
    Llm(String),
    #[error("ner: {0}")]
    Ner(String),
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl CoreError {
    /// A stable machine-readable code, used by the HTTP API and the CLI.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidInput(_) => "invalid_input",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::Storage(_) => "storage",
            Self::Embedding(_) => "embedding",
            Self::Llm(_) => "llm",
            Self::Ner(_) => "ner",
            Self::Unavailable(_) => "unavailable",
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidInput(msg.into())
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
