//! Recall: run the channels (FTS5 BM25, vector KNN, entity, fact graph),
//! fuse them by RRF, score the fused candidates (seed 004 §4), expand the
//! query through the LLM when asked or when the best hit is weak, filter,
//! order, page, optionally let the LLM rerank the page, and reinforce what
//! was clearly relevant. Every hit explains its score. The LLM's two steps
//! are in `assist.rs`.

use std::collections::{BTreeSet, HashMap};

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports::{Embedder, Ner, Ports, Storage};
use crate::read::dialogue;
use crate::read::fusion::{self, Fused, RankedList};
use crate::read::question::Question;
use crate::read::scoring::{self, Evidence};
use crate::text;
use crate::thresholds::*;
use crate::validate;
use crate::vector;

use super::scored::{Lexical, Scored};

const MS_PER_HOUR: f32 = 3_600_000.0;

/// What the channels returned for one query text.
pub(crate) struct ChannelRun {
    pub(crate) lists: Vec<RankedList>,
    /// The query's embedding, when the vector channel ran.
    query_vector: Option<Vec<f32>>,
    /// BM25 read deeper than the fused lists (`FTS_SCORE_DEPTH`).
    lexical: Lexical,
}

impl<P: Ports> Engine<P> {
    pub fn recall(&self, req: RecallRequest) -> CoreResult<RecallResponse> {
        let namespace = validate::namespace(&req.namespace)?;
        let query = req.query.trim();
        if query.is_empty() {
            return Err(CoreError::invalid("query is empty"));
        }
        if query.chars().count() > MAX_CONTENT_CHARS {
            return Err(CoreError::invalid(format!(
                "query is longer than {MAX_CONTENT_CHARS} characters"
            )));
        }
        validate::tags(&req.tags)?;
        let limit = if req.limit == 0 {
            DEFAULT_RECALL_LIMIT
        } else {
            req.limit
        };
        if limit > MAX_RECALL_LIMIT {
            return Err(CoreError::invalid(format!(
                "limit must be at most {MAX_RECALL_LIMIT}"
            )));
        }
        if let (Some(s), Some(u)) = (req.since, req.until)
            && s > u
        {
            return Err(CoreError::invalid("since is after until"));
        }
        let filter = SearchFilter {
            namespaces: self.readable_namespaces(&namespace)?,
            layers: req.layers.clone(),
            kinds: req.kinds.clone(),
            // Tags rank, they do not filter: see `TAG_BOOST`.
            tags: Vec::new(),
            since: req.since,
            until: req.until,
            source: validate::short_field("source", req.source.as_deref(), MAX_SOURCE_CHARS)?,
            session_id: None,
            exclude_session: req.exclude_session.clone(),
        };
        let targets: &[Target] = if req.episodes_only {
            &[Target::Episodes]
        } else if req.include_episodes {
            &[Target::Memories, Target::Episodes]
        } else {
            &[Target::Memories]
        };
        let fanout = CHANNEL_MIN.max((limit + req.offset).saturating_mul(CHANNEL_FANOUT));
        let mut out = RecallResponse::default();
        let ChannelRun {
            lists,
            query_vector,
            lexical,
        } = self.run_channels(query, targets, &filter, fanout, false, &mut out)?;
        let qv = query_vector.as_deref();
        let mut scored = self.fuse_and_score(query, qv, &req, &lists, &lexical, &mut out)?;
        self.maybe_expand(
            query,
            qv,
            &lexical,
            &req,
            targets,
            &filter,
            fanout,
            lists,
            &mut scored,
            &mut out,
        )?;
        if targets.contains(&Target::Episodes) {
            dialogue::dialogue_context(&mut scored);
        }
        order(&mut scored, req.sort);
        let mut seen = BTreeSet::new();
        out.channels_run.retain(|c| seen.insert(*c));

        let mut budget = req.token_budget.map(|b| b as usize);
        for s in scored
            .into_iter()
            .skip(req.offset as usize)
            .take(limit as usize)
        {
            if let Some(left) = budget.as_mut() {
                let cost = text::estimate_tokens(s.hit.item.content());
                if cost > *left {
                    break;
                }
                *left -= cost;
            }
            out.hits.push(s.hit);
        }
        if req.rerank {
            self.rerank(query, &mut out);
        }
        if !req.dry {
            self.touch_relevant(&namespace, &mut out.hits)?;
        }
        Ok(out)
    }

