//! `/keys`: the operator's scoped API keys (issue 43, `keys.rs`): made,
//! listed, rotated and revoked here or with `mnemo keys`. A key's secret is
//! in the answer that makes (or rotates) it, and nowhere after.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use crate::keys::{self, KeyInfo, Role};
use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Body, Reply};

/// A key to make.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::server) struct NewKey {
    /// Who or what holds it (a label for the list).
    name: String,
    /// `read`, `write` or `admin` (the operator's routes too).
    role: Role,
    /// The namespaces it writes and reads: names, prefixes ending in `*`
    /// (`team-a*`), or `*` for every one.
    namespaces: Vec<String>,
    /// The namespaces it only reads (never writes nor reinforces), in the
    /// same form.
    #[serde(default)]
    reads: Vec<String>,
}

/// A key made or rotated: its record, and the key itself — shown once.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct IssuedKey {
    #[serde(flatten)]
    info: KeyInfo,
    /// The bearer token (`mnemo_<id>_<secret>`); the store keeps only its hash.
    key: String,
}

fn refused(e: anyhow::Error) -> ApiError {
    let message = format!("{e:#}");
    if message.starts_with("no key") {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    } else {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }
}

pub(in crate::server) async fn create_key(
    State(s): State<AppState>,
    Body(req): Body<NewKey>,
) -> Answer<IssuedKey> {
    let now = crate::ledger::now_ms();
    let (record, key) = s
        .engine
        .run(move |m| {
            let store = &m.ports().store;
            keys::create(store, &req.name, req.role, &req.namespaces, &req.reads, now)
        })
        .await?
        .map_err(refused)?;
    Reply::created(IssuedKey {
        info: KeyInfo::from(&record),
        key,
    })
}

pub(in crate::server) async fn list_keys(State(s): State<AppState>) -> Answer<Vec<KeyInfo>> {
    let keys = s
        .engine
        .read(|m| keys::list(&m.ports().store))
        .await?
        .map_err(ApiError::storage)?;
    Reply::ok(keys.iter().map(KeyInfo::from).collect())
}

pub(in crate::server) async fn rotate_key(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Answer<IssuedKey> {
    let now = crate::ledger::now_ms();
    let (record, key) = s
        .engine
        .run(move |m| keys::rotate(&m.ports().store, &id, now))
        .await?
        .map_err(refused)?;
    Reply::ok(IssuedKey {
        info: KeyInfo::from(&record),
        key,
    })
}

pub(in crate::server) async fn revoke_key(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Answer<KeyInfo> {
    let now = crate::ledger::now_ms();
    let record = s
        .engine
        .run(move |m| keys::revoke(&m.ports().store, &id, now))
        .await?
        .map_err(refused)?;
    Reply::ok(KeyInfo::from(&record))
}
