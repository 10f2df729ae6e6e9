//! Reads by id, listing and counts.

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Ports, Storage};
use crate::thresholds::*;
use crate::validate;

/// Memories read per page by a whole-store walk.
const WALK_PAGE: u32 = 500;

impl<P: Ports> Engine<P> {
    /// A memory of `namespace`, or of a namespace it reads (`sharing.rs`).
    pub fn get(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, true)
    }

    /// A memory that `namespace` may change: its own, never a shared one.
    pub(crate) fn get_owned(&self, namespace: &str, id: &str) -> CoreResult<Memory> {
        self.find_memory(namespace, id, false)
    }

    /// Settled (its importance now, `lifecycle/importance.rs`): what a
    /// caller shows or changes and writes back.
    fn find_memory(&self, namespace: &str, id: &str, read_shared: bool) -> CoreResult<Memory> {
        let namespace = validate::namespace(namespace)?;
        let readable = match read_shared {
            true => self.readable_namespaces(&namespace)?,
            false => vec![namespace.clone()],
        };
        let mut m = self
            .ports()
            .storage()
            .get_memories(&[id.to_string()])?
            .into_iter()
            .find(|m| readable.contains(&m.namespace))
            .ok_or_else(|| {
                CoreError::NotFound(format!("no memory `{id}` in namespace `{namespace}`"))
            })?;
        self.settle_all(std::slice::from_mut(&mut m))?;
        Ok(m)
    }

    /// Walks every memory `q` selects, newest first (by creation, or by
    /// modification with `by_modified`), `WALK_PAGE` at a time by keyset:
    /// each page costs its own rows, where an offset costs every row before
    /// it (at 100k, offset pages were 94% of a 42 s cycle). `f` sees each
    /// page and says whether to go on; a row it changes or removes does not
    /// shift the walk.
    pub(crate) fn walk_memories(
        &self,
        mut q: ListQuery,
        mut f: impl FnMut(Vec<Memory>) -> CoreResult<bool>,
    ) -> CoreResult<()> {
        q.limit = WALK_PAGE;
        q.offset = 0;
        loop {
            let page = self.ports().storage().list_memories(&q)?;
            let full = page.len() == WALK_PAGE as usize;
            if let Some(last) = page.last() {
                let time = match q.by_modified {
                    true => last.modified_at,
                    false => last.created_at,
                };
                q.after_time = Some(time);
                q.after_id = Some(last.id.clone());
            }
            if !f(page)? || !full {
                return Ok(());
            }
        }
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
