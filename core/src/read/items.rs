//! Reads by id, listing and counts.

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;
use crate::validate::{self, DEFAULT_NAMESPACE};

impl<P: Ports> Engine<P> {
    /// A memory of `namespace` (or of `default`, which every namespace reads).
    pub fn get(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, true)
    }

    /// A memory that `namespace` may change: its own, never `default`'s from a project.
    pub(crate) fn get_owned(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, false)
    }

    /// Settled (its importance now, `lifecycle/importance.rs`): what a
    /// caller shows or changes and writes back.
    fn find_memory(&self, namespace: &str, id: &str, read_default: bool) -> CoreResult<Memory> {
        let namespace = validate::namespace(namespace)?;
        let mut m = self
            .ports()
            .storage()
            .get_memories(&[id.to_string()])?
            .into_iter()
            .find(|m| {
                m.namespace == namespace || (read_default && m.namespace == DEFAULT_NAMESPACE)
            })
            .ok_or_else(|| {
                CoreError::NotFound(format!("no memory `{id}` in namespace `{namespace}`"))
            })?;
        self.settle_all(std::slice::from_mut(&mut m))?;
        Ok(m)
    }

    pub fn list(&self, req: ListRequest) -> CoreResult<Vec<Memory>> {
        let namespace = validate::namespace(&req.namespace)?;
        if req.limit > MAX_RECALL_LIMIT * 5 {
            return Err(CoreError::invalid(format!(
                "limit must be at most {}",
                MAX_RECALL_LIMIT * 5
            )));
        }
        let mut page = self.ports().storage().list_memories(&ListQuery {
            namespaces: vec![namespace],
            layers: req.layers,
            kinds: req.kinds,
            tags: validate::tags(&req.tags)?,
            state: if req.deleted {
                ListState::Deleted
            } else {
                ListState::Active
            },
            limit: req.limit,
            offset: req.offset,
            ..Default::default()
        })?;
        self.settle_all(&mut page)?;
        Ok(page)
    }

    /// Counts for one namespace, or for the whole store.
    pub fn stats(&self, namespace: Option<&str>) -> CoreResult<StoreStats> {
        let namespaces = match namespace {
            Some(ns) => vec![validate::namespace(ns)?],
            None => Vec::new(),
        };
        self.ports().storage().stats(&namespaces)
    }
}
