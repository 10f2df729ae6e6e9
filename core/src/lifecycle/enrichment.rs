//! Seed 003's nightly enrichment: the `accurate` NER strategy re-reads
//! items that have few entities and were never enriched.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::Ports;
use crate::write::entities::{link_mentions, merge_mentions};

/// Seed 003's enrichment: items linked to at most this many entities are re-read.
pub const ENRICH_MAX_ENTITIES: u32 = 2;
/// Items per target per enrichment run (seed 003: limit 50).
pub const ENRICH_LIMIT: u32 = 50;

impl<P: Ports> Engine<P> {
    /// Re-extracts entities with the `accurate` strategy for items that have
    /// few and were never enriched; skipped when only `fast` providers exist.
    pub fn enrich(&self, limit: u32) -> CoreResult<crate::model::EnrichReport> {
        use crate::ports::{Clock, Llm, Ner, Storage};
        let ports = self.ports();
        let mut report = crate::model::EnrichReport::default();
        let use_llm = ports.llm().level() != crate::model::LlmLevel::Off;
        if !ports.ner().accurate_available() && !use_llm {
            return Ok(report);
        }
        report.ran = true;
        self.begin_llm_work();
        let limit = if limit == 0 { ENRICH_LIMIT } else { limit };
        for target in [Target::Memories, Target::Episodes] {
            for EnrichmentCandidate {
                id,
                namespace,
                content,
            } in ports
                .storage()
                .enrichment_candidates(target, ENRICH_MAX_ENTITIES, limit)?
            {
                report.examined += 1;
                // An item whose LLM reading failed waits out its backoff.
                if use_llm && self.waits(&namespace, LlmComponent::Ner, &id)?.is_some() {
                    continue;
                }
                // A failing provider — any of the strategy's — skips the item
                // this run: it is not stamped, so the next run retries it.
                let Ok(NerResult {
                    mut mentions,
                    failures,
                }) = ports.ner().extract(&content, NerStrategy::Accurate)
                else {
                    continue;
                };
                if !failures.is_empty() {
                    continue;
                }
                if use_llm {
                    let request = crate::prompts::ner::request(&content);
                    let answer = self.ask_llm(&namespace, &request, |c| {
                        crate::prompts::ner::parse(&content, c)
                    });
                    match answer {
                        Ok(found) => {
                            self.item_done(&namespace, LlmComponent::Ner, &id)?;
                            mentions = merge_mentions(mentions.into_iter().chain(found).collect())
                        }
                        // Malformed or failed: retried on a later run, after
                        // its backoff (a budget's or a circuit's refusal: on
                        // the next run).
                        Err(e) => {
                            self.item_failed(&namespace, LlmComponent::Ner, &id, &e)?;
                            continue;
                        }
                    }
                }
                report.linked += link_mentions(
                    ports.storage(),
                    ports.clock(),
                    &namespace,
                    target,
                    &id,
                    &mentions,
                )?;
                ports
                    .storage()
                    .mark_enriched(target, &id, ports.clock().now())?;
            }
        }
        Ok(report)
    }
}
