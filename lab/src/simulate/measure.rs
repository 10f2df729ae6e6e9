//! What the simulation measures: a row of counts every ten days, the Core
//! memories seen, and the three end-of-run verdicts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{NS, RECENT_DAYS, Sim};

/// The state of the store at the end of a day.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub day: u32,
    /// Statements told so far.
    pub stored: usize,
    pub buffer: u64,
    pub working: u64,
    pub core: u64,
    pub trash: u64,
    /// Decisions so far, by what they did.
    pub promoted: u64,
    pub merged: u64,
    pub evicted: u64,
    pub faded: u64,
    pub restored: u32,
    pub facts: u64,
    pub topics: usize,
    /// LLM calls the scripted server answered so far.
    pub llm_calls: u64,
}

impl Sim {
    /// The simulation's store: always a SQLite file in a temporary folder.
    fn sqlite(&self) -> anyhow::Result<&mnemo_host::storage::SqliteStore> {
        self.m
            .ports()
            .store
            .sqlite()
            .ok_or_else(|| anyhow::anyhow!("the simulation runs on a SQLite file"))
    }

    fn decisions(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let conn = self.sqlite()?.connection();
        let mut stmt = conn.prepare("SELECT action, COUNT(*) FROM audit_log GROUP BY action")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub(super) fn row(&mut self, day: u32) -> anyhow::Result<Row> {
        let stats = self.m.stats(Some(NS))?;
        let topics = self.m.topics(NS, &[])?.len();
        let d = self.decisions()?;
        let n = |k: &str| d.get(k).copied().unwrap_or(0);
        Ok(Row {
            day,
            stored: self.statements.len(),
            buffer: stats.buffer,
            working: stats.working,
            core: stats.core,
            trash: stats.deleted,
            promoted: n("promote"),
            merged: n("merge"),
            evicted: n("evict"),
            faded: n("fade"),
            restored: self.restored,
            facts: stats.facts,
            topics,
            llm_calls: 0,
        })
    }

    /// Remembers which memories are in Core now.
    pub(super) fn note_core(&mut self) -> anyhow::Result<()> {
        let conn = self.sqlite()?.connection();
        let mut stmt = conn.prepare(
            "SELECT id, confidence FROM memories WHERE layer = 'core' AND valid_until IS NULL",
        )?;
        let rows: Vec<(String, f64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        drop(stmt);
        for (id, confidence) in rows {
            self.core_seen.entry(id).or_insert(confidence as f32);
        }
        Ok(())
    }

    /// Whether a statement's text can still be found where it went: its
    /// memory's text, a restatement kept on it, or one of its versions.
    fn reachable(&mut self, s: usize) -> anyhow::Result<bool> {
        let st = self.statements[s].clone();
        let Ok(m) = self.m.get(NS, &st.memory) else {
            return Ok(false);
        };
        if !m.is_active() && m.invalid_reason.is_none() {
            return Ok(false);
        }
        let text = st.text.trim();
        if m.content.trim() == text {
            return Ok(true);
        }
        let attrs: serde_json::Value = serde_json::from_str(&m.attributes).unwrap_or_default();
        if attrs["restatements"].as_array().is_some_and(|r| {
            r.iter()
                .any(|x| x["text"].as_str().map(str::trim) == Some(text))
        }) {
            return Ok(true);
        }
        Ok(self
            .m
            .history(NS, &m.id)?
            .iter()
            .any(|v| v.memory.content.trim() == text))
    }

    /// `lost`, `hidden_recent`, `core_decayed`, and examples of each.
    pub(super) fn verdicts(
        &mut self,
        days: u32,
    ) -> anyhow::Result<(usize, usize, usize, Vec<String>)> {
        let mut examples = Vec::new();
        let (mut lost, mut hidden) = (0, 0);
        for s in 0..self.statements.len() {
            if !self.reachable(s)? {
                lost += 1;
                let st = &self.statements[s];
                examples.push(format!(
                    "lost (day {}): {:?} in {}",
                    st.day, st.text, st.memory
                ));
            }
            let st = self.statements[s].clone();
            if st.recalled.is_some_and(|d| d + RECENT_DAYS >= days)
                && self.resolve(&st.memory)?.is_none()
            {
                hidden += 1;
                let m = self.m.get(NS, &st.memory)?;
                examples.push(format!(
                    "hidden_recent (said day {}): {:?} ({:?}: {:?})",
                    st.day, st.text, m.layer, m.invalid_reason
                ));
            }
        }
        let mut core_decayed = 0;
        for (id, confidence) in self.core_seen.clone() {
            let m = self.m.get(NS, &id)?;
            let left = !m.is_active()
                && !matches!(
                    m.invalid_reason.as_deref(),
                    Some("merged" | "superseded" | "corrected")
                );
            if left || m.confidence < confidence - 1e-6 {
                core_decayed += 1;
                examples.push(format!(
                    "core_decayed: {} ({:?}, confidence {:.3})",
                    m.content, m.invalid_reason, m.confidence
                ));
            }
        }
        examples.truncate(20);
        Ok((lost, hidden, core_decayed, examples))
    }
}
