//! The WASM edge of the core: binds the ports to the WIT imports and exports
//! the engine. The only file that sees generated bindings; everything here is
//! conversion between WIT records and `model` types.

wit_bindgen::generate!({
    path: "../wit/core",
    world: "mnemo",
});

use exports::mnemo::core::engine as api;
use mnemo::core::{clock, embedding, llm, ner, storage, types as wit};

use crate::Engine;
use crate::error::{CoreError, CoreResult};
use crate::model::*;
use crate::ports;

// ---- enums ------------------------------------------------------------------

macro_rules! enum_conv {
    ($wit:ty, $model:ty, [$($v:ident),+]) => {
        impl From<$wit> for $model {
            fn from(v: $wit) -> Self { match v { $(<$wit>::$v => <$model>::$v),+ } }
        }
        impl From<$model> for $wit {
            fn from(v: $model) -> Self { match v { $(<$model>::$v => <$wit>::$v),+ } }
        }
    };
}

enum_conv!(wit::Layer, Layer, [Buffer, Working, Core]);
enum_conv!(wit::Kind, Kind, [Episodic, Semantic, Procedural]);
enum_conv!(wit::Target, Target, [Memories, Episodes]);
enum_conv!(
    wit::EntityType,
    EntityType,
    [
        Person,
        Project,
        Organization,
        Location,
        Email,
        Url,
        Date,
        Mention,
        Hashtag,
        Other
    ]
);
enum_conv!(api::Channel, Channel, [Fts, Vector, Entity, Fact]);
enum_conv!(api::SortOrder, SortOrder, [Score, Recent, Accessed]);
enum_conv!(api::Relevance, Relevance, [Blend, Semantic]);
enum_conv!(llm::LlmLevel, LlmLevel, [Off, Auto, Full]);
enum_conv!(storage::ListState, ListState, [Active, Deleted, All]);

fn vec_into<A: Clone + Into<B>, B>(v: &[A]) -> Vec<B> {
    v.iter().cloned().map(Into::into).collect()
}

impl From<wit::Error> for CoreError {
    fn from(e: wit::Error) -> Self {
        match e {
            wit::Error::InvalidInput(m) => Self::InvalidInput(m),
            wit::Error::NotFound(m) => Self::NotFound(m),
            wit::Error::Conflict(m) => Self::Conflict(m),
            wit::Error::Storage(m) => Self::Storage(m),
            wit::Error::Embedding(m) => Self::Embedding(m),
            wit::Error::Llm(m) => Self::Llm(m),
            wit::Error::Ner(m) => Self::Ner(m),
            wit::Error::Unavailable(m) => Self::Unavailable(m),
        }
    }
}

impl From<CoreError> for wit::Error {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::InvalidInput(m) => Self::InvalidInput(m),
            CoreError::NotFound(m) => Self::NotFound(m),
            CoreError::Conflict(m) => Self::Conflict(m),
            CoreError::Storage(m) => Self::Storage(m),
            CoreError::Embedding(m) => Self::Embedding(m),
            CoreError::Llm(m) => Self::Llm(m),
            CoreError::Ner(m) => Self::Ner(m),
            CoreError::Unavailable(m) => Self::Unavailable(m),
        }
    }
}

// ---- records ----------------------------------------------------------------

/// Field-for-field record conversion, both ways: plain fields, then fields
/// whose (enum) types convert with `Into`.
macro_rules! same_fields {
    ($a:ty, $b:ty, [$($f:ident),* $(,)?]) => {
        same_fields!($a, $b, [$($f),*], []);
    };
    ($a:ty, $b:ty, [$($f:ident),* $(,)?], [$($e:ident),* $(,)?]) => {
        impl From<$a> for $b {
            fn from(x: $a) -> Self { Self { $($f: x.$f,)* $($e: x.$e.into(),)* } }
        }
        impl From<$b> for $a {
            fn from(x: $b) -> Self { Self { $($f: x.$f,)* $($e: x.$e.into(),)* } }
        }
    };
}

