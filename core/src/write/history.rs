//! The history of a memory: every state an edit, a merge or a revert
//! replaced is kept whole as a numbered version, listable
//! (`GET /memories/{id}/history`, `mnemo history ID`) and restorable
//! (`revert`). Together with the trash (soft deletes with a reason) this is
//! how nothing the agent was told becomes unreachable: a change of text
//! never overwrites without keeping what was there (issue 13, the "nothing
//! is lost silently" standard).

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Ports, Storage};

impl<P: Ports> Engine<P> {
    /// Keep `before` as the next version of its memory: the state that
    /// `action` replaced, and why. Returns the version's number.
    pub(crate) fn keep_version(
        &self,
        before: &Memory,
        action: Action,
        reason: String,
    ) -> CoreResult<u32> {
        let storage = self.ports().storage();
        let seq = storage
            .memory_versions(&before.id)?
            .last()
            .map_or(1, |v| v.seq.saturating_add(1));
        storage.put_version(&MemoryVersion {
            memory_id: before.id.clone(),
            namespace: before.namespace.clone(),
            seq,
            replaced_at: self.now(),
            action,
            reason,
            memory: before.clone(),
        })?;
        Ok(seq)
    }

    /// The earlier states of a memory, oldest first (empty if never changed).
    pub fn history(&self, namespace: &str, id: &str) -> CoreResult<Vec<MemoryVersion>> {
        let m = self.get(namespace, id)?;
        self.ports().storage().memory_versions(&m.id)
    }

    /// Put version `seq` back: its text, kind, tags, attributes and
    /// importance. The lifecycle's state (layer, counts, validity) stays as
    /// it is now, and the state being replaced is kept as a version too, so
    /// a revert is itself undoable.
    pub fn revert(&self, namespace: &str, id: &str, seq: u32) -> CoreResult<Memory> {
        let current = self.get_owned(namespace, id)?;
        if !current.is_active() {
            return Err(CoreError::Conflict(format!(
                "memory `{id}` is deleted; restore it first"
            )));
        }
        let storage = self.ports().storage();
        let Some(version) = storage
            .memory_versions(id)?
            .into_iter()
            .find(|v| v.seq == seq)
        else {
            return Err(CoreError::NotFound(format!(
                "memory `{id}` has no version {seq}"
            )));
        };
        let was = version.memory;
        let mut m = current.clone();
        m.content = was.content;
        m.kind = was.kind;
        m.tags = was.tags;
        m.attributes = was.attributes;
        m.importance = was.importance;
        if m == current {
            return Ok(current);
        }
        m.modified_at = self.now();
        let kept = self.keep_version(
            &current,
            Action::Revert,
            format!("reverted to version {seq}"),
        )?;
        storage.update_memory(&m)?;
        if m.content != current.content {
            self.revector(Target::Memories, &m.id, &m.content)?;
        }
        self.log_decision(
            &m.namespace,
            Action::Revert,
            &m.id,
            format!("reverted to version {seq}; the replaced state is version {kept}"),
        )?;
        Ok(m)
    }
}
