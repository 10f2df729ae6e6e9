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
                /// Stable id (`mem_…`).
                id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// The statement remembered, as the agent gave it (or as the
                /// lifecycle distilled or merged it).
                content: String,
                /// `episodic` (an event), `semantic` (a fact) or `procedural`
                /// (how to do something).
                kind: Kind,
                /// Buffer (new), Working (reinforced) or Core (lasting);
                /// consolidation moves memories between them.
                layer: Layer,
                /// 0 to 1: how much it matters; decays in the Buffer each
                /// cycle, raised by reinforcement.
                importance: f32,
                /// 0 to 1: how sure mnemo is it still holds; seed 003's nightly
                /// fading lowers it when it is not read.
                confidence: f32,
                /// Ebbinghaus decay rate of its confidence; 0 means confirmed
                /// (protected: never fades, never evicted).
                decay_rate: f32,
                /// How often a recall returned it (dry recalls do not count).
                access_count: u32,
                /// How often it was restated: duplicates folded into it instead
                /// of stored again.
                repetition_count: u32,
                /// When it was stored (milliseconds since the Unix epoch, UTC).
                created_at: Millis,
                /// When its content, tags, layer or scores last changed
                /// (milliseconds since the Unix epoch, UTC).
                modified_at: Millis,
                /// When a recall last returned it (milliseconds since the Unix
                /// epoch, UTC); null if never.
                last_accessed: Option<Millis>,
                /// When what it says happened or was said (milliseconds since
                /// the Unix epoch, UTC); defaults to `created_at`.
                event_time: Millis,
                /// The consolidation epoch it was stored in (cycles count
                /// epochs).
                created_epoch: u64,
                /// When it left the active set (milliseconds since the Unix
                /// epoch, UTC): deleted, faded, evicted, merged or superseded;
                /// null while active.
                valid_until: Option<Millis>,
                /// Why it left the active set (`deleted via API`, `faded`,
                /// `merged into …`, `corrected`, …); null while active.
                invalid_reason: Option<String>,
                /// The dialogue session it came from, if any.
                session_id: Option<String>,
                /// Where it came from: the caller's label, or `consolidation` /
                /// `reflection` for what the lifecycle wrote; null if not
                /// given.
                source: Option<String>,
                /// The speaker of the turn it was taken from (`user`,
                /// `assistant`), if any.
                source_role: Option<String>,
                /// Labels; `trigger:<name>` tags are recalled before that
                /// action (seed 004), lifecycle markers are kept apart from the
                /// user's tags.
                tags: Vec<String>,
                /// A JSON object, kept as text (shown as the object in JSON).
                #[serde(with = "crate::model::json_text")]
                #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, serde_json::Value>"))]
                attributes: String,
                /// The memories and turns it was distilled or merged from (its
                /// provenance).
                source_ids: Vec<String>,
                /// The memory this one replaced (a correction or a newer
                /// value).
                supersedes: Option<String>,
                /// The memory that replaced this one.
                superseded_by: Option<String>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Episode {
                /// Stable id (`ep_…`).
                id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// The dialogue session of the turn.
                session_id: String,
                /// Who spoke (`user`, `assistant`, …).
                source_role: String,
                /// What was said.
                content: String,
                /// When it was said (milliseconds since the Unix epoch, UTC).
                event_time: Millis,
                /// When it was stored (milliseconds since the Unix epoch, UTC).
                created_at: Millis,
                /// When it was deleted (milliseconds since the Unix epoch,
                /// UTC); null while active.
                valid_until: Option<Millis>,
                /// Why it was deleted; null while active.
                invalid_reason: Option<String>,
                /// Free-form metadata (a JSON object).
                #[serde(with = "crate::model::json_text")]
                #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, serde_json::Value>"))]
                attributes: String,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Session {
                /// The session id the agent gave.
                id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// Its first turn's arrival (milliseconds since the Unix epoch,
                /// UTC).
                first_seen_at: Millis,
                /// Its latest turn's arrival (milliseconds since the Unix
                /// epoch, UTC).
                last_seen_at: Millis,
                /// Turns stored.
                turn_count: u32,
                /// When seed 003's session consolidation last ran on it
                /// (milliseconds since the Unix epoch, UTC); null if not yet.
                consolidated_at: Option<Millis>,
        /// The watermark: how many turns, in dialogue order, are consolidated.
        #[serde(default)]
        consolidated_turns: u32,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Entity {
                /// Stable id (`ent_…`).
                id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// The name mentions are folded under.
                canonical_name: String,
                /// What NER took it for (person, place, organisation, …).
                entity_type: EntityType,
                /// Other spellings seen.
                aliases: Vec<String>,
                /// Memories and turns that mention it.
                mention_count: u32,
                /// A short description, when one was written.
                summary: Option<String>,
            }

            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::Fact {
                /// Stable id (`fact_…`).
                id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// Who or what the fact is about.
                subject: String,
                /// The relation (`lives_in`, `works_at`, …).
                predicate: String,
                /// The value or the other entity.
                object: String,
                /// 0 to 1: how sure the source was.
                confidence: f32,
                /// Since when it holds (milliseconds since the Unix epoch,
                /// UTC).
                valid_from: Millis,
                /// Until when it held (milliseconds since the Unix epoch, UTC):
                /// set when superseded; null while valid.
                valid_until: Option<Millis>,
                /// The fact that replaced it.
                superseded_by: Option<String>,
                /// The memory it was extracted from, if any.
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
                /// When it was decided (milliseconds since the Unix epoch,
                /// UTC).
                at: Millis,
                /// The namespace it concerns (`*` for store-wide entries such
                /// as scheduled runs).
                namespace: String,
                /// What was decided: promote, demote, merge, evict, supersede,
                /// inject, delete, restore, reinforce, edit, scheduled, …
                action: Action,
                /// The memory, episode or session it concerns (or the task, for
                /// a scheduled run).
                target_id: String,
                /// Why, for a person.
                detail: String,
            }

            /// An earlier state of a memory, kept when a change replaced it.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            types::MemoryVersion {
                /// The memory it is a state of.
                memory_id: String,
                /// The namespace: a hard partition (one agent, user or
                /// project).
                namespace: String,
                /// Its number in the memory's history (1 is the oldest);
                /// `revert` takes it.
                seq: u32,
                /// When this state was replaced (milliseconds since the Unix
                /// epoch, UTC).
                replaced_at: Millis,
                /// What replaced it (edit, merge, revert, reconcile, …).
                action: Action,
                /// Why, for a person.
                reason: String,
                /// The whole memory as it was.
                memory: Memory,
            }

            #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
            types::StoreStats {
                /// Memories not in the trash.
                active: u64,
                /// Active memories in the Buffer.
                buffer: u64,
                /// Active memories in Working.
                working: u64,
                /// Active memories in Core.
                core: u64,
                /// Active episodic memories.
                episodic: u64,
                /// Active semantic memories.
                semantic: u64,
                /// Active procedural memories.
                procedural: u64,
                /// Memories in the trash (restorable).
                deleted: u64,
                /// Dialogue turns stored.
                episodes: u64,
                /// Dialogue sessions seen.
                sessions: u64,
                /// Entities known.
                entities: u64,
                /// Facts, valid and superseded.
                facts: u64,
                /// Memories with an embedding.
                memory_vectors: u64,
                /// Turns with an embedding.
                episode_vectors: u64,
                /// The newest memory's creation time (milliseconds since the
                /// Unix epoch, UTC); null when there is none.
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