    pub(crate) fn fuse_and_score(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        req: &RecallRequest,
        lists: &[RankedList],
        lexical: &Lexical,
        out: &mut RecallResponse,
    ) -> CoreResult<Vec<Scored>> {
        let fused = fusion::rrf(lists);
        out.candidates = fused.len() as u32;
        let best_fts = best_scores(lists, Channel::Fts);
        self.score(query, query_vector, req, fused, &best_fts, lexical)
    }

    /// The channels for one query text. `text_only` (expansions) runs FTS
    /// and vectors, not the entity and fact channels.
    pub(crate) fn run_channels(
        &self,
        query: &str,
        targets: &[Target],
        filter: &SearchFilter,
        fanout: u32,
        text_only: bool,
        out: &mut RecallResponse,
    ) -> CoreResult<ChannelRun> {
        let storage = self.ports().storage();
        let mut lists = Vec::new();
        let mut query_vector = None;
        let mut lexical = Lexical::new();

        let terms = text::fts_terms(query);
        if terms.is_empty() {
            out.warnings
                .push("fts channel skipped: the query has no words".into());
        } else {
            for &target in targets {
                let depth = match target {
                    Target::Episodes => fanout.saturating_mul(FTS_SCORE_DEPTH),
                    Target::Memories => fanout,
                };
                let mut hits =
                    storage.fts_search(target, &terms, filter, depth, EPISODE_CONTEXT_WEIGHT)?;
                let below = hits.split_off(hits.len().min(fanout as usize));
                for (rank, h) in (fanout + 1..).zip(below) {
                    lexical.insert((target, h.id), (rank, h.score));
                }
                lists.push(RankedList {
                    channel: Channel::Fts,
                    target,
                    hits,
                });
            }
            out.channels_run.push(Channel::Fts);
        }

        if !storage.vectors_enabled()? {
            out.warnings.push(
                "vector channel skipped: vector search is disabled (embedding dimension mismatch); run `mnemo reindex --embeddings`".into(),
            );
        } else {
            match self.ports().embedder().embed(&[query.to_string()]) {
                Ok(mut v) => match v.pop() {
                    Some(qv) => {
                        for &target in targets {
                            let mut hits = storage.vector_search(target, &qv, filter, fanout)?;
                            hits.retain(|h| h.score >= DEFAULT_SIM_FLOOR);
                            lists.push(RankedList {
                                channel: Channel::Vector,
                                target,
                                hits,
                            });
                        }
                        out.channels_run.push(Channel::Vector);
                        query_vector = Some(qv);
                    }
                    None => out
                        .warnings
                        .push("vector channel skipped: the embedder returned nothing".into()),
                },
                Err(e) => out.warnings.push(format!("vector channel skipped: {e}")),
            }
        }

        if text_only {
            return Ok(ChannelRun {
                lists,
                query_vector,
                lexical,
            });
        }
        let mut names: BTreeSet<String> = text::name_candidates(query).into_iter().collect();
        match self.ports().ner().extract(query, NerStrategy::Fast) {
            Ok(found) => names.extend(
                found
                    .mentions
                    .into_iter()
                    .map(|m| m.text.trim().to_lowercase()),
            ),
            Err(e) => out
                .warnings
                .push(format!("query entity extraction failed: {e}")),
        }
        let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
        if !names.is_empty() && targets.contains(&Target::Memories) {
            let linked = self.fact_memories(&filter.namespaces, &names, fanout)?;
            if !linked.is_empty() {
                // Facts point at memories; keep those the filter admits.
                let ids: Vec<String> = linked.iter().map(|(id, _)| id.clone()).collect();
                let admitted: BTreeSet<String> = storage
                    .get_memories(&ids)?
                    .into_iter()
                    .filter(|m| admits(filter, m))
                    .map(|m| m.id)
                    .collect();
                let hits = linked
                    .into_iter()
                    .filter(|(id, _)| admitted.contains(id))
                    .map(|(id, hop)| ScoredId {
                        id,
                        score: 1.0 / (1.0 + hop as f32),
                    })
                    .collect();
                lists.push(RankedList {
                    channel: Channel::Fact,
                    target: Target::Memories,
                    hits,
                });
            }
            out.channels_run.push(Channel::Fact);
        }
        if !names.is_empty() {
            for &target in targets {
                let hits = storage.entity_search(target, &names, filter, fanout)?;
                lists.push(RankedList {
                    channel: Channel::Entity,
                    target,
                    hits,
                });
            }
            out.channels_run.push(Channel::Entity);
        }
        Ok(ChannelRun {
            lists,
            query_vector,
            lexical,
        })
    }

