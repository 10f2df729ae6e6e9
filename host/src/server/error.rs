//! The JSON error every failure answers with — `{"error": {"code",
//! "message"}}` under a matching status — and the body parsing that tells a
//! syntax error (400) from a body of the wrong shape (422).

use crate::runtime::CallError;
use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mnemo_core::CoreError;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A JSON error: `{"error": {"code", "message"}}` with a matching status.
#[derive(Debug)]
pub struct ApiError {
    pub(super) status: StatusCode,
    pub(super) code: &'static str,
    pub(super) message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
    pub fn unavailable(m: &str) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
    }

    /// A write to a database that cannot be written (503: the server is up
    /// and serves reads; the write may succeed once the database can be
    /// written and the server restarted).
    pub fn read_only() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "read_only",
            crate::storage::READ_ONLY,
        )
    }

    /// A storage failure outside the core (a read the host serves itself).
    pub fn storage(e: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage",
            format!("{e:#}"),
        )
    }

    /// The stable code for a status axum answered by itself.
    pub fn from_status(status: StatusCode, message: String) -> Self {
        let code = match status {
            StatusCode::BAD_REQUEST => "invalid_request",
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::UNPROCESSABLE_ENTITY => "invalid_request",
            s if s.is_server_error() => "internal",
            _ => "error",
        };
        Self::new(status, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "error": { "code": self.code, "message": self.message } })),
        )
            .into_response()
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "storage", format!("{e:#}"))
    }
}

impl From<CallError> for ApiError {
    fn from(e: CallError) -> Self {
        let status = match &e {
            CallError::Core(CoreError::InvalidInput(_)) => StatusCode::BAD_REQUEST,
            CallError::Core(CoreError::NotFound(_)) => StatusCode::NOT_FOUND,
            CallError::Core(CoreError::Conflict(_)) => StatusCode::CONFLICT,
            CallError::Core(
                CoreError::Unavailable(_) | CoreError::Embedding(_) | CoreError::Llm(_),
            ) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let code = match &e {
            CallError::Core(c) => c.code(),
            CallError::Trap(_) => "internal",
        };
        Self::new(status, code, e.to_string())
    }
}

/// Parses a JSON body: syntax errors are 400, a body of the wrong shape 422.
pub fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            "the body is not valid UTF-8",
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!("malformed JSON: {e}"),
        )
    })?;
    // serde reads a struct from an array too (`[null, null]`); every body
    // of this API is an object.
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "the body must be a JSON object",
        ));
    }
    serde_json::from_value(value).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            e.to_string(),
        )
    })
}

/// [`parse`], with an empty body meaning every field's default (the routes
/// whose body is optional: consolidate, reflect, review, enrich).
pub fn parse_or_default<T: DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.is_empty() {
        return Ok(T::default());
    }
    parse(body)
}