same_fields!(
    wit::Episode,
    Episode,
    [
        id,
        namespace,
        session_id,
        source_role,
        content,
        event_time,
        created_at,
        valid_until,
        invalid_reason,
        attributes
    ]
);
same_fields!(
    wit::Session,
    Session,
    [
        id,
        namespace,
        first_seen_at,
        last_seen_at,
        turn_count,
        consolidated_at
    ]
);
same_fields!(
    wit::FactQuery,
    FactQuery,
    [
        namespaces,
        id,
        subject,
        predicate,
        object,
        entity,
        include_invalid,
        limit
    ]
);
same_fields!(
    wit::Fact,
    Fact,
    [
        id,
        namespace,
        subject,
        predicate,
        object,
        confidence,
        valid_from,
        valid_until,
        superseded_by,
        memory_id
    ]
);
same_fields!(wit::ScoredId, ScoredId, [id, score]);
same_fields!(
    wit::Decision,
    Decision,
    [at, namespace, action, target_id, detail]
);
same_fields!(
    wit::StoreStats,
    StoreStats,
    [
        active,
        buffer,
        working,
        core,
        episodic,
        semantic,
        procedural,
        deleted,
        episodes,
        sessions,
        entities,
        facts,
        memory_vectors,
        episode_vectors,
        newest
    ]
);
same_fields!(embedding::EmbedderInfo, EmbedderInfo, [model, dimension]);
same_fields!(llm::Message, ChatMessage, [role, content]);
same_fields!(
    llm::ChatResponse,
    ChatResponse,
    [content, model, input_tokens, output_tokens]
);

same_fields!(
    wit::Memory,
    Memory,
    [
        id,
        namespace,
        content,
        importance,
        confidence,
        decay_rate,
        access_count,
        repetition_count,
        created_at,
        modified_at,
        last_accessed,
        event_time,
        created_epoch,
        valid_until,
        invalid_reason,
        session_id,
        source,
        source_role,
        tags,
        attributes,
        source_ids,
        supersedes,
        superseded_by
    ],
    [kind, layer]
);
same_fields!(
    wit::Entity,
    Entity,
    [
        id,
        namespace,
        canonical_name,
        aliases,
        mention_count,
        summary
    ],
    [entity_type]
);
same_fields!(
    wit::Mention,
    Mention,
    [text, start, end, confidence, provider],
    [entity_type]
);

impl From<&SearchFilter> for wit::SearchFilter {
    fn from(f: &SearchFilter) -> Self {
        Self {
            namespaces: f.namespaces.clone(),
            layers: vec_into(&f.layers),
            kinds: vec_into(&f.kinds),
            tags: f.tags.clone(),
            since: f.since,
            until: f.until,
            source: f.source.clone(),
            session_id: f.session_id.clone(),
            exclude_session: f.exclude_session.clone(),
        }
    }
}

// ---- ports over the imports -------------------------------------------------

/// The ports, bound to the host's imports.
pub struct WitPorts;

fn ok<T, U: From<T>>(r: Result<T, wit::Error>) -> CoreResult<U> {
    r.map(Into::into).map_err(Into::into)
}

fn ok_vec<T, U: From<T>>(r: Result<Vec<T>, wit::Error>) -> CoreResult<Vec<U>> {
    r.map(|v| v.into_iter().map(Into::into).collect())
        .map_err(Into::into)
}

