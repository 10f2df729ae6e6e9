//! `Engine<P>`: the memory engine over its ports. This file holds only the
//! struct and the helpers every flow shares (clock, epoch, decision log,
//! embedding one text); the operations are `impl Engine` blocks in the flow
//! that owns them — `write/`, `read/`, `lifecycle/`, `agent/`.

use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Clock, Embedder, Ports, Storage};

/// Metadata key of the current consolidation epoch.
pub const META_EPOCH: &str = "epoch";
/// A metadata key of one namespace (`epoch:work`).
pub fn namespaced(key: &str, namespace: &str) -> String {
    format!("{key}:{namespace}")
}

/// Restatements kept as provenance on a reinforced memory.
pub const MAX_RESTATEMENTS: usize = 20;

pub struct Engine<P: Ports> {
    ports: P,
    /// The bounds of LLM work and the state of the call under way
    /// (`guard/`).
    pub(crate) guard: std::cell::RefCell<crate::guard::state::Guard>,
    /// Who reads whose memories (`sharing.rs`).
    pub(crate) sharing: Sharing,
}

impl<P: Ports> Engine<P> {
    pub fn new(ports: P) -> Self {
        Self::with_policy(ports, LlmPolicy::default())
    }

    /// An engine whose background LLM work keeps within `policy`.
    pub fn with_policy(ports: P, policy: LlmPolicy) -> Self {
        Self {
            ports,
            guard: crate::guard::state::Guard::new(policy),
            sharing: Sharing::default(),
        }
    }

    /// The engine with `sharing` as its rule of who reads whom.
    pub fn with_sharing(mut self, sharing: Sharing) -> Self {
        self.sharing = sharing;
        self
    }

    pub fn ports(&self) -> &P {
        &self.ports
    }

    pub(crate) fn now(&self) -> Millis {
        self.ports.clock().now()
    }

    /// A namespace's consolidation epoch: each namespace counts the cycles
    /// that processed it (`epoch:<namespace>`); before its first, the
    /// store-wide count (`epoch`, which only whole-store cycles advance).
    pub(crate) fn epoch(&self, namespace: &str) -> CoreResult<u64> {
        match self.meta_number(&namespaced(META_EPOCH, namespace))? {
            Some(e) => Ok(e),
            None => Ok(self.meta_number(META_EPOCH)?.unwrap_or(0)),
        }
    }

    /// A number kept in the metadata table; unset or unreadable is `None`.
    pub(crate) fn meta_number<T: std::str::FromStr>(&self, key: &str) -> CoreResult<Option<T>> {
        Ok(self
            .ports
            .storage()
            .get_meta(key)?
            .and_then(|v| v.parse().ok()))
    }

    pub(crate) fn log_decision(
        &self,
        namespace: &str,
        action: Action,
        target_id: &str,
        detail: String,
    ) -> CoreResult<()> {
        self.ports.storage().log_decision(&Decision {
            at: self.now(),
            namespace: namespace.to_string(),
            action,
            target_id: target_id.to_string(),
            detail,
        })
    }

    /// Gives item `id` the vector of its (new) `text`. When the provider
    /// fails, the old vector — of a text that no longer is — is forgotten,
    /// so the host's backfill embeds the item again instead of it keeping a
    /// stale vector forever.
    pub(crate) fn revector(&self, target: Target, id: &str, text: &str) -> CoreResult<()> {
        let storage = self.ports.storage();
        match self.embed_one(text)? {
            Some(v) => storage.put_vector(target, id, &v),
            None if storage.vectors_enabled()? => storage.delete_vector(target, id),
            None => Ok(()),
        }
    }

    /// The vector for `text`, or `None` when vectors are disabled or the
    /// provider failed (the host backfills missing vectors later).
    pub(crate) fn embed_one(&self, text: &str) -> CoreResult<Option<Vec<f32>>> {
        if !self.ports.storage().vectors_enabled()? {
            return Ok(None);
        }
        Ok(self
            .ports
            .embedder()
            .embed(&[text.to_string()])
            .ok()
            .and_then(|mut v| v.pop()))
    }
}
