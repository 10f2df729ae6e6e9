//! "Tell me everything about X": an entity and what is linked to it.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::Ports;

impl<P: Ports> Engine<P> {
    /// An entity's profile and its linked memories and episodes.
    pub fn entity_info(
        &self,
        namespace: &str,
        name: &str,
        limit: u32,
    ) -> CoreResult<Vec<crate::model::EntityProfile>> {
        use crate::ports::Storage;
        let namespace = crate::validate::namespace(namespace)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(crate::CoreError::invalid("entity name is empty"));
        }
        let limit = if limit == 0 {
            20
        } else {
            limit.min(crate::thresholds::MAX_RECALL_LIMIT)
        };
        let storage = self.ports().storage();
        let namespaces = self.readable_namespaces(&namespace)?;
        let mut out = Vec::new();
        for entity in storage.find_entities(&namespaces, name.trim_start_matches(['@', '#']))? {
            let memories = storage.get_memories(&storage.linked_items(
                Target::Memories,
                &entity.id,
                limit,
            )?)?;
            let episodes = storage.get_episodes(&storage.linked_items(
                Target::Episodes,
                &entity.id,
                limit,
            )?)?;
            out.push(crate::model::EntityProfile {
                entity,
                memories,
                episodes,
            });
        }
        Ok(out)
    }
}