impl ports::Storage for WitPorts {
    fn insert_memory(&self, m: &Memory) -> CoreResult<()> {
        ok(storage::insert_memory(&m.clone().into()))
    }
    fn update_memory(&self, m: &Memory) -> CoreResult<()> {
        ok(storage::update_memory(&m.clone().into()))
    }
    fn get_memories(&self, ids: &[String]) -> CoreResult<Vec<Memory>> {
        ok_vec(storage::get_memories(ids))
    }
    fn find_exact(&self, namespaces: &[String], content: &str) -> CoreResult<Option<Memory>> {
        storage::find_exact(namespaces, content)
            .map(|m| m.map(Into::into))
            .map_err(Into::into)
    }
    fn list_memories(&self, q: &ListQuery) -> CoreResult<Vec<Memory>> {
        let q = storage::ListQuery {
            namespaces: q.namespaces.clone(),
            layers: vec_into(&q.layers),
            kinds: vec_into(&q.kinds),
            tags: q.tags.clone(),
            state: q.state.unwrap_or(ListState::Active).into(),
            modified_since: q.modified_since,
            by_modified: q.by_modified,
            limit: q.limit,
            offset: q.offset,
        };
        ok_vec(storage::list_memories(&q))
    }
    fn touch_memories(&self, ids: &[String], at: Millis) -> CoreResult<()> {
        ok(storage::touch_memories(ids, at))
    }
    fn insert_episode(&self, e: &Episode) -> CoreResult<()> {
        ok(storage::insert_episode(&e.clone().into()))
    }
    fn get_episodes(&self, ids: &[String]) -> CoreResult<Vec<Episode>> {
        ok_vec(storage::get_episodes(ids))
    }
    fn get_session(&self, namespace: &str, id: &str) -> CoreResult<Option<Session>> {
        storage::get_session(namespace, id)
            .map(|s| s.map(Into::into))
            .map_err(Into::into)
    }
    fn put_session(&self, s: &Session) -> CoreResult<()> {
        ok(storage::put_session(&s.clone().into()))
    }
    fn pending_sessions(&self, namespace: &str, exclude: Option<&str>) -> CoreResult<Vec<Session>> {
        ok_vec(storage::pending_sessions(namespace, exclude))
    }
    fn session_episodes(
        &self,
        namespace: &str,
        session_id: &str,
        offset: u32,
        limit: u32,
    ) -> CoreResult<Vec<Episode>> {
        ok_vec(storage::session_episodes(
            namespace, session_id, offset, limit,
        ))
    }
    fn fts_search(
        &self,
        target: Target,
        terms: &[String],
        f: &SearchFilter,
        limit: u32,
        context_weight: f32,
    ) -> CoreResult<Vec<ScoredId>> {
        ok_vec(storage::fts_search(
            target.into(),
            terms,
            &f.into(),
            limit,
            context_weight,
        ))
    }
    fn vector_search(
        &self,
        target: Target,
        v: &[f32],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        ok_vec(storage::vector_search(target.into(), v, &f.into(), limit))
    }
    fn entity_search(
        &self,
        target: Target,
        names: &[String],
        f: &SearchFilter,
        limit: u32,
    ) -> CoreResult<Vec<ScoredId>> {
        ok_vec(storage::entity_search(
            target.into(),
            names,
            &f.into(),
            limit,
        ))
    }
    fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> CoreResult<()> {
        ok(storage::put_vector(target.into(), id, v))
    }
    fn get_vectors(&self, target: Target, ids: &[String]) -> CoreResult<Vec<(String, Vec<f32>)>> {
        storage::get_vectors(target.into(), ids).map_err(Into::into)
    }
    fn vectors_enabled(&self) -> CoreResult<bool> {
        storage::vectors_enabled().map_err(Into::into)
    }
    fn find_entity(
        &self,
        namespace: &str,
        name: &str,
        t: EntityType,
    ) -> CoreResult<Option<Entity>> {
        storage::find_entity(namespace, name, t.into())
            .map(|e| e.map(Into::into))
            .map_err(Into::into)
    }
    fn put_entity(&self, e: &Entity) -> CoreResult<()> {
        ok(storage::put_entity(&e.clone().into()))
    }
    fn link_entity(&self, target: Target, item_id: &str, entity_id: &str) -> CoreResult<()> {
        ok(storage::link_entity(target.into(), item_id, entity_id))
    }
    fn find_entities(&self, namespaces: &[String], name: &str) -> CoreResult<Vec<Entity>> {
        ok_vec(storage::find_entities(namespaces, name))
    }
    fn linked_items(&self, target: Target, entity_id: &str, limit: u32) -> CoreResult<Vec<String>> {
        storage::linked_items(target.into(), entity_id, limit).map_err(Into::into)
    }
    fn enrichment_candidates(
        &self,
        target: Target,
        max_entities: u32,
        limit: u32,
    ) -> CoreResult<Vec<(String, String, String)>> {
        storage::enrichment_candidates(target.into(), max_entities, limit).map_err(Into::into)
    }
    fn mark_enriched(&self, target: Target, id: &str, at: Millis) -> CoreResult<()> {
        ok(storage::mark_enriched(target.into(), id, at))
    }
    fn put_fact(&self, f: &Fact) -> CoreResult<()> {
        ok(storage::put_fact(&f.clone().into()))
    }
    fn query_facts(&self, q: &FactQuery) -> CoreResult<Vec<Fact>> {
        ok_vec(storage::query_facts(&q.clone().into()))
    }
    fn tag_counts(&self, namespaces: &[String], prefix: &str) -> CoreResult<Vec<(String, u64)>> {
        ok(storage::tag_counts(namespaces, prefix))
    }
    fn stats(&self, namespaces: &[String]) -> CoreResult<StoreStats> {
        ok(storage::stats(namespaces))
    }
    fn log_decision(&self, entry: &Decision) -> CoreResult<()> {
        ok(storage::log_decision(&entry.clone().into()))
    }
    fn get_meta(&self, key: &str) -> CoreResult<Option<String>> {
        storage::get_meta(key).map_err(Into::into)
    }
    fn set_meta(&self, key: &str, value: &str) -> CoreResult<()> {
        ok(storage::set_meta(key, value))
    }
}

