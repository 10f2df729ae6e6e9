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

    /// Earlier states kept in the memories' histories (edits, merges,
    /// reverts, wordings moved past the cap): what the run can restore.
    pub(super) fn versions(&self) -> anyhow::Result<u64> {
        let conn = self.sqlite()?.connection();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM memory_versions", [], |r| r.get(0))?;
        Ok(n as u64)
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
    /// memory's text, a restatement kept on it, or one of its versions (its
    /// text or the restatements kept on it).
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
        let restated = |m: &mnemo_core::model::Memory| {
            let attrs: serde_json::Value = serde_json::from_str(&m.attributes).unwrap_or_default();
            attrs["restatements"].as_array().is_some_and(|r| {
                r.iter()
                    .any(|x| x["text"].as_str().map(str::trim) == Some(text))
            })
        };
        if restated(&m) {
            return Ok(true);
        }
        // A version keeps a state whole: its text, and the wordings kept
        // on it then (the oldest move there past the cap).
        Ok(self
            .m
            .history(NS, &m.id)?
            .iter()
            .any(|v| v.memory.content.trim() == text || restated(&v.memory)))
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

/// The active memory `id` leads to through `superseded_by`, to the chain's
/// end however long it is (a fact restated and reconciled every few days
/// grows one link each time: seed 7's had 18 in 63 days, past the 16 this
/// walk once stopped at); `None` when the chain ends inactive or loops.
pub(crate) fn resolve(
    m: &mut mnemo_host::Mnemo,
    id: &str,
) -> anyhow::Result<Option<mnemo_core::model::Memory>> {
    let mut seen = std::collections::HashSet::new();
    let mut id = id.to_string();
    while seen.insert(id.clone()) {
        let memory = m.get(NS, &id)?;
        if memory.is_active() {
            return Ok(Some(memory));
        }
        match memory.superseded_by {
            Some(next) => id = next,
            None => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::model::RememberRequest;
    use mnemo_host::Mnemo;
    use mnemo_host::config::Config;

    /// Seed 7's `hidden_recent`: a memory 18 supersessions from what the
    /// user said is still that statement's memory.
    #[test]
    fn a_chain_longer_than_sixteen_still_leads_to_its_active_memory() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::with_hash_embedder(dir.path().join("chain.db"), dir.path().into());
        let mut m = Mnemo::open(&config).unwrap();
        let first = m
            .remember(RememberRequest {
                namespace: NS.into(),
                content: "The dentist is Quentin, version 0".into(),
                ..Default::default()
            })
            .unwrap()
            .memory;
        let mut last = first.clone();
        for i in 1..=20 {
            last = m
                .correct(
                    NS,
                    &last.id,
                    &format!("The dentist is Quentin, version {i}"),
                )
                .unwrap();
        }
        let found = resolve(&mut m, &first.id)
            .unwrap()
            .expect("the chain's end");
        assert_eq!(found.id, last.id);
        assert!(!m.get(NS, &first.id).unwrap().is_active());
    }
}
