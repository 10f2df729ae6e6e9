//! Which known entities does a text mention? The entity linker of seed 003:
//! create-or-get by canonical name + type, then by alias; count mentions,
//! merge aliases, and link the item through the junction table.

use std::collections::BTreeSet;

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::ids::new_id;
use crate::model::{Entity, EntityType, Mention, NerResult, NerStrategy, Target};
use crate::ports::{Clock, Ner, Ports, Storage};

/// Most aliases kept per entity.
pub const MAX_ALIASES: usize = 32;

/// Links each distinct mention to its entity (created when new); returns the
/// number of entities linked.
pub fn link_mentions(
    storage: &impl Storage,
    clock: &impl Clock,
    namespace: &str,
    target: Target,
    item_id: &str,
    mentions: &[Mention],
) -> CoreResult<u32> {
    let mut seen = BTreeSet::new();
    let mut linked = 0;
    for m in mentions {
        // `@alice` and `#launch` are known as `alice` and `launch`; the raw form stays an alias.
        let raw = m.text.trim();
        let name = match m.entity_type {
            EntityType::Mention | EntityType::Hashtag => raw.trim_start_matches(['@', '#']),
            _ => raw,
        };
        if name.is_empty() || !seen.insert((name.to_lowercase(), m.entity_type)) {
            continue;
        }
        let entity = match storage.find_entity(namespace, name, m.entity_type)? {
            Some(mut e) => {
                e.mention_count = e.mention_count.saturating_add(1);
                let known = e.canonical_name.eq_ignore_ascii_case(name)
                    || e.aliases.iter().any(|a| a.eq_ignore_ascii_case(name));
                if !known && e.aliases.len() < MAX_ALIASES {
                    e.aliases.push(name.to_string());
                }
                e
            }
            None => Entity {
                id: new_id("ent", clock),
                namespace: namespace.to_string(),
                canonical_name: name.to_string(),
                entity_type: m.entity_type,
                aliases: if raw != name {
                    vec![raw.to_string()]
                } else {
                    Vec::new()
                },
                mention_count: 1,
                summary: None,
            },
        };
        storage.put_entity(&entity)?;
        storage.link_entity(target, item_id, &entity.id)?;
        linked += 1;
    }
    Ok(linked)
}

/// Span-overlap merge of several providers' mentions (seed 003): among
/// overlapping mentions the most confident wins, then the longest; output in
/// text order.
pub fn merge_mentions(mut all: Vec<Mention>) -> Vec<Mention> {
    all.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| (b.end - b.start).cmp(&(a.end - a.start)))
            .then_with(|| a.start.cmp(&b.start))
    });
    let mut kept: Vec<Mention> = Vec::new();
    for m in all {
        if !kept.iter().any(|k| m.start < k.end && k.start < m.end) {
            kept.push(m);
        }
    }
    kept.sort_by_key(|m| m.start);
    kept
}

impl<P: Ports> Engine<P> {
    /// Links the entities the `fast` NER strategy finds in `text` to item `id`.
    pub(crate) fn link_entities(
        &self,
        namespace: &str,
        target: Target,
        id: &str,
        text: &str,
    ) -> CoreResult<u32> {
        // NER failure costs the links, never the write.
        let Ok(NerResult { mentions, .. }) = self.ports().ner().extract(text, NerStrategy::Fast)
        else {
            return Ok(0);
        };
        link_mentions(
            self.ports().storage(),
            self.ports().clock(),
            namespace,
            target,
            id,
            &mentions,
        )
    }
}