impl ports::Embedder for WitPorts {
    fn info(&self) -> EmbedderInfo {
        embedding::info().into()
    }
    fn embed(&self, texts: &[String]) -> CoreResult<Vec<Vec<f32>>> {
        embedding::embed(texts).map_err(Into::into)
    }
}

impl ports::Llm for WitPorts {
    fn level(&self) -> LlmLevel {
        llm::level().into()
    }
    fn complete(&self, req: &ChatRequest) -> CoreResult<ChatResponse> {
        let req = llm::ChatRequest {
            component: req.component.clone(),
            messages: vec_into(&req.messages),
            json: req.json,
            max_tokens: req.max_tokens,
            tool: req.tool.as_ref().map(|t| llm::Tool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
            }),
        };
        ok(llm::complete(&req))
    }
}

impl ports::Ner for WitPorts {
    fn extract(&self, text: &str, strategy: &str) -> CoreResult<Vec<Mention>> {
        ok_vec(ner::extract(text, strategy))
    }
    fn accurate_available(&self) -> bool {
        ner::accurate_available()
    }
}

impl ports::Clock for WitPorts {
    fn now(&self) -> Millis {
        clock::now()
    }
    fn random(&self) -> u64 {
        clock::random()
    }
}

impl ports::Ports for WitPorts {
    type Storage = Self;
    type Embedder = Self;
    type Llm = Self;
    type Ner = Self;
    type Clock = Self;
    fn storage(&self) -> &Self {
        self
    }
    fn embedder(&self) -> &Self {
        self
    }
    fn llm(&self) -> &Self {
        self
    }
    fn ner(&self) -> &Self {
        self
    }
    fn clock(&self) -> &Self {
        self
    }
}

// ---- the exported engine ----------------------------------------------------

fn engine() -> Engine<WitPorts> {
    Engine::new(WitPorts)
}

fn hit_out(h: Hit) -> api::Hit {
    let ex = h.explanation;
    api::Hit {
        item: match h.item {
            Item::Memory(m) => api::Item::Memory(m.into()),
            Item::Episode(e) => api::Item::Episode(e.into()),
        },
        score: h.score,
        explanation: api::Explanation {
            channels: ex
                .channels
                .into_iter()
                .map(|c| api::ChannelHit {
                    channel: c.channel.into(),
                    rank: c.rank,
                    raw_score: c.raw_score,
                })
                .collect(),
            rrf: ex.rrf,
            relevance: ex.relevance,
            importance: ex.importance,
            recency: ex.recency,
            layer_bonus: ex.layer_bonus,
            notes: ex.notes,
        },
    }
}

