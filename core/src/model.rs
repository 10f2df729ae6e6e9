//! Domain types of the engine. They mirror the WIT records field for field;
//! the only code that touches generated bindings converts to and from these.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;
/// "Higher is better", everywhere.
pub type Score = f32;

macro_rules! str_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::error::CoreError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.to_ascii_lowercase().as_str() {
                    $($s => Ok($name::$variant),)+
                    other => Err(crate::error::CoreError::InvalidInput(format!(
                        concat!("unknown ", stringify!($name), " `{}`; expected one of: {}"),
                        other,
                        [$($s),+].join(", ")
                    ))),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

str_enum!(
    /// Lifecycle layer (seed 004 §1).
    Layer { Buffer => "buffer", Working => "working", Core => "core" }
);
str_enum!(
    /// What a memory is about; drives epoch decay speed (seed 004 §1).
    Kind { Episodic => "episodic", Semantic => "semantic", Procedural => "procedural" }
);
str_enum!(
    /// Which store a search runs over.
    Target { Memories => "memories", Episodes => "episodes" }
);
str_enum!(
    EntityType {
        Person => "person", Project => "project", Organization => "organization",
        Location => "location", Email => "email", Url => "url", Date => "date",
        Mention => "mention", Hashtag => "hashtag", Other => "other",
    }
);
str_enum!(
    /// A recall channel.
    Channel { Fts => "fts", Vector => "vector", Entity => "entity", Fact => "fact" }
);
str_enum!(
    SortOrder { Score => "score", Recent => "recent", Accessed => "accessed" }
);
str_enum!(
    LlmLevel { Off => "off", Auto => "auto", Full => "full" }
);
str_enum!(
    /// How recall turns channel evidence into relevance: `blend` weighs BM25
    /// and the cosine equally (for a small local embedder); `semantic` is
    /// seed 004 §4.3's cosine-led relevance (for a strong embedder).
    Relevance { Blend => "blend", Semantic => "semantic" }
);
str_enum!(
    ListState { Active => "active", Deleted => "deleted", All => "all" }
);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    pub namespace: String,
    pub content: String,
    pub kind: Kind,
    pub layer: Layer,
    pub importance: f32,
    pub confidence: f32,
    pub decay_rate: f32,
    pub access_count: u32,
    pub repetition_count: u32,
    pub created_at: Millis,
    pub modified_at: Millis,
    pub last_accessed: Option<Millis>,
    pub event_time: Millis,
    pub created_epoch: u64,
    pub valid_until: Option<Millis>,
    pub invalid_reason: Option<String>,
    pub session_id: Option<String>,
    pub source: Option<String>,
    pub source_role: Option<String>,
    pub tags: Vec<String>,
    /// A JSON object, kept as text.
    pub attributes: String,
    pub source_ids: Vec<String>,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
}

impl Memory {
    /// A new Buffer memory with the defaults of seed 003/004.
    pub fn new(id: String, namespace: String, content: String, now: Millis, epoch: u64) -> Self {
        use crate::thresholds::{DEFAULT_CONFIDENCE, DEFAULT_DECAY_RATE, DEFAULT_IMPORTANCE};
        Self {
            id,
            namespace,
            content,
            kind: Kind::Semantic,
            layer: Layer::Buffer,
            importance: DEFAULT_IMPORTANCE,
            confidence: DEFAULT_CONFIDENCE,
            decay_rate: DEFAULT_DECAY_RATE,
            access_count: 0,
            repetition_count: 0,
            created_at: now,
            modified_at: now,
            last_accessed: None,
            event_time: now,
            created_epoch: epoch,
            valid_until: None,
            invalid_reason: None,
            session_id: None,
            source: None,
            source_role: None,
            tags: Vec::new(),
            attributes: "{}".into(),
            source_ids: Vec::new(),
            supersedes: None,
            superseded_by: None,
        }
    }

    pub fn is_active(&self) -> bool {
        self.valid_until.is_none()
    }

    /// `access_count + repetition_count × 2.5` (seed 004 §2.2).
    pub fn reinforcement_score(&self) -> f32 {
        self.access_count as f32
            + self.repetition_count as f32 * crate::thresholds::REPETITION_WEIGHT
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub id: String,
    pub namespace: String,
    pub session_id: String,
    pub source_role: String,
    pub content: String,
    pub event_time: Millis,
    pub created_at: Millis,
    pub valid_until: Option<Millis>,
    pub invalid_reason: Option<String>,
    pub attributes: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub namespace: String,
    pub first_seen_at: Millis,
    pub last_seen_at: Millis,
    pub turn_count: u32,
    pub consolidated_at: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub id: String,
    pub namespace: String,
    pub canonical_name: String,
    pub entity_type: EntityType,
    pub aliases: Vec<String>,
    pub mention_count: u32,
    pub summary: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub id: String,
    pub namespace: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub confidence: f32,
    pub valid_from: Millis,
    pub valid_until: Option<Millis>,
    pub superseded_by: Option<String>,
    pub memory_id: Option<String>,
}

/// An entity found in a text by a NER strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mention {
    pub text: String,
    pub entity_type: EntityType,
    pub start: u32,
    pub end: u32,
    pub confidence: f32,
    pub provider: String,
}