    fn score(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        req: &RecallRequest,
        fused: Vec<Fused>,
        best_fts: &HashMap<Target, Score>,
        lexical: &Lexical,
    ) -> CoreResult<Vec<Scored>> {
        let storage = self.ports().storage();
        let ids_of = |t: Target| -> Vec<String> {
            fused
                .iter()
                .filter(|f| f.target == t)
                .map(|f| f.id.clone())
                .collect()
        };
        let mut items: HashMap<(Target, String), Item> = HashMap::new();
        let mut memories = storage.get_memories(&ids_of(Target::Memories))?;
        self.settle_all(&mut memories)?;
        for m in memories {
            items.insert((Target::Memories, m.id.clone()), Item::Memory(m));
        }
        for e in storage.get_episodes(&ids_of(Target::Episodes))? {
            items.insert((Target::Episodes, e.id.clone()), Item::Episode(e));
        }

        // The cosine of every candidate with a vector, not only of those the
        // vector channel ranked: lexical finds often sit under its cut-off.
        let mut cosines: HashMap<(Target, String), Score> = HashMap::new();
        if let Some(qv) = query_vector {
            for target in [Target::Memories, Target::Episodes] {
                let missing: Vec<String> = fused
                    .iter()
                    .filter(|f| f.target == target && f.channel(Channel::Vector).is_none())
                    .map(|f| f.id.clone())
                    .collect();
                if missing.is_empty() {
                    continue;
                }
                for (id, v) in storage.get_vectors(target, &missing)? {
                    cosines.insert((target, id), vector::cosine(qv, &v));
                }
            }
        }

        let now = self.now();
        let terms: BTreeSet<String> = text::fts_terms(query).into_iter().collect();
        let query_tokens = text::token_set(query);
        let short_cjk = text::contains_cjk(query) && query.chars().count() < CJK_SHORT_QUERY_CHARS;
        let lexical_weight = Some(scoring::lexical_weight_for(
            &self.ports().embedder().info().model,
        ));
        let question = Question::read(query, now);
        let mut scored = Vec::with_capacity(fused.len());
        for f in fused {
            let Some(item) = items.remove(&(f.target, f.id.clone())) else {
                continue;
            };
            let (importance, decay_rate, layer, reference, time, accessed) = match &item {
                Item::Memory(m) if m.is_active() => (
                    m.importance,
                    m.decay_rate,
                    m.layer,
                    m.modified_at.max(m.last_accessed.unwrap_or(0)),
                    m.event_time,
                    m.last_accessed.unwrap_or(0),
                ),
                // Recency is freshness in the store (seed 004: since stored or
                // touched), not the age of the event a turn talks about.
                Item::Episode(e) if e.valid_until.is_none() => (
                    DEFAULT_IMPORTANCE,
                    DEFAULT_DECAY_RATE,
                    Layer::Working,
                    e.created_at,
                    e.event_time,
                    0,
                ),
                _ => continue,
            };
            let content_tokens = text::token_set(item.content());
            let tag_share = match &item {
                Item::Memory(m) if !req.tags.is_empty() => {
                    req.tags.iter().filter(|t| m.tags.contains(*t)).count() as Score
                        / req.tags.len() as Score
                }
                _ => 0.0,
            };
            let speaker_named = match &item {
                Item::Episode(e) => {
                    let who = text::content_words(&e.source_role);
                    !who.is_empty() && who.is_subset(&query_tokens)
                }
                Item::Memory(_) => false,
            };
            let mut notes = Vec::new();
            // BM25 from the fused list, else from the deeper read (noted).
            let raw_fts = match f.channel(Channel::Fts) {
                Some(h) => Some(h.raw_score),
                None => lexical.get(&(f.target, f.id.clone())).map(|&(rank, s)| {
                    notes.push(format!(
                        "bm25 read below the fused list's cut (rank {rank})"
                    ));
                    s
                }),
            };
            let evidence = Evidence {
                semantic: f
                    .channel(Channel::Vector)
                    .map(|h| h.raw_score)
                    .or_else(|| cosines.get(&(f.target, f.id.clone())).copied()),
                fts: raw_fts.map(|raw| {
                    let best = best_fts.get(&f.target).copied().unwrap_or(raw);
                    if best > 0.0 {
                        (raw / best).clamp(0.0, 1.0)
                    } else {
                        0.0
                    }
                }),
                entity: f.channel(Channel::Entity).is_some(),
                fact: f.channel(Channel::Fact).is_some(),
                has_query_term: terms.iter().any(|t| content_tokens.contains(t)),
                short_cjk,
                lexical_weight,
                speaker_named,
                tag_share,
                superseded: matches!(&item, Item::Memory(m) if m.superseded_by.is_some()),
                date_match: question.matches_time(time),
                answer: question.answered_by(&content_tokens),
            };
            let relevance = scoring::relevance(&evidence, req.relevance, &mut notes);
            let age_hours = (now - reference).max(0) as f32 / MS_PER_HOUR;
            let recency = scoring::recency(decay_rate, age_hours);
            let layer_bonus = scoring::layer_bonus(layer);
            let score = scoring::combine(importance, recency, relevance, layer_bonus);
            if req.min_score.is_some_and(|min| score < min) {
                continue;
            }
            scored.push(Scored {
                rrf: f.rrf,
                time,
                accessed,
                hit: Hit {
                    item,
                    score,
                    explanation: Explanation {
                        channels: f.channels,
                        rrf: f.rrf,
                        relevance,
                        importance,
                        recency,
                        layer_bonus,
                        notes,
                    },
                },
            });
        }
        Ok(scored)
    }