struct Component;

impl api::Guest for Component {
    fn remember(req: api::RememberRequest) -> Result<api::RememberOutcome, wit::Error> {
        let out = engine().remember(RememberRequest {
            namespace: req.namespace,
            content: req.content,
            kind: req.kind.map(Into::into),
            tags: req.tags,
            source: req.source,
            session_id: req.session_id,
            importance: req.importance,
            attributes: req.attributes,
            event_time: req.event_time,
            skip_dedup: req.skip_dedup,
        })?;
        Ok(api::RememberOutcome {
            memory: out.memory.into(),
            created: out.created,
            dedup_reason: out.dedup_reason,
            similarity: out.similarity,
        })
    }

    fn ingest(t: api::Turn) -> Result<api::IngestOutcome, wit::Error> {
        let out = engine().ingest(Turn {
            namespace: t.namespace,
            session_id: t.session_id,
            role: t.role,
            content: t.content,
            event_time: t.event_time,
            attributes: t.attributes,
        })?;
        Ok(api::IngestOutcome {
            episode: out.episode.into(),
            new_session: out.new_session,
            pending_sessions: out.pending_sessions,
            entities: out.entities,
        })
    }

    fn recall(req: api::RecallRequest) -> Result<api::RecallResponse, wit::Error> {
        let out = engine().recall(RecallRequest {
            query: req.query,
            namespace: req.namespace,
            layers: vec_into(&req.layers),
            kinds: vec_into(&req.kinds),
            tags: req.tags,
            since: req.since,
            until: req.until,
            source: req.source,
            min_score: req.min_score,
            limit: req.limit,
            offset: req.offset,
            token_budget: req.token_budget,
            sort: req.sort.into(),
            dry: req.dry,
            include_episodes: req.include_episodes,
            episodes_only: req.episodes_only,
            exclude_session: req.exclude_session,
            expand: req.expand,
            rerank: req.rerank,
            relevance: req.relevance.into(),
        })?;
        Ok(api::RecallResponse {
            hits: out.hits.into_iter().map(hit_out).collect(),
            channels_run: vec_into(&out.channels_run),
            warnings: out.warnings,
            candidates: out.candidates,
            expansions: out.expansions,
            reranked: out.reranked,
        })
    }

    fn get(namespace: String, id: String) -> Result<wit::Memory, wit::Error> {
        Ok(engine().get(&namespace, &id)?.into())
    }

    fn list(req: api::ListRequest) -> Result<Vec<wit::Memory>, wit::Error> {
        let out = engine().list(ListRequest {
            namespace: req.namespace,
            layers: vec_into(&req.layers),
            kinds: vec_into(&req.kinds),
            tags: req.tags,
            deleted: req.deleted,
            limit: req.limit,
            offset: req.offset,
        })?;
        Ok(out.into_iter().map(Into::into).collect())
    }

    fn update(
        namespace: String,
        id: String,
        patch: api::MemoryPatch,
    ) -> Result<wit::Memory, wit::Error> {
        let patch = MemoryPatch {
            content: patch.content,
            tags: patch.tags,
            importance: patch.importance,
            kind: patch.kind.map(Into::into),
            attributes: patch.attributes,
        };
        Ok(engine().update(&namespace, &id, patch)?.into())
    }

    fn delete(namespace: String, id: String, reason: String) -> Result<wit::Memory, wit::Error> {
        Ok(engine().delete(&namespace, &id, &reason)?.into())
    }

    fn restore(namespace: String, id: String) -> Result<wit::Memory, wit::Error> {
        Ok(engine().restore(&namespace, &id)?.into())
    }

