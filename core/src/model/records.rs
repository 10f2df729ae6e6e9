//! The records the core and its host exchange through the capability
//! interfaces (`types`, `storage`, `embedding`, `llm` in `wit/core/`).

use super::*;

/// Every record of the capability interfaces, for a callback macro
/// (`define!` here, `impl_cross!` in the adapters).
#[macro_export]
macro_rules! stored_records {
    ($cb:ident) => {
        $cb! { records
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Memory {
                id: String,
                namespace: String,
                content: String,
                kind: Kind,
                layer: Layer,
                importance: f32,
                confidence: f32,
                decay_rate: f32,
                access_count: u32,
                repetition_count: u32,
                created_at: Millis,
                modified_at: Millis,
                last_accessed: Option<Millis>,
                event_time: Millis,
                created_epoch: u64,
                valid_until: Option<Millis>,
                invalid_reason: Option<String>,
                session_id: Option<String>,
                source: Option<String>,
                source_role: Option<String>,
                tags: Vec<String>,
                /// A JSON object, kept as text (shown as the object in JSON).
                #[serde(with = "crate::model::json_text")]
                #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, serde_json::Value>"))]
                attributes: String,
                source_ids: Vec<String>,
                supersedes: Option<String>,
                superseded_by: Option<String>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Episode {
                id: String,
                namespace: String,
                session_id: String,
                source_role: String,
                content: String,
                event_time: Millis,
                created_at: Millis,
                valid_until: Option<Millis>,
                invalid_reason: Option<String>,
                #[serde(with = "crate::model::json_text")]
                #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, serde_json::Value>"))]
                attributes: String,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Session {
                id: String,
                namespace: String,
                first_seen_at: Millis,
                last_seen_at: Millis,
                turn_count: u32,
                consolidated_at: Option<Millis>,
        /// The watermark: how many turns, in dialogue order, are consolidated.
        #[serde(default)]
        consolidated_turns: u32,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Entity {
                id: String,
                namespace: String,
                canonical_name: String,
                entity_type: EntityType,
                aliases: Vec<String>,
                mention_count: u32,
                summary: Option<String>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Fact {
                id: String,
                namespace: String,
                subject: String,
                predicate: String,
                object: String,
                confidence: f32,
                valid_from: Millis,
                valid_until: Option<Millis>,
                superseded_by: Option<String>,
                memory_id: Option<String>,
            }

            /// An entity found in a text by a NER strategy.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Mention {
                text: String,
                entity_type: EntityType,
                start: u32,
                end: u32,
                confidence: f32,
                provider: String,
            }

            /// Restricts every search channel; empty means "any".
            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            types::SearchFilter {
                namespaces: Vec<String>,
                layers: Vec<Layer>,
                kinds: Vec<Kind>,
                tags: Vec<String>,
                since: Option<Millis>,
                until: Option<Millis>,
                source: Option<String>,
                session_id: Option<String>,
                exclude_session: Option<String>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::ScoredId {
                id: String,
                score: Score,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Decision {
                at: Millis,
                namespace: String,
                action: Action,
                target_id: String,
                detail: String,
            }

            /// An earlier state of a memory, kept when a change replaced it.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::MemoryVersion {
                memory_id: String,
                namespace: String,
                seq: u32,
                replaced_at: Millis,
                action: Action,
                reason: String,
                memory: Memory,
            }

            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            types::StoreStats {
                active: u64,
                buffer: u64,
                working: u64,
                core: u64,
                episodic: u64,
                semantic: u64,
                procedural: u64,
                deleted: u64,
                episodes: u64,
                sessions: u64,
                entities: u64,
                facts: u64,
                memory_vectors: u64,
                episode_vectors: u64,
                newest: Option<Millis>,
            }

            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            storage::ListQuery {
                namespaces: Vec<String>,
                layers: Vec<Layer>,
                kinds: Vec<Kind>,
                tags: Vec<String>,
                state: ListState,
                /// Only memories modified at or after this time.
                modified_since: Option<Millis>,
                /// Newest modification first (default: newest creation first).
                by_modified: bool,
                limit: u32,
                offset: u32,
                /// Keyset paging: only memories after this one in the
                /// order — its (creation or modification) time and id, the
                /// last row of the previous page.
                after_time: Option<Millis>,
                after_id: Option<String>,
                /// Only memories whose importance is at least this.
                min_importance: Option<f32>,
                /// Only memories with at least one of these tags (`tags`:
                /// all of them).
                any_tags: Vec<String>,
                /// Only memories from this source.
                source: Option<String>,
            }

            /// Which facts to read; names compare case-insensitively.
            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            types::FactQuery {
                namespaces: Vec<String>,
                id: Option<String>,
                subject: Option<String>,
                predicate: Option<String>,
                object: Option<String>,
                /// Subject or object.
                entity: Option<String>,
                include_invalid: bool,
                limit: u32,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            embedding::EmbedderInfo {
                model: String,
                dimension: u32,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            llm::ChatMessage {
                role: String,
                content: String,
            }

            /// A function the model must call (structured output).
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            llm::ToolSpec {
                name: String,
                description: String,
                /// JSON Schema of the arguments.
                parameters: String,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            llm::ChatRequest {
                /// Which pipeline step calls: routes the model, labels the ledger.
                component: LlmComponent,
                messages: Vec<ChatMessage>,
                json: bool,
                max_tokens: Option<u32>,
                /// When set, the response content is the tool call's arguments (JSON).
                tool: Option<ToolSpec>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            llm::ChatResponse {
                content: String,
                model: String,
                input_tokens: u32,
                output_tokens: u32,
            }

            /// What a NER strategy found, and which of its providers failed.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        ner::NerResult {
            /// Merged mentions of every provider that answered.
            mentions: Vec<Mention>,
            /// One message per provider that failed (the others still answered).
            failures: Vec<String>,
        }

        /// An item never enriched, with few entities (seed 003's enrichment).
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            storage::EnrichmentCandidate {
                id: String,
                namespace: String,
                content: String,
            }
            }
    };
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

    /// Confirmed by the user or a reflection: `decay_rate` 0 (seed 003's
    /// `confirm_fact`). The lifecycle never evicts, folds away or fades it.
    pub fn is_protected(&self) -> bool {
        self.decay_rate <= 0.0
    }

    /// The user's tags: every tag but the lifecycle's markers.
    pub fn user_tags(&self) -> impl Iterator<Item = &String> {
        self.tags.iter().filter(|t| !is_marker(t))
    }

    /// `access_count + repetition_count × 2.5` (seed 004 §2.2).
    pub fn reinforcement_score(&self) -> f32 {
        self.access_count as f32
            + self.repetition_count as f32 * crate::thresholds::REPETITION_WEIGHT
    }
}

/// The tags the lifecycle writes to remember what it did (seed 004 §2.3,
/// §2.5, §3.3): gate rejections and their escalation, triage, distillation.
/// They never count towards a memory's `MAX_TAGS` user tags (so a memory
/// with 20 tags still escalates its rejections and is not triaged twice),
/// and replacing a memory's tags keeps them.
pub const LIFECYCLE_MARKERS: [&str; 7] = [
    "gate-rejected",
    "gate-rejected-2",
    "gate-rejected-final",
    "_triaged",
    "distilled",
    "auto-distilled",
    "_merge-pending",
];

/// Whether a tag is one of the lifecycle's markers.
pub fn is_marker(tag: &str) -> bool {
    LIFECYCLE_MARKERS.contains(&tag)
}
