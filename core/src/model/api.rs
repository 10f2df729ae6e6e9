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
            /// Namespace (default: the `X-Namespace` header, else `default`).
            #[serde(default)]
            #[cfg_attr(feature = "schema", schemars(pattern($crate::thresholds::NAMESPACE_PATTERN)))]
            namespace: String,
            /// Who or what the fact is about.
            #[cfg_attr(feature = "schema", schemars(pattern(r"\S")))]
            subject: String,
            /// The relation (`lives_in`, `works_at`, …).
            #[cfg_attr(feature = "schema", schemars(pattern(r"\S")))]
            predicate: String,
            /// The value or the other entity.
            #[cfg_attr(feature = "schema", schemars(pattern(r"\S")))]
            object: String,
            /// 0 to 1 (default 1).
            #[serde(default)]
            confidence: Option<f32>,
            /// The memory it comes from, if any.
            #[serde(default)]
            memory_id: Option<String>,
            /// The predicate holds one value: supersede the subject's other objects.
            #[serde(default)]
            exclusive: bool,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::FactOutcome {
            /// The fact stored.
            fact: Fact,
            /// The facts it replaced (an exclusive predicate's other objects).
            superseded: Vec<Fact>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        engine::ConsolidateRequest {
            /// Only this namespace (default: the `X-Namespace` header, else
            /// every namespace).
            #[serde(default)]
            #[cfg_attr(feature = "schema", schemars(pattern($crate::thresholds::NAMESPACE_PATTERN)))]
            namespace: Option<String>,
            /// Report what the cycle would do without writing anything.
            #[serde(default)]
            dry: bool,
            /// Skip the cycle when nothing was written since the last one (seed
            /// 004's interval cycle).
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
            /// Set by a host whose topic worker rebuilds the changed
            /// namespaces' trees (the server); not a request field.
            #[serde(skip)]
            topics_by_worker: bool,
        }

        /// One lifecycle decision of a consolidation cycle.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::LifecycleAction {
            /// What the cycle did (promote, demote, merge, evict, supersede,
            /// decay, …).
            action: Action,
            /// The memory it acted on.
            memory_id: String,
            /// The namespace: a hard partition (one agent, user or project).
            namespace: String,
            /// Its layer before, for a move.
            from_layer: Option<Layer>,
            /// Its layer after, for a move.
            to_layer: Option<Layer>,
            /// Why, for a person.
            detail: String,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ConsolidateReport {
            /// The cycle's epoch number.
            epoch: u64,
            /// Whether this was a dry run (nothing written).
            dry: bool,
            /// Whether the cycle was skipped (`if_changed` and nothing new).
            skipped: bool,
            /// Memories the cycle read: those it could act on
            /// (`lifecycle/candidates.rs`), not the whole store.
            examined: u32,
            /// Of those, the ones whose importance decays this epoch.
            decayed: u32,
            /// Every lifecycle decision, in order.
            actions: Vec<LifecycleAction>,
            /// Sessions consolidated into facts (seed 003).
            sessions: Vec<String>,
            /// Facts extracted from those sessions.
            facts_added: u32,
            /// Topics whose index was rebuilt.
            topics: u32,
            /// What could not be done (e.g. an LLM step that failed and will be
            /// retried next cycle).
            warnings: Vec<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::TopicSummary {
            /// `kb…` for a leaf, `kp…` for a parent.
            id: String,
            /// The topic's name.
            name: String,
            /// Memories under it.
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
            /// The whole block as text, ready to put in a prompt.
            text: String,
            /// Core memories (within the context's relevance, if one was
            /// given).
            core: Vec<Memory>,
            /// Memories modified within the window.
            recent: Vec<Memory>,
            /// The topic index's leaves.
            topics: Vec<TopicSummary>,
            /// `trigger:*` tags by how often their memories were read.
            triggers: Vec<String>,
        }

        /// Seed 003's context injection block.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ContextBlock {
            /// Markdown to prepend to the prompt (empty when nothing is
            /// relevant).
            text: String,
            /// The facts from earlier sessions it lists.
            memories: Vec<Memory>,
            /// The latest weekly reflection, if any.
            reflection: Option<Memory>,
        }

        /// One operation the LLM review proposed, and the review rules' verdict.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::ReviewOp {
            /// Delete is always refused: the review has no delete power.
            op: ReviewAction,
            /// The memories it concerns.
            ids: Vec<String>,
            /// For a promotion or demotion: the layer proposed.
            target_layer: Option<Layer>,
            /// For an importance change: the value proposed.
            importance: Option<f32>,
            /// For a merge: the merged text.
            content: Option<String>,
            /// The reviewer's reason.
            reason: String,
            /// Passed the review rules.
            allowed: bool,
            /// Why it was refused, when it was.
            verdict: String,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ReviewReport {
            /// Every operation proposed, with its verdict.
            ops: Vec<ReviewOp>,
            /// Allowed share of the proposed operations.
            safety: f32,
            /// Operations carried out (none when dry or under 70% allowed).
            executed: u32,
            /// Whether this was a dry run.
            dry: bool,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::ReflectOutcome {
            /// The reflection written, if one was.
            memory: Option<Memory>,
            /// Why none was written (too soon, nothing new, LLM off).
            skipped: Option<String>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::RememberRequest {
            /// Namespace (default: the `X-Namespace` header, else `default`).
            #[cfg_attr(feature = "schema", schemars(pattern($crate::thresholds::NAMESPACE_PATTERN)))]
            namespace: String,
            /// What to remember (at most 8,192 characters).
            #[cfg_attr(feature = "schema", schemars(length(max = $crate::thresholds::MAX_CONTENT_CHARS), pattern(r"\S")))]
            content: String,
            /// `episodic`, `semantic` (default) or `procedural`.
            kind: Option<Kind>,
            /// Labels (at most 20); `trigger:<name>` marks what to recall
            /// before that action.
            #[cfg_attr(feature = "schema", schemars(length(max = $crate::thresholds::MAX_TAGS)))]
            tags: Vec<String>,
            /// Where it comes from (free text).
            source: Option<String>,
            /// The dialogue session it belongs to, if any.
            session_id: Option<String>,
            /// 0 to 1 (default 0.5).
            #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
            importance: Option<f32>,
            /// Free-form metadata (a JSON object).
            #[serde(default, with = "crate::model::json_text::option")]
            #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
            attributes: Option<String>,
            /// When it happened (milliseconds since the Unix epoch, UTC;
            /// default: now).
            event_time: Option<Millis>,
            /// Store it even if a duplicate exists.
            skip_dedup: bool,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::RememberOutcome {
            /// The memory stored or reinforced.
            memory: Memory,
            /// True for a new memory; false when it reinforced a duplicate.
            created: bool,
            /// Why it counted as a duplicate (`exact`, `semantic`, …).
            dedup_reason: Option<String>,
            /// The cosine similarity to that duplicate.
            similarity: Option<f32>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::Turn {
            /// Namespace (default: the `X-Namespace` header, else `default`).
            #[cfg_attr(feature = "schema", schemars(pattern($crate::thresholds::NAMESPACE_PATTERN)))]
            namespace: String,
            /// The dialogue session; a new one closes the namespace's open
            /// sessions, which are then consolidated in the background.
            #[cfg_attr(feature = "schema", schemars(length(max = $crate::thresholds::MAX_SESSION_CHARS), pattern(r"\S")))]
            session_id: String,
            /// Who spoke (`user`, `assistant`, …).
            role: String,
            /// What was said.
            #[cfg_attr(feature = "schema", schemars(length(max = $crate::thresholds::MAX_CONTENT_CHARS), pattern(r"\S")))]
            content: String,
            /// When it was said (milliseconds since the Unix epoch, UTC;
            /// default: now).
            event_time: Option<Millis>,
            /// Free-form metadata (a JSON object).
            #[serde(default, with = "crate::model::json_text::option")]
            #[cfg_attr(feature = "schema", schemars(with = "Option<serde_json::Map<String, serde_json::Value>>"))]
            attributes: Option<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::IngestOutcome {
            /// The turn stored.
            episode: Episode,
            /// Whether this turn started a session.
            new_session: bool,
            /// The session it closed — the one it follows, when this turn
            /// starts a session and that one is still pending — to be
            /// consolidated in the background (seed 003's trigger). Older
            /// pending sessions are left to the consolidation cycle.
            pending_sessions: Vec<String>,
            /// Entities linked to the turn.
            entities: u32,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::RecallRequest {
            /// What to look for, in the user's words.
            #[cfg_attr(feature = "schema", schemars(pattern(r"\S")))]
            query: String,
            /// Namespace (default: the `X-Namespace` header, else `default`; a
            /// project namespace also reads `default`).
            #[cfg_attr(feature = "schema", schemars(pattern($crate::thresholds::NAMESPACE_PATTERN)))]
            namespace: String,
            /// Only these layers (default: all).
            layers: Vec<Layer>,
            /// Only these kinds (default: all).
            kinds: Vec<Kind>,
            /// Rank memories carrying these tags higher (a soft boost, not a
            /// filter).
            tags: Vec<String>,
            /// Only what happened at or after this time (milliseconds since the
            /// Unix epoch, UTC).
            since: Option<Millis>,
            /// Only what happened before this time (milliseconds since the Unix
            /// epoch, UTC).
            until: Option<Millis>,
            /// Only memories from this source.
            source: Option<String>,
            /// Leave out hits scoring under this.
            min_score: Option<f32>,
            /// Hits to return (default 10, at most 200).
            #[cfg_attr(feature = "schema", schemars(range(max = $crate::thresholds::MAX_RECALL_LIMIT)))]
            limit: u32,
            /// Hits to skip (paging).
            offset: u32,
            /// Stop adding hits once their text would pass this many tokens.
            token_budget: Option<u32>,
            /// `score` (default), `recent` or `accessed`.
            sort: SortOrder,
            /// Do not reinforce what is returned (a look, not a use).
            dry: bool,
            /// Search dialogue turns too.
            include_episodes: bool,
            /// Search dialogue turns only.
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
            /// The search channel: `fts` (BM25), `vector` (cosine), `fact`,
            /// `entity`, …
            channel: Channel,
            /// The item's rank in that channel (1 is best).
            rank: u32,
            /// The channel's own score (BM25, cosine, …).
            raw_score: Score,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::Explanation {
            /// The channels that found the item, with its rank in each.
            channels: Vec<ChannelHit>,
            /// Reciprocal rank fusion over those ranks.
            rrf: Score,
            /// 0 to 1: BM25 and cosine blended (see the notes).
            relevance: Score,
            /// The memory's importance factor.
            importance: Score,
            /// 0 to 1: decay since it was last touched.
            recency: Score,
            /// The layer's weight (Core highest).
            layer_bonus: Score,
            /// How the score was put together, for a person.
            notes: Vec<String>,
        }

        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::Hit {
            /// Flattened: a hit reads `{"type": "memory", "id", "content", ..., "score", "explanation"}`.
            #[serde(flatten)]
            item: Item,
            /// The final score the hits are ordered by.
            score: Score,
            /// Why it ranked where it did.
            explanation: Explanation,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::RecallResponse {
            /// Best first.
            hits: Vec<Hit>,
            /// The channels that ran.
            channels_run: Vec<Channel>,
            /// What was degraded (e.g. vector search off after an embedder
            /// change).
            warnings: Vec<String>,
            /// Items the channels found before the page was cut.
            candidates: u32,
            /// The LLM's alternative phrasings, when expansion ran and was used.
            expansions: Vec<String>,
            /// Whether the LLM re-ordered the hits.
            reranked: bool,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        engine::MemoryPatch {
            /// New text (the earlier state is kept as a version).
            #[cfg_attr(feature = "schema", schemars(length(max = $crate::thresholds::MAX_CONTENT_CHARS), pattern(r"\S")))]
            content: Option<String>,
            /// New tags, replacing the old ones (lifecycle markers are kept).
            tags: Option<Vec<String>>,
            /// 0 to 1.
            #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
            importance: Option<f32>,
            /// `episodic`, `semantic` or `procedural`.
            kind: Option<Kind>,
            /// New metadata (a JSON object), replacing the old.
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
            /// The entity.
            entity: Entity,
            /// Memories that mention it, newest first.
            memories: Vec<Memory>,
            /// Turns that mention it, newest first.
            episodes: Vec<Episode>,
        }

        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::EnrichReport {
            /// Whether the pass ran (it needs an `accurate` NER strategy).
            ran: bool,
            /// Memories and turns re-read.
            examined: u32,
            /// Entity links added.
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
            /// Memories looked at.
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