    fn confirm(namespace: String, id: String) -> Result<wit::Memory, wit::Error> {
        Ok(engine().confirm(&namespace, &id)?.into())
    }

    fn correct(namespace: String, id: String, content: String) -> Result<wit::Memory, wit::Error> {
        Ok(engine().correct(&namespace, &id, &content)?.into())
    }

    fn stats(namespace: Option<String>) -> Result<wit::StoreStats, wit::Error> {
        Ok(engine().stats(namespace.as_deref())?.into())
    }

    fn entity_info(
        namespace: String,
        name: String,
        limit: u32,
    ) -> Result<Vec<api::EntityProfile>, wit::Error> {
        Ok(engine()
            .entity_info(&namespace, &name, limit)?
            .into_iter()
            .map(|p| api::EntityProfile {
                entity: p.entity.into(),
                memories: p.memories.into_iter().map(Into::into).collect(),
                episodes: p.episodes.into_iter().map(Into::into).collect(),
            })
            .collect())
    }

    fn enrich(limit: u32) -> Result<api::EnrichReport, wit::Error> {
        let r = engine().enrich(limit)?;
        Ok(api::EnrichReport {
            ran: r.ran,
            examined: r.examined,
            linked: r.linked,
        })
    }

    fn import(item: api::ImportItem) -> Result<api::ImportOutcome, wit::Error> {
        let item = match item {
            api::ImportItem::Memory((m, vector)) => ImportItem::Memory {
                memory: m.into(),
                vector,
            },
            api::ImportItem::Episode((e, vector)) => ImportItem::Episode {
                episode: e.into(),
                vector,
            },
            api::ImportItem::Session(s) => ImportItem::Session { session: s.into() },
            api::ImportItem::Entity((e, memories, episodes)) => ImportItem::Entity {
                entity: e.into(),
                memories,
                episodes,
            },
            api::ImportItem::Fact(f) => ImportItem::Fact { fact: f.into() },
        };
        Ok(match engine().import(item)? {
            ImportOutcome::Created => api::ImportOutcome::Created,
            ImportOutcome::Exists => api::ImportOutcome::Exists,
            ImportOutcome::Merged => api::ImportOutcome::Merged,
        })
    }

    fn decay() -> Result<api::FadeReport, wit::Error> {
        let r = engine().decay()?;
        Ok(api::FadeReport {
            examined: r.examined,
            decayed: r.decayed,
            pruned: r.pruned,
        })
    }

    fn consolidate(req: api::ConsolidateRequest) -> Result<api::ConsolidateReport, wit::Error> {
        let r = engine().consolidate(ConsolidateRequest {
            namespace: req.namespace,
            dry: req.dry,
            if_changed: req.if_changed,
        })?;
        Ok(report_out(r))
    }

    fn consolidate_sessions(
        namespace: String,
        ids: Vec<String>,
    ) -> Result<api::ConsolidateReport, wit::Error> {
        Ok(report_out(engine().consolidate_sessions(&namespace, &ids)?))
    }

    fn review(
        namespace: Option<String>,
        dry: bool,
    ) -> Result<api::ReviewReport, wit::Error> {
        let r = engine().review(namespace.as_deref(), dry)?;
        Ok(api::ReviewReport {
            ops: r
                .ops
                .into_iter()
                .map(|o| api::ReviewOp {
                    op: o.op,
                    ids: o.ids,
                    target_layer: o.target_layer.map(Into::into),
                    importance: o.importance,
                    content: o.content,
                    reason: o.reason,
                    allowed: o.allowed,
                    verdict: o.verdict,
                })
                .collect(),
            safety: r.safety,
            executed: r.executed,
            dry: r.dry,
        })
    }

    fn rebuild_topics(namespace: Option<String>) -> Result<u32, wit::Error> {
        Ok(engine().rebuild_topics(namespace.as_deref())?)
    }

    fn topics(namespace: String, ids: Vec<String>) -> Result<Vec<api::Topic>, wit::Error> {
        Ok(engine()
            .topics(&namespace, &ids)?
            .into_iter()
            .map(|t| api::Topic {
                id: t.id,
                name: t.name,
                memories: t.memories.into_iter().map(Into::into).collect(),
            })
            .collect())
    }

