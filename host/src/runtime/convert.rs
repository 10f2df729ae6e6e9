//! Conversions between the generated WIT types and the core's model types —
//! the host's one edge with the bindings.

use mnemo_core::CoreError;
use mnemo_core::model::*;

use super::bindings::exports::mnemo::core::engine as api;
use super::bindings::mnemo::core::{embedding, llm, storage, types as wit};

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

/// Field-for-field record conversion, both ways: plain fields, enum fields,
/// lists of enums and optional enums.
macro_rules! record_conv {
    ($a:ty, $b:ty, [$($f:ident),*], [$($e:ident),*], [$($v:ident),*], [$($o:ident),*]) => {
        impl From<$a> for $b {
            fn from(x: $a) -> Self {
                Self {
                    $($f: x.$f,)*
                    $($e: x.$e.into(),)*
                    $($v: x.$v.into_iter().map(Into::into).collect(),)*
                    $($o: x.$o.map(Into::into),)*
                }
            }
        }
        impl From<$b> for $a {
            fn from(x: $b) -> Self {
                Self {
                    $($f: x.$f,)*
                    $($e: x.$e.into(),)*
                    $($v: x.$v.into_iter().map(Into::into).collect(),)*
                    $($o: x.$o.map(Into::into),)*
                }
            }
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

record_conv!(
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
    [kind, layer],
    [],
    []
);
record_conv!(
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
    ],
    [],
    [],
    []
);
record_conv!(
    wit::Session,
    Session,
    [
        id,
        namespace,
        first_seen_at,
        last_seen_at,
        turn_count,
        consolidated_at
    ],
    [],
    [],
    []
);
record_conv!(
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
    [entity_type],
    [],
    []
);
record_conv!(
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
    ],
    [],
    [],
    []
);
record_conv!(
    wit::Mention,
    Mention,
    [text, start, end, confidence, provider],
    [entity_type],
    [],
    []
);
record_conv!(
    wit::SearchFilter,
    SearchFilter,
    [
        namespaces,
        tags,
        since,
        until,
        source,
        session_id,
        exclude_session
    ],
    [],
    [layers, kinds],
    []
);
record_conv!(wit::ScoredId, ScoredId, [id, score], [], [], []);
record_conv!(
    wit::AuditEntry,
    AuditEntry,
    [at, namespace, action, target_id, detail],
    [],
    [],
    []
);
record_conv!(
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
    ],
    [],
    [],
    []
);
record_conv!(
    embedding::EmbedderInfo,
    EmbedderInfo,
    [model, dimension],
    [],
    [],
    []
);
record_conv!(llm::Message, ChatMessage, [role, content], [], [], []);
record_conv!(
    llm::ChatRequest,
    ChatRequest,
    [component, json, max_tokens],
    [],
    [messages],
    [tool]
);
record_conv!(
    llm::Tool,
    ToolSpec,
    [name, description, parameters],
    [],
    [],
    []
);
record_conv!(
    llm::ChatResponse,
    ChatResponse,
    [content, model, input_tokens, output_tokens],
    [],
    [],
    []
);
record_conv!(
    api::RememberRequest,
    RememberRequest,
    [
        namespace, content, tags, source, session_id, importance, attributes, event_time,
        skip_dedup
    ],
    [],
    [],
    [kind]
);
record_conv!(
    api::RememberOutcome,
    RememberOutcome,
    [created, dedup_reason, similarity],
    [memory],
    [],
    []
);
record_conv!(
    api::Turn,
    Turn,
    [namespace, session_id, role, content, event_time, attributes],
    [],
    [],
    []
);
record_conv!(
    api::IngestOutcome,
    IngestOutcome,
    [new_session, pending_sessions, entities],
    [episode],
    [],
    []
);
record_conv!(
    api::RecallRequest,
    RecallRequest,
    [
        query,
        namespace,
        tags,
        since,
        until,
        source,
        min_score,
        limit,
        offset,
        token_budget,
        dry,
        include_episodes,
        episodes_only,
        exclude_session,
        expand,
        rerank
    ],
    [sort, relevance],
    [layers, kinds],
    []
);
record_conv!(
    api::ChannelHit,
    ChannelHit,
    [rank, raw_score],
    [channel],
    [],
    []
);
record_conv!(
    api::Explanation,
    Explanation,
    [rrf, relevance, importance, recency, layer_bonus, notes],
    [],
    [channels],
    []
);
record_conv!(api::Hit, Hit, [score], [item, explanation], [], []);
record_conv!(
    api::RecallResponse,
    RecallResponse,
    [warnings, candidates, expansions, reranked],
    [],
    [hits, channels_run],
    []
);
record_conv!(
    api::MemoryPatch,
    MemoryPatch,
    [content, tags, importance, attributes],
    [],
    [],
    [kind]
);
record_conv!(
    api::ListRequest,
    ListRequest,
    [namespace, tags, deleted, limit, offset],
    [],
    [layers, kinds],
    []
);