/// Restricts every search channel; empty means "any".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchFilter {
    pub namespaces: Vec<String>,
    pub layers: Vec<Layer>,
    pub kinds: Vec<Kind>,
    pub tags: Vec<String>,
    pub since: Option<Millis>,
    pub until: Option<Millis>,
    pub source: Option<String>,
    pub session_id: Option<String>,
    pub exclude_session: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredId {
    pub id: String,
    pub score: Score,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: Millis,
    pub namespace: String,
    pub action: String,
    pub target_id: String,
    pub detail: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreStats {
    pub active: u64,
    pub buffer: u64,
    pub working: u64,
    pub core: u64,
    pub episodic: u64,
    pub semantic: u64,
    pub procedural: u64,
    pub deleted: u64,
    pub episodes: u64,
    pub sessions: u64,
    pub entities: u64,
    pub facts: u64,
    pub memory_vectors: u64,
    pub episode_vectors: u64,
    pub newest: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListQuery {
    pub namespaces: Vec<String>,
    pub layers: Vec<Layer>,
    pub kinds: Vec<Kind>,
    pub tags: Vec<String>,
    pub state: Option<ListState>,
    /// Only memories modified at or after this time.
    pub modified_since: Option<Millis>,
    /// Newest modification first (default: newest creation first).
    pub by_modified: bool,
    pub limit: u32,
    pub offset: u32,
}

/// Which facts to read; names compare case-insensitively.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FactQuery {
    pub namespaces: Vec<String>,
    pub id: Option<String>,
    pub subject: Option<String>,
    pub predicate: Option<String>,
    pub object: Option<String>,
    /// Subject or object.
    pub entity: Option<String>,
    pub include_invalid: bool,
    pub limit: u32,
}

/// A fact to add (API or consolidation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactInput {
    #[serde(default)]
    pub namespace: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    #[serde(default)]
    pub confidence: Option<f32>,
    #[serde(default)]
    pub memory_id: Option<String>,
    /// The predicate holds one value: supersede the subject's other objects.
    #[serde(default)]
    pub exclusive: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactOutcome {
    pub fact: Fact,
    pub superseded: Vec<Fact>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateRequest {
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub dry: bool,
    #[serde(default)]
    pub if_changed: bool,
}

/// One lifecycle decision of a consolidation cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LifecycleAction {
    /// promote, demote, evict, merge, supersede, gate-reject, triage-keep.
    pub action: String,
    pub memory_id: String,
    pub namespace: String,
    pub from_layer: Option<Layer>,
    pub to_layer: Option<Layer>,
    pub detail: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConsolidateReport {
    pub epoch: u64,
    pub dry: bool,
    pub skipped: bool,
    pub examined: u32,
    pub decayed: u32,
    pub actions: Vec<LifecycleAction>,
    pub sessions: Vec<String>,
    pub facts_added: u32,
    pub topics: u32,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicSummary {
    pub id: String,
    pub name: String,
    pub size: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topic {
    pub id: String,
    pub name: String,
    pub memories: Vec<Memory>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRequest {
    pub namespace: String,
    pub hours: u32,
}

/// Seed 004's session-recovery context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    pub text: String,
    pub core: Vec<Memory>,
    pub recent: Vec<Memory>,
    pub topics: Vec<TopicSummary>,
    pub triggers: Vec<String>,
}

/// Seed 003's context injection block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextBlock {
    pub text: String,
    pub memories: Vec<Memory>,
    pub reflection: Option<Memory>,
}

/// One operation an audit proposed, and what the sandbox made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditOp {
    /// promote, demote, adjust, merge (delete is always refused).
    pub op: String,
    pub ids: Vec<String>,
    pub target_layer: Option<Layer>,
    pub importance: Option<f32>,
    pub content: Option<String>,
    pub reason: String,
    /// Passed the sandbox.
    pub allowed: bool,
    /// Why it was refused, when it was.
    pub verdict: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    pub ops: Vec<AuditOp>,
    /// Allowed share of the proposed operations.
    pub safety: f32,
    pub executed: u32,
    pub dry: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReflectOutcome {
    pub memory: Option<Memory>,
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedderInfo {
    pub model: String,
    pub dimension: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// A function the model must call (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub component: String,
    pub messages: Vec<ChatMessage>,
    pub json: bool,
    pub max_tokens: Option<u32>,
    /// When set, the response content is the tool call's arguments (JSON).
    pub tool: Option<ToolSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: String,
    pub model: String,
    pub input_tokens: u32,
    pub output_tokens: u32,
}

// ---- Engine API requests and responses ------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RememberRequest {
    pub namespace: String,
    pub content: String,
    pub kind: Option<Kind>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub session_id: Option<String>,
    pub importance: Option<f32>,
    pub attributes: Option<String>,
    pub event_time: Option<Millis>,
    pub skip_dedup: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberOutcome {
    pub memory: Memory,
    pub created: bool,
    pub dedup_reason: Option<String>,
    pub similarity: Option<f32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Turn {
    pub namespace: String,
    pub session_id: String,
    pub role: String,
    pub content: String,
    pub event_time: Option<Millis>,
    pub attributes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestOutcome {
    pub episode: Episode,
    pub new_session: bool,
    pub pending_sessions: Vec<String>,
    pub entities: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallRequest {
    pub query: String,
    pub namespace: String,
    pub layers: Vec<Layer>,
    pub kinds: Vec<Kind>,
    pub tags: Vec<String>,
    pub since: Option<Millis>,
    pub until: Option<Millis>,
    pub source: Option<String>,
    pub min_score: Option<f32>,
    pub limit: u32,
    pub offset: u32,
    pub token_budget: Option<u32>,
    pub sort: SortOrder,
    pub dry: bool,
    pub include_episodes: bool,
    pub episodes_only: bool,
    /// Leave out what was said in this session (context injection).
    pub exclude_session: Option<String>,
    /// LLM query expansion: on, off, or (unset) automatic when the best hit
    /// is weak (seed 004 §4.4). Never with the LLM level `off`.
    pub expand: Option<bool>,
    /// Let the LLM re-order the page of hits (seed 004 §4.5).
    pub rerank: bool,
    /// How channel evidence becomes relevance.
    pub relevance: Relevance,
}

impl Default for RecallRequest {
    fn default() -> Self {
        Self {
            query: String::new(),
            namespace: String::new(),
            layers: Vec::new(),
            kinds: Vec::new(),
            tags: Vec::new(),
            since: None,
            until: None,
            source: None,
            min_score: None,
            limit: crate::thresholds::DEFAULT_RECALL_LIMIT,
            offset: 0,
            token_budget: None,
            sort: SortOrder::Score,
            dry: false,
            include_episodes: false,
            episodes_only: false,
            exclude_session: None,
            expand: None,
            rerank: false,
            relevance: Relevance::Blend,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelHit {
    pub channel: Channel,
    pub rank: u32,
    pub raw_score: Score,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub channels: Vec<ChannelHit>,
    pub rrf: Score,
    pub relevance: Score,
    pub importance: Score,
    pub recency: Score,
    pub layer_bonus: Score,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    Memory(Memory),
    Episode(Episode),
}

impl Item {
    pub fn id(&self) -> &str {
        match self {
            Item::Memory(m) => &m.id,
            Item::Episode(e) => &e.id,
        }
    }

    pub fn content(&self) -> &str {
        match self {
            Item::Memory(m) => &m.content,
            Item::Episode(e) => &e.content,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Flattened: a hit reads `{"type": "memory", "id", "content", ..., "score", "explanation"}`.
    #[serde(flatten)]
    pub item: Item,
    pub score: Score,
    pub explanation: Explanation,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecallResponse {
    pub hits: Vec<Hit>,
    pub channels_run: Vec<Channel>,
    pub warnings: Vec<String>,
    pub candidates: u32,
    /// The LLM's alternative phrasings, when expansion ran and was used.
    pub expansions: Vec<String>,
    /// Whether the LLM re-ordered the hits.
    pub reranked: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryPatch {
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub importance: Option<f32>,
    pub kind: Option<Kind>,
    pub attributes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListRequest {
    pub namespace: String,
    pub layers: Vec<Layer>,
    pub kinds: Vec<Kind>,
    pub tags: Vec<String>,
    pub deleted: bool,
    pub limit: u32,
    pub offset: u32,
}

impl Default for ListRequest {
    fn default() -> Self {
        Self {
            namespace: String::new(),
            layers: Vec::new(),
            kinds: Vec::new(),
            tags: Vec::new(),
            deleted: false,
            limit: 50,
            offset: 0,
        }
    }
}

/// "Tell me everything about X".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityProfile {
    pub entity: Entity,
    pub memories: Vec<Memory>,
    pub episodes: Vec<Episode>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnrichReport {
    pub ran: bool,
    pub examined: u32,
    pub linked: u32,
}

/// One line of an export (`mnemo export`), imported by [`crate::Engine::import`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImportItem {
    Memory {
        memory: Memory,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        vector: Option<Vec<f32>>,
    },
    Episode {
        episode: Episode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        vector: Option<Vec<f32>>,
    },
    Session {
        session: Session,
    },
    Entity {
        entity: Entity,
        memories: Vec<String>,
        episodes: Vec<String>,
    },
    Fact {
        fact: Fact,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportOutcome {
    Created,
    Exists,
    Merged,
}
