//! Typed bodies and answers. A route takes its JSON body as [`Body<T>`] (or
//! [`OptionalBody<T>`]) and answers [`Answer<T>`]; its query string is
//! axum's `Query<T>`. Those types are what `doc.rs` reads off each
//! handler's signature to write the OpenAPI document, so a route cannot
//! take or give anything its document does not say.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{ApiError, parse, parse_or_default};
use super::json::Json;

/// A route's answer: a success status and a typed JSON body, its numbers
/// printed as stored (`json.rs`).
pub struct Reply<T> {
    status: StatusCode,
    body: T,
}

/// What a route returns.
pub type Answer<T> = Result<Reply<T>, ApiError>;

impl<T> Reply<T> {
    /// 200 with `body`.
    pub fn ok(body: T) -> Answer<T> {
        Ok(Self {
            status: StatusCode::OK,
            body,
        })
    }

    /// 201 with `body`: something new was stored.
    pub fn created(body: T) -> Answer<T> {
        Ok(Self {
            status: StatusCode::CREATED,
            body,
        })
    }

    /// 201 when `created`, else 200.
    pub fn created_if(created: bool, body: T) -> Answer<T> {
        if created {
            Self::created(body)
        } else {
            Self::ok(body)
        }
    }
}

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

/// JSON lines (`GET /export`).
pub struct Ndjson(pub Vec<u8>);

impl IntoResponse for Ndjson {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "application/x-ndjson")], self.0).into_response()
    }
}

/// A JSON body of type `T`: bad JSON is a 400 `malformed_json`, a body of
/// the wrong shape a 422 `invalid_request` (`error::parse`).
pub struct Body<T>(pub T);

/// [`Body`], or every field's default when the body is empty.
pub struct OptionalBody<T>(pub T);

async fn bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state)
        .await
        .map_err(|e| ApiError::from_status(e.status(), e.body_text()))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse(&bytes(req, state).await?).map(Body)
    }
}

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse_or_default(&bytes(req, state).await?).map(OptionalBody)
    }
}