record_conv!(
    api::EntityProfile,
    EntityProfile,
    [],
    [entity],
    [memories, episodes],
    []
);
record_conv!(
    api::EnrichReport,
    EnrichReport,
    [ran, examined, linked],
    [],
    [],
    []
);

record_conv!(
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
    ],
    [],
    [],
    []
);

record_conv!(
    api::ConsolidateRequest,
    ConsolidateRequest,
    [namespace, dry, if_changed],
    [],
    [],
    []
);
record_conv!(
    api::LifecycleAction,
    LifecycleAction,
    [action, memory_id, namespace, detail],
    [],
    [],
    [from_layer, to_layer]
);
record_conv!(
    api::ConsolidateReport,
    ConsolidateReport,
    [
        epoch,
        dry,
        skipped,
        examined,
        decayed,
        sessions,
        facts_added,
        topics,
        warnings
    ],
    [],
    [actions],
    []
);
record_conv!(
    api::FactInput,
    FactInput,
    [
        namespace, subject, predicate, object, confidence, memory_id, exclusive
    ],
    [],
    [],
    []
);
record_conv!(api::FactOutcome, FactOutcome, [], [fact], [superseded], []);
record_conv!(
    api::TopicSummary,
    TopicSummary,
    [id, name, size],
    [],
    [],
    []
);
record_conv!(api::Topic, Topic, [id, name], [], [memories], []);
record_conv!(
    api::ResumeRequest,
    ResumeRequest,
    [namespace, hours],
    [],
    [],
    []
);
record_conv!(
    api::ResumeBlock,
    Resume,
    [text, triggers],
    [],
    [core, recent, topics],
    []
);
record_conv!(
    api::ContextBlock,
    ContextBlock,
    [text],
    [],
    [memories],
    [reflection]
);
record_conv!(
    api::ReflectOutcome,
    ReflectOutcome,
    [skipped],
    [],
    [],
    [memory]
);

record_conv!(
    api::AuditOp,
    AuditOp,
    [op, ids, importance, content, reason, allowed, verdict],
    [],
    [],
    [target_layer]
);
record_conv!(
    api::AuditReport,
    AuditReport,
    [safety, executed, dry],
    [],
    [ops],
    []
);

impl From<storage::ListQuery> for ListQuery {
    fn from(q: storage::ListQuery) -> Self {
        Self {
            namespaces: q.namespaces,
            layers: q.layers.into_iter().map(Into::into).collect(),
            kinds: q.kinds.into_iter().map(Into::into).collect(),
            tags: q.tags,
            state: Some(q.state.into()),
            modified_since: q.modified_since,
            by_modified: q.by_modified,
            limit: q.limit,
            offset: q.offset,
        }
    }
}

impl From<api::Item> for Item {
    fn from(i: api::Item) -> Self {
        match i {
            api::Item::Memory(m) => Item::Memory(m.into()),
            api::Item::Episode(e) => Item::Episode(e.into()),
        }
    }
}

impl From<Item> for api::Item {
    fn from(i: Item) -> Self {
        match i {
            Item::Memory(m) => api::Item::Memory(m.into()),
            Item::Episode(e) => api::Item::Episode(e.into()),
        }
    }
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
