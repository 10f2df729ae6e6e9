//! Reading everything out for `mnemo export`, in insertion order.

use mnemo_core::model::*;
use rusqlite::params;

use super::SqliteStore;
use super::rows::{self, EPISODE_COLUMNS, MEMORY_COLUMNS, SESSION_COLUMNS};

/// An entity with the ids of its linked memories and episodes.
pub type LinkedEntity = (Entity, Vec<String>, Vec<String>);

/// `namespace = ?` or everything.
fn ns_clause(ns: Option<&str>) -> (&'static str, Vec<String>) {
    match ns {
        Some(n) => ("namespace = ?1", vec![n.to_string()]),
        None => ("1", Vec::new()),
    }
}

impl SqliteStore {
    /// Every memory, deleted ones included (the trash is part of the data).
    pub fn all_memories(&self, ns: Option<&str>) -> anyhow::Result<Vec<Memory>> {
        let (clause, p) = ns_clause(ns);
        let mut stmt = self.connection().prepare(&format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} ORDER BY rowid"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(p), rows::memory)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn all_episodes(&self, ns: Option<&str>) -> anyhow::Result<Vec<Episode>> {
        let (clause, p) = ns_clause(ns);
        let mut stmt = self.connection().prepare(&format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes WHERE {clause} ORDER BY rowid"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(p), rows::episode)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn all_sessions(&self, ns: Option<&str>) -> anyhow::Result<Vec<Session>> {
        let (clause, p) = ns_clause(ns);
        let mut stmt = self.connection().prepare(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE {clause} ORDER BY first_seen_at, id"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(p), rows::session)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every kept earlier state of a memory, oldest first per memory.
    pub fn all_versions(&self, ns: Option<&str>) -> anyhow::Result<Vec<MemoryVersion>> {
        let (clause, p) = ns_clause(ns);
        let ids: Vec<String> = {
            let mut stmt = self.connection().prepare(&format!(
                "SELECT DISTINCT memory_id FROM memory_versions WHERE {clause} ORDER BY memory_id"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(p), |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.memory_versions(&id)?);
        }
        Ok(out)
    }

    /// Every fact, superseded ones included (the history is part of the data).
    pub fn all_facts(&self, ns: Option<&str>) -> anyhow::Result<Vec<Fact>> {
        let (clause, p) = ns_clause(ns);
        let mut stmt = self.connection().prepare(&format!(
            "SELECT id, namespace, subject, predicate, object, confidence, valid_from, valid_until, \
             superseded_by, memory_id FROM facts WHERE {clause} ORDER BY rowid"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(p), rows::fact)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Entities with the ids of the memories and episodes linked to them.
    pub fn all_entities(&self, ns: Option<&str>) -> anyhow::Result<Vec<LinkedEntity>> {
        let (clause, p) = ns_clause(ns);
        let mut stmt = self.connection().prepare(&format!(
            "SELECT id, namespace, canonical_name, entity_type, aliases, mention_count, summary FROM entities WHERE {clause} ORDER BY rowid"
        ))?;
        let entities: Vec<Entity> = stmt
            .query_map(rusqlite::params_from_iter(p), rows::entity)?
            .collect::<rusqlite::Result<_>>()?;
        let mut mem = self.connection().prepare(
            "SELECT memory_id FROM memory_entities WHERE entity_id = ?1 ORDER BY memory_id",
        )?;
        let mut ep = self.connection().prepare(
            "SELECT episode_id FROM episode_entities WHERE entity_id = ?1 ORDER BY episode_id",
        )?;
        let mut out = Vec::with_capacity(entities.len());
        for e in entities {
            let m: Vec<String> = mem
                .query_map(params![e.id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let x: Vec<String> = ep
                .query_map(params![e.id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            out.push((e, m, x));
        }
        Ok(out)
    }
}
