//! Episodes (dialogue turns) and sessions.

use mnemo_core::model::*;

use rusqlite::{OptionalExtension, params, params_from_iter};

use super::filter::in_list;
use super::rows::{self, EPISODE_COLUMNS, SESSION_COLUMNS};

use super::sqlite::*;

impl SqliteStore {
    pub fn insert_episode(&self, e: &Episode) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "INSERT INTO episodes ({EPISODE_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
        )))?;
        sql(stmt.execute(params![
            e.id,
            e.namespace,
            e.session_id,
            e.source_role,
            e.content,
            e.event_time,
            e.created_at,
            e.valid_until,
            e.invalid_reason,
            e.attributes
        ]))?;
        Ok(())
    }

    pub fn get_episodes(&self, ids: &[String]) -> R<Vec<Episode>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut stmt = sql(self.conn.prepare_cached(&format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE id IN ({})",
                in_list(chunk.len())
            )))?;
            let rows = sql(stmt.query_map(params_from_iter(chunk), rows::episode))?;
            out.extend(sql(rows.collect::<rusqlite::Result<Vec<_>>>())?);
        }
        Ok(out)
    }

    pub fn get_session(&self, namespace: &str, id: &str) -> R<Option<Session>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE namespace = ?1 AND id = ?2"
        )))?;
        sql(stmt
            .query_row(params![namespace, id], rows::session)
            .optional())
    }

    pub fn put_session(&self, s: &Session) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let mut stmt = sql(self.conn.prepare_cached(
            "INSERT INTO sessions (namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns) \
             VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(namespace, id) DO UPDATE SET \
             last_seen_at = excluded.last_seen_at, turn_count = excluded.turn_count, \
             consolidated_at = excluded.consolidated_at, consolidated_turns = excluded.consolidated_turns",
        ))?;
        sql(stmt.execute(params![
            s.namespace,
            s.id,
            s.first_seen_at,
            s.last_seen_at,
            s.turn_count,
            s.consolidated_at,
            s.consolidated_turns
        ]))?;
        Ok(())
    }

    pub fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> R<Vec<Session>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE (?1 = '' OR namespace = ?1) AND consolidated_at IS NULL AND (?2 IS NULL OR id != ?2) \
             ORDER BY first_seen_at"
        )))?;
        let rows = sql(stmt.query_map(params![namespace, exclude], rows::session))?;
        sql(rows.collect())
    }

    pub fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> R<Vec<Episode>> {
        let mut stmt = sql(self.conn.prepare_cached(&format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes WHERE namespace = ?1 AND session_id = ?2 \
             AND valid_until IS NULL ORDER BY event_time, created_at, rowid LIMIT ?3 OFFSET ?4"
        )))?;
        let rows =
            sql(stmt.query_map(params![namespace, session_id, limit, offset], rows::episode))?;
        sql(rows.collect())
    }
}