    /// Access reinforcement: only hits that were clearly relevant (seed 004
    /// §4.5), and only of the namespace asked: a touch is a write, and a
    /// reader of a shared namespace (`sharing.rs`) does not change it.
    fn touch_relevant(&self, namespace: &str, hits: &mut [Hit]) -> CoreResult<()> {
        let now = self.now();
        let mut ids = Vec::new();
        for hit in hits.iter_mut() {
            if hit.explanation.relevance <= TOUCH_MIN_RELEVANCE {
                continue;
            }
            if let Item::Memory(m) = &mut hit.item
                && m.namespace == namespace
            {
                m.access_count = m.access_count.saturating_add(1);
                m.last_accessed = Some(now);
                ids.push(m.id.clone());
            }
        }
        if !ids.is_empty() {
            self.ports().storage().touch_memories(&ids, now)?;
        }
        Ok(())
    }
}

/// Whether an (active) memory passes the search filter — for channels whose
/// candidates do not come from a filtered query.
pub fn admits(f: &SearchFilter, m: &Memory) -> bool {
    m.is_active()
        && (f.namespaces.is_empty() || f.namespaces.contains(&m.namespace))
        && (f.layers.is_empty() || f.layers.contains(&m.layer))
        && (f.kinds.is_empty() || f.kinds.contains(&m.kind))
        && f.tags.iter().all(|t| m.tags.contains(t))
        && f.since.is_none_or(|s| m.event_time >= s)
        && f.until.is_none_or(|u| m.event_time <= u)
        && f.source
            .as_ref()
            .is_none_or(|s| m.source.as_ref() == Some(s))
        && f.session_id
            .as_ref()
            .is_none_or(|s| m.session_id.as_ref() == Some(s))
        && f.exclude_session
            .as_ref()
            .is_none_or(|s| m.session_id.as_ref() != Some(s))
}

/// The best raw score of a channel, per target (for normalising BM25).
fn best_scores(lists: &[RankedList], channel: Channel) -> HashMap<Target, Score> {
    let mut best = HashMap::new();
    for l in lists.iter().filter(|l| l.channel == channel) {
        let top = l.hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
        let e = best.entry(l.target).or_insert(0.0f32);
        *e = e.max(top);
    }
    best
}

/// Order by the requested key; ties fall back to fused rank, then id.
fn order(scored: &mut [Scored], sort: SortOrder) {
    scored.sort_by(|a, b| {
        let primary = match sort {
            SortOrder::Score => b.hit.score.total_cmp(&a.hit.score),
            SortOrder::Recent => b.time.cmp(&a.time),
            SortOrder::Accessed => b.accessed.cmp(&a.accessed),
        };
        primary
            .then_with(|| b.rrf.total_cmp(&a.rrf))
            .then_with(|| a.hit.item.id().cmp(b.hit.item.id()))
    });
}
