//! `/episodes` and `/sessions`: dialogue turns and their sessions.

use crate::server::json::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;

use serde_json::json;

use crate::server::AppState;
use crate::server::error::{ApiError, ApiResult, parse};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn ingest(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult {
    let mut turn: Turn = parse(&body)?;
    turn.namespace = namespace(&headers, &turn.namespace);
    let out = s.engine.run(move |m| m.ingest(turn)).await??;
    if !out.pending_sessions.is_empty() {
        s.engine
            .consolidate_sessions_later(&out.episode.namespace, &out.pending_sessions);
    }
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

/// The sessions of a namespace, most recently active first.
pub(in crate::server) async fn list_sessions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SessionsArgs>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (pending, limit) = (q.pending, q.limit());
    let sessions = s
        .engine
        .read(move |m| m.ports().store.sessions(&ns, pending, limit))
        .await?
        .map_err(ApiError::storage)?;
    Ok(Json(json!({ "sessions": sessions })).into_response())
}

/// One session and its turns in dialogue order (`offset`, `limit`).
pub(in crate::server) async fn get_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(200));
    let (session, episodes) = s
        .engine
        .read(move |m| {
            let store = &m.ports().store;
            Ok::<_, mnemo_core::CoreError>((
                store.get_session(&ns, &id)?,
                store.session_episodes(&ns, &id, offset, limit)?,
            ))
        })
        .await?
        .map_err(ApiError::storage)?;
    let Some(session) = session else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such session",
        ));
    };
    Ok(Json(json!({ "session": session, "episodes": episodes })).into_response())
}

/// Seed 003's session consolidation for one session, now (it is otherwise
/// run when a new session starts, and nightly). A session already
/// consolidated is left alone: the report lists no session.
pub(in crate::server) async fn consolidate_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> ApiResult {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let report = s
        .engine
        .run_planned(move |m, _| {
            m.consolidate_sessions(&ns, std::slice::from_ref(&id))
                .map_err(ApiError::from)
        })
        .await??;
    Ok(Json(report).into_response())
}
