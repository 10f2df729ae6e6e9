//! `/episodes` and `/sessions`: dialogue turns and their sessions.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use mnemo_core::model::*;
use mnemo_core::ports::Storage as _;
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

use crate::server::AppState;
use crate::server::error::ApiError;
use crate::server::reply::{Answer, Body, Reply};

use super::*;
use crate::server::args::*;

pub(in crate::server) async fn ingest(
    State(s): State<AppState>,
    headers: HeaderMap,
    Body(mut turn): Body<Turn>,
) -> Answer<IngestOutcome> {
    turn.namespace = namespace(&headers, &turn.namespace);
    let out = s
        .engine
        .run_in(turn.namespace.clone(), move |m| m.ingest(turn))
        .await??;
    if !out.pending_sessions.is_empty() {
        s.engine
            .consolidate_sessions_later(&out.episode.namespace, &out.pending_sessions);
    }
    Reply::created(out)
}

#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct Sessions {
    /// Most recently active first.
    pub(in crate::server) sessions: Vec<Session>,
}

/// A session and a page of its turns.
#[derive(Serialize, JsonSchema)]
pub(in crate::server) struct SessionTurns {
    /// The session.
    session: Session,
    /// In dialogue order.
    episodes: Vec<Episode>,
}

/// The sessions of a namespace, most recently active first.
pub(in crate::server) async fn list_sessions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<SessionsArgs>,
) -> Answer<Sessions> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let (pending, limit) = (q.pending, q.limit());
    let sessions = s
        .engine
        .read(move |m| m.ports().store.sessions(&ns, pending, limit))
        .await?
        .map_err(ApiError::storage)?;
    Reply::ok(Sessions { sessions })
}

/// One session and its turns in dialogue order (`offset`, `limit`).
pub(in crate::server) async fn get_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> Answer<SessionTurns> {
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
    Reply::ok(SessionTurns { session, episodes })
}

/// Seed 003's session consolidation for one session, now (it is otherwise
/// run when a new session starts, and nightly). A session already
/// consolidated is left alone: the report lists no session.
pub(in crate::server) async fn consolidate_session(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<NsQuery>,
) -> Answer<ConsolidateReport> {
    let ns = namespace(&headers, q.namespace.as_deref().unwrap_or(""));
    let report = s
        .engine
        .run_planned(Some(ns.clone()), move |m, _| {
            m.consolidate_sessions(&ns, std::slice::from_ref(&id))
                .map_err(ApiError::from)
        })
        .await??;
    Reply::ok(report)
}
