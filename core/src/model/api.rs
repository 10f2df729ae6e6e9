//! The requests and responses of the engine export (`wit/core/engine.wit`).

use super::*;

/// Every record of the engine interface, for a callback macro.
#[macro_export]
macro_rules! engine_records {
    ($cb:ident) => {
        $cb! { records
        /// A fact to add (API or consolidation).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        engine::FactInput {
            #[serde(default)]
            namespace: String,
            subject: String,
            predicate: String,
            object: String,
            #[serde(default)]
            confidence: Option<f32>,
            #[serde(default)]
            memory_id: Option<String>,
            /// The predicate holds one value: supersede the subject's other objects.
            #[serde(default)]
            exclusive: bool,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::FactOutcome {
            fact: Fact,
            superseded: Vec<Fact>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        engine::ConsolidateRequest {
            #[serde(default)]
            namespace: Option<String>,
            #[serde(default)]
            dry: bool,
            #[serde(default)]
            if_changed: bool,
            /// A pending session is consolidated once idle this long, or
            /// when a newer session of its namespace started (default
            /// `SESSION_IDLE_MINUTES`).
            #[serde(default)]
            session_idle_minutes: Option<u32>,
            /// Buffer memories a namespace keeps before the weakest go to
            /// the trash (default `BUFFER_CAP`, 200).
            #[serde(default)]
            buffer_cap: Option<u32>,
            /// A Buffer memory whose importance decays below this goes to
            /// the trash (default `DECAY_DROP_THRESHOLD`, 0.01).
            #[serde(default)]
            buffer_drop_below: Option<f32>,
        }

        /// One lifecycle decision of a consolidation cycle.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::LifecycleAction {
            action: Action,
            memory_id: String,
            namespace: String,
            from_layer: Option<Layer>,
            to_layer: Option<Layer>,
            detail: String,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ConsolidateReport {
            epoch: u64,
            dry: bool,
            skipped: bool,
            /// Memories the cycle read: those it could act on
            /// (`lifecycle/candidates.rs`), not the whole store.
            examined: u32,
            /// Of those, the ones whose importance decays this epoch.
            decayed: u32,
            actions: Vec<LifecycleAction>,
            sessions: Vec<String>,
            facts_added: u32,
            topics: u32,
            warnings: Vec<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::TopicSummary {
            id: String,
            name: String,
            size: u32,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::Topic {
            id: String,
            name: String,
            memories: Vec<Memory>,
            /// The parent topic of a leaf.
            #[serde(default)]
            parent: Option<String>,
            /// The leaves of a parent topic; empty for a leaf.
            #[serde(default)]
            children: Vec<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::ResumeRequest {
            namespace: String,
            hours: u32,
            /// What the new session is about: Core and Recent keep only
            /// what is relevant to it. None: everything.
            #[serde(default)]
            context: Option<String>,
        }

        /// Seed 004's session-recovery context.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ResumeBlock {
            text: String,
            core: Vec<Memory>,
            recent: Vec<Memory>,
            topics: Vec<TopicSummary>,
            triggers: Vec<String>,
        }

        /// Seed 003's context injection block.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ContextBlock {
            text: String,
            memories: Vec<Memory>,
            reflection: Option<Memory>,
        }

        /// One operation the LLM review proposed, and the review rules' verdict.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::ReviewOp {
            /// Delete is always refused: the review has no delete power.
            op: ReviewAction,
            ids: Vec<String>,
            target_layer: Option<Layer>,
            importance: Option<f32>,
            content: Option<String>,
            reason: String,
            /// Passed the review rules.
            allowed: bool,
            /// Why it was refused, when it was.
            verdict: String,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ReviewReport {
            ops: Vec<ReviewOp>,
            /// Allowed share of the proposed operations.
            safety: f32,
            executed: u32,
            dry: bool,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ReflectOutcome {
            memory: Option<Memory>,
            skipped: Option<String>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::RememberRequest {
            namespace: String,
            content: String,
            kind: Option<Kind>,
            tags: Vec<String>,
            source: Option<String>,
            session_id: Option<String>,
            importance: Option<f32>,
            #[serde(default, with = "crate::model::json_text::option")]
            #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
            attributes: Option<String>,
            event_time: Option<Millis>,
            skip_dedup: bool,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::RememberOutcome {
            memory: Memory,
            created: bool,
            dedup_reason: Option<String>,
            similarity: Option<f32>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::Turn {
            namespace: String,
            session_id: String,
            role: String,
            content: String,
            event_time: Option<Millis>,
            #[serde(default, with = "crate::model::json_text::option")]
            #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
            attributes: Option<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::IngestOutcome {
            episode: Episode,
            new_session: bool,
            pending_sessions: Vec<String>,
            entities: u32,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::RecallRequest {
            query: String,
            namespace: String,
            layers: Vec<Layer>,
            kinds: Vec<Kind>,
            tags: Vec<String>,
            since: Option<Millis>,
            until: Option<Millis>,
            source: Option<String>,
            min_score: Option<f32>,
            limit: u32,
            offset: u32,
            token_budget: Option<u32>,
            sort: SortOrder,
            dry: bool,
            include_episodes: bool,
            episodes_only: bool,
            /// Leave out what was said in this session (context injection).
            exclude_session: Option<String>,
            /// LLM query expansion: on, off, or (unset) automatic when the best hit
            /// is weak (seed 004 §4.4). Never with the LLM level `off`.
            expand: Option<bool>,
            /// Let the LLM re-order the page of hits (seed 004 §4.5).
            rerank: bool,
            /// How channel evidence becomes relevance.
            relevance: Relevance,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::ChannelHit {
            channel: Channel,
            rank: u32,
            raw_score: Score,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::Explanation {
            channels: Vec<ChannelHit>,
            rrf: Score,
            relevance: Score,
            importance: Score,
            recency: Score,
            layer_bonus: Score,
            notes: Vec<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::Hit {
            /// Flattened: a hit reads `{"type": "memory", "id", "content", ..., "score", "explanation"}`.
            #[serde(flatten)]
            item: Item,
            score: Score,
            explanation: Explanation,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::RecallResponse {
            hits: Vec<Hit>,
            channels_run: Vec<Channel>,
            warnings: Vec<String>,
            candidates: u32,
            /// The LLM's alternative phrasings, when expansion ran and was used.
            expansions: Vec<String>,
            /// Whether the LLM re-ordered the hits.
            reranked: bool,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::MemoryPatch {
            content: Option<String>,
            tags: Option<Vec<String>>,
            importance: Option<f32>,
            kind: Option<Kind>,
            #[serde(default, with = "crate::model::json_text::option")]
            #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
            attributes: Option<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::ListRequest {
            namespace: String,
            layers: Vec<Layer>,
            kinds: Vec<Kind>,
            tags: Vec<String>,
            deleted: bool,
            limit: u32,
            offset: u32,
        }

        /// "Tell me everything about X".
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::EntityProfile {
            entity: Entity,
            memories: Vec<Memory>,
            episodes: Vec<Episode>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::EnrichReport {
            ran: bool,
            examined: u32,
            linked: u32,
        }

        /// Which layers fade; empty: the default, Buffer and Working.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::FadeRequest {
            layers: Vec<Layer>,
        }

        /// Seed 003's nightly confidence fading.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::FadeReport {
            examined: u32,
            /// Memories whose confidence faded.
            faded: u32,
            /// Moved to the trash (reason `faded`, restorable).
            pruned: u32,
        }

        /// An exported memory, with its vector if exported.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::MemoryLine {
            memory: Memory,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            vector: Option<Vec<f32>>,
        }

        /// An exported episode, with its vector if exported.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::EpisodeLine {
            episode: Episode,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            vector: Option<Vec<f32>>,
        }

        /// An exported entity and the ids of the memories and episodes linked to it.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::EntityLine {
            entity: Entity,
            memories: Vec<String>,
            episodes: Vec<String>,
        }

        /// An exported session.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::SessionLine {
            session: Session,
        }

        /// An exported fact, current or superseded (its history travels with it).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::FactLine {
            fact: Fact,
        }

        /// An exported earlier state of a memory.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::VersionLine {
            version: MemoryVersion,
        }
        }
    };
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
