//! Is this text already remembered? Insert dedup (seed 004 §2.1): exact
//! match, then nearest neighbours by cosine behind a Jaccard pre-filter, then
//! a Jaccard-only check. A substitution guard keeps near-but-distinct facts
//! apart ("likes red" / "likes blue"): when each text has a content word the
//! other lacks, they say different things and both are kept.

use crate::error::CoreResult;
use crate::model::{Memory, SearchFilter, Target};
use crate::ports::Storage;
use crate::text;
use crate::thresholds::*;

#[derive(Debug, Clone, PartialEq)]
pub struct Duplicate {
    pub memory: Memory,
    /// `exact`, `cosine` or `jaccard`.
    pub reason: &'static str,
    pub similarity: f32,
}

/// Each side has a content word the other lacks: a different statement.
pub fn is_substitution(new: &str, old: &str) -> bool {
    let a = text::content_words(new);
    let b = text::content_words(old);
    a.difference(&b).next().is_some() && b.difference(&a).next().is_some()
}

/// Finds an active memory in `namespace` that `content` duplicates.
pub fn find_duplicate(
    storage: &impl Storage,
    namespace: &str,
    content: &str,
    vector: Option<&[f32]>,
) -> CoreResult<Option<Duplicate>> {
    let namespaces = vec![namespace.to_string()];
    if let Some(memory) = storage.find_exact(&namespaces, content)? {
        return Ok(Some(Duplicate {
            memory,
            reason: "exact",
            similarity: 1.0,
        }));
    }
    let filter = SearchFilter {
        namespaces,
        ..Default::default()
    };
    let new_tokens = text::token_set(content);
    let terms = text::fts_terms(content);
    if vector.is_none() && terms.is_empty() {
        return Ok(None);
    }
    // Both searches at once: a host may run them side by side. The full
    // text's answer is read only when no near vector is a duplicate.
    let (near, best) = storage.near_search(
        Target::Memories,
        vector,
        &terms,
        &filter,
        DEDUP_CANDIDATES,
        0.0,
    )?;
    let close: Vec<_> = near
        .into_iter()
        .filter(|h| h.score > DEDUP_COSINE_SIM)
        .collect();
    if !close.is_empty() {
        let ids: Vec<String> = close.iter().map(|h| h.id.clone()).collect();
        let memories = storage.get_memories(&ids)?;
        for hit in &close {
            let Some(m) = memories.iter().find(|m| m.id == hit.id && m.is_active()) else {
                continue;
            };
            let j = text::jaccard(&new_tokens, &text::token_set(&m.content));
            if j > DEDUP_JACCARD_PREFILTER && !is_substitution(content, &m.content) {
                return Ok(Some(Duplicate {
                    memory: m.clone(),
                    reason: "cosine",
                    similarity: hit.score,
                }));
            }
        }
    }
    let ids: Vec<String> = best.into_iter().map(|h| h.id).collect();
    for m in storage.get_memories(&ids)? {
        if !m.is_active() {
            continue;
        }
        let j = text::jaccard(&new_tokens, &text::token_set(&m.content));
        if j >= DEDUP_JACCARD_ONLY && !is_substitution(content, &m.content) {
            return Ok(Some(Duplicate {
                memory: m,
                reason: "jaccard",
                similarity: j,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_are_distinct_statements() {
        assert!(is_substitution("Alice likes red", "Alice likes blue"));
        assert!(is_substitution(
            "My favourite colour for the kitchen walls is red",
            "My favourite colour for the kitchen walls is blue"
        ));
    }

    #[test]
    fn elaborations_and_restatements_are_not_substitutions() {
        assert!(!is_substitution("Alice likes red", "alice likes red!"));
        assert!(!is_substitution("Alice likes red roses", "Alice likes red"));
    }
}