    fn resume(req: api::ResumeRequest) -> Result<api::ResumeBlock, wit::Error> {
        let r = engine().resume(ResumeRequest {
            namespace: req.namespace,
            hours: req.hours,
        })?;
        Ok(api::ResumeBlock {
            text: r.text,
            core: r.core.into_iter().map(Into::into).collect(),
            recent: r.recent.into_iter().map(Into::into).collect(),
            topics: r
                .topics
                .into_iter()
                .map(|t| api::TopicSummary {
                    id: t.id,
                    name: t.name,
                    size: t.size,
                })
                .collect(),
            triggers: r.triggers,
        })
    }

    fn context(
        namespace: String,
        prompt: String,
        session_id: Option<String>,
        limit: u32,
    ) -> Result<api::ContextBlock, wit::Error> {
        let b = engine().context(&namespace, &prompt, session_id.as_deref(), limit)?;
        Ok(api::ContextBlock {
            text: b.text,
            memories: b.memories.into_iter().map(Into::into).collect(),
            reflection: b.reflection.map(Into::into),
        })
    }

    fn reflect(namespace: String, force: bool) -> Result<api::ReflectOutcome, wit::Error> {
        let r = engine().reflect(&namespace, force)?;
        Ok(api::ReflectOutcome {
            memory: r.memory.map(Into::into),
            skipped: r.skipped,
        })
    }

    fn recent(namespace: String, hours: u32, limit: u32) -> Result<Vec<wit::Memory>, wit::Error> {
        Ok(engine()
            .recent(&namespace, hours, limit)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    fn triggers(namespace: String) -> Result<Vec<(String, u64)>, wit::Error> {
        Ok(engine().triggers(&namespace)?)
    }

    fn add_fact(f: api::FactInput) -> Result<api::FactOutcome, wit::Error> {
        let out = engine().add_fact(FactInput {
            namespace: f.namespace,
            subject: f.subject,
            predicate: f.predicate,
            object: f.object,
            confidence: f.confidence,
            memory_id: f.memory_id,
            exclusive: f.exclusive,
        })?;
        Ok(api::FactOutcome {
            fact: out.fact.into(),
            superseded: out.superseded.into_iter().map(Into::into).collect(),
        })
    }

    fn query_facts(q: wit::FactQuery) -> Result<Vec<wit::Fact>, wit::Error> {
        Ok(engine()
            .query_facts(q.into())?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    fn fact_graph(
        namespace: String,
        entity: String,
        hops: u32,
    ) -> Result<Vec<wit::Fact>, wit::Error> {
        Ok(engine()
            .fact_graph(&namespace, &entity, hops)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    fn fact_conflicts(namespace: String) -> Result<Vec<(wit::Fact, wit::Fact)>, wit::Error> {
        Ok(engine()
            .fact_conflicts(&namespace)?
            .into_iter()
            .map(|(a, b)| (a.into(), b.into()))
            .collect())
    }

    fn version() -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    fn probe(calls: u32) -> i64 {
        (0..calls).fold(0, |_, _| clock::now())
    }
}

fn report_out(r: ConsolidateReport) -> api::ConsolidateReport {
    api::ConsolidateReport {
        epoch: r.epoch,
        dry: r.dry,
        skipped: r.skipped,
        examined: r.examined,
        decayed: r.decayed,
        actions: r
            .actions
            .into_iter()
            .map(|a| api::LifecycleAction {
                action: a.action,
                memory_id: a.memory_id,
                namespace: a.namespace,
                from_layer: a.from_layer.map(Into::into),
                to_layer: a.to_layer.map(Into::into),
                detail: a.detail,
            })
            .collect(),
        sessions: r.sessions,
        facts_added: r.facts_added,
        topics: r.topics,
        warnings: r.warnings,
    }
}

export!(Component);
