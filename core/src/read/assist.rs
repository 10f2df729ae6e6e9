//! The LLM's two steps in recall (seed 004 §4.4–4.5): query expansion,
//! when asked or when the best hit is weak, whose phrasings run through the
//! text channels and are fused with the original lists; and the rerank of
//! the page. Both degrade to plain recall: an LLM that is off, fails or
//! answers badly leaves a warning, never an error.

use super::scored::{Lexical, Scored};
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::*;
use crate::ports::{Llm, Ports};
use crate::prompts;
use crate::read::fusion::RankedList;
use crate::thresholds::*;

impl<P: Ports> Engine<P> {
    /// Seed 004 §4.4: with `expand`, or unset and the best relevance under
    /// `AUTO_EXPAND_THRESHOLD`, the LLM's alternative phrasings run through
    /// the text channels and are fused with the original lists. An automatic
    /// expansion is kept only if it beats the original.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn maybe_expand(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        lexical: &Lexical,
        req: &RecallRequest,
        targets: &[Target],
        filter: &SearchFilter,
        fanout: u32,
        lists: Vec<RankedList>,
        scored: &mut Vec<Scored>,
        out: &mut RecallResponse,
    ) -> CoreResult<()> {
        let top = |s: &[Scored]| {
            s.iter()
                .map(|x| x.hit.explanation.relevance)
                .fold(0.0f32, f32::max)
        };
        let wanted = match req.expand {
            Some(e) => e,
            None => top(scored) < AUTO_EXPAND_THRESHOLD,
        };
        if !wanted {
            return Ok(());
        }
        if self.ports().llm().level() == LlmLevel::Off {
            if req.expand == Some(true) {
                out.warnings
                    .push("query expansion skipped: the LLM level is off".into());
            }
            return Ok(());
        }
        let phrases = match self
            .ports()
            .llm()
            .complete(&prompts::expand::request(query))
            .and_then(|a| prompts::expand::parse(&a.content, query, MAX_EXPANSIONS))
        {
            Ok(p) if !p.is_empty() => p,
            Ok(_) => return Ok(()),
            Err(e) => {
                out.warnings.push(format!("query expansion skipped: {e}"));
                return Ok(());
            }
        };
        let mut all = lists;
        for p in &phrases {
            all.extend(
                self.run_channels(p, targets, filter, fanout, true, out)?
                    .lists,
            );
        }
        let mut probe = RecallResponse::default();
        let expanded = self.fuse_and_score(query, query_vector, req, &all, lexical, &mut probe)?;
        if req.expand == Some(true) || top(&expanded) > top(scored) {
            *scored = expanded;
            out.candidates = probe.candidates;
            out.expansions = phrases;
        }
        Ok(())
    }

    /// Seed 004 §4.5: the LLM orders the page; scores are interpolated with
    /// the new positions. Any failure keeps the original order.
    pub(crate) fn rerank(&self, query: &str, out: &mut RecallResponse) {
        if out.hits.len() < 2 {
            return;
        }
        if self.ports().llm().level() == LlmLevel::Off {
            out.warnings
                .push("rerank skipped: the LLM level is off".into());
            return;
        }
        let texts: Vec<&str> = out.hits.iter().map(|h| h.item.content()).collect();
        let order = match self
            .ports()
            .llm()
            .complete(&prompts::rerank::request(query, &texts))
            .and_then(|a| prompts::rerank::parse(&a.content, texts.len()))
        {
            Ok(o) => o,
            Err(e) => {
                out.warnings.push(format!("rerank skipped: {e}"));
                return;
            }
        };
        let n = order.len() as f32;
        let mut hits: Vec<Hit> = Vec::with_capacity(out.hits.len());
        for (pos, i) in order.into_iter().enumerate() {
            let mut h = out.hits[i].clone();
            let llm = 1.0 - pos as f32 / n;
            let score = h.score * (1.0 - RERANK_WEIGHT) + RERANK_WEIGHT * llm;
            h.explanation
                .notes
                .push(format!("rerank: position {} → score {score:.3}", pos + 1));
            h.score = score;
            hits.push(h);
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        out.hits = hits;
        out.reranked = true;
    }
}
