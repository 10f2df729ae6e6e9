//! The arguments of the routes and MCP tools that take no engine request
//! type: one struct per operation, read by the HTTP route (its body or
//! query string) and by the MCP tool alike, so both take the same names
//! and defaults. Each field is documented: the doc comments become the
//! tools' input-schema descriptions. The operations that take an engine
//! request whole (recall, remember, ingest, consolidate, add a fact, list)
//! use the core's type, whose schema the core's `schema` feature derives.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use crate::storage::DecisionFilter;

/// Defaults, one place for both surfaces: `recent`'s window (hours) and
/// size, `sessions`' and `decisions`' page, an enrichment run's items per
/// target (`mnemo enrich`'s default too).
const RECENT_HOURS: u32 = 24;
const RECENT_LIMIT: u32 = 50;
const SESSIONS_LIMIT: u32 = 100;
const DECISIONS_LIMIT: u32 = 100;
const ENRICH_LIMIT: u32 = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in the user's words.
    pub query: String,
    /// Hits to return (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

/// A memory by id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory's id.
    pub id: String,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectArgs {
    /// The memory to correct.
    pub id: String,
    /// The corrected statement; it supersedes the old one.
    pub content: String,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// The memory to move to the trash (restorable).
    pub id: String,
    /// Why it is forgotten (kept with it; default "forgotten via MCP").
    #[serde(default)]
    pub reason: Option<String>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The memory to change; its earlier state is kept as a version.
    pub id: String,
    /// New text.
    #[serde(default)]
    pub content: Option<String>,
    /// New tags (replacing the old ones).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// New importance, 0 to 1.
    #[serde(default)]
    pub importance: Option<f32>,
    /// New kind: `episodic`, `semantic` or `procedural`.
    #[serde(default)]
    pub kind: Option<mnemo_core::model::Kind>,
    /// New attributes (a JSON object, replacing the old one).
    #[serde(default)]
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertArgs {
    /// The memory.
    pub id: String,
    /// The version to put back (a number from `history`).
    pub version: u32,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

/// Only a namespace; for the operator's reads and runs, none covers every
/// namespace.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NsArgs {
    /// Namespace (default: the `X-Namespace` header, else `default`; for
    /// `memory_stats`, every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityArgs {
    /// The entity's name (a person, place, organisation, project).
    pub name: String,
    /// Linked memories to return (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// The user's message the answer is for.
    pub prompt: String,
    /// The current session: what was said in it is left out.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Facts to include (default 8).
    #[serde(default)]
    pub limit: u32,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResumeArgs {
    /// The Recent window in hours (default 24).
    pub hours: Option<u32>,
    /// What the session is about: Core and Recent keep what is relevant to it.
    pub context: Option<String>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicArgs {
    /// Topic ids from `resume` or `topics` (kb1, kb2, ...).
    pub ids: Vec<String>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RecentArgs {
    /// The window in hours (default 24).
    pub hours: Option<u32>,
    /// Memories to return (default 50).
    pub limit: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

impl RecentArgs {
    /// (hours, memories), defaulted.
    pub fn window(&self) -> (u32, u32) {
        (
            self.hours.unwrap_or(RECENT_HOURS),
            self.limit.unwrap_or(RECENT_LIMIT),
        )
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsArgs {
    /// Only the sessions not yet consolidated.
    pub pending: bool,
    /// Sessions to return (default 100).
    pub limit: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

impl SessionsArgs {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(SESSIONS_LIMIT)
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewArgs {
    /// Report the proposals and the rules' verdicts without applying them.
    pub dry: bool,
    /// Namespace (default: the `X-Namespace` header, else every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectArgs {
    /// Write one even if the last is less than six days old.
    pub force: bool,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FactsArgs {
    /// Facts with this entity as subject or object.
    pub entity: Option<String>,
    pub subject: Option<String>,
    pub predicate: Option<String>,
    pub object: Option<String>,
    /// Superseded versions too (needs `entity` or `subject`).
    pub history: bool,
    /// Facts to return (default: the engine's).
    pub limit: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphArgs {
    /// The entity at the centre.
    pub entity: String,
    /// Hops out from it: 1 or 2 (default 2).
    #[serde(default)]
    pub hops: Option<u32>,
    /// Namespace (default: the `X-Namespace` header, else `default`).
    #[serde(default)]
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionsArgs {
    /// Entries to return (default 100).
    pub limit: Option<u32>,
    /// Only decisions about this memory, episode or session.
    pub target: Option<String>,
    /// Only this action (`promote`, `merge`, `evict`, `inject`, `scheduled`, ...).
    pub action: Option<String>,
    /// Only entries at or after this time (Unix ms).
    pub since: Option<i64>,
    /// Namespace (default: the `X-Namespace` header, else every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
}

impl DecisionsArgs {
    /// The log's filter, in `namespace` (the argument or the header's).
    pub fn filter(self, namespace: Option<String>) -> DecisionFilter {
        DecisionFilter {
            limit: self.limit.unwrap_or(DECISIONS_LIMIT),
            target: self.target,
            action: self.action,
            namespace,
            since: self.since,
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UsageArgs {
    /// Latest calls to return (default 50).
    pub limit: Option<u32>,
}

impl UsageArgs {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(crate::ledger::USAGE_LIMIT)
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ExportArgs {
    /// Namespace (default: the `X-Namespace` header, else every namespace).
    #[schemars(pattern(mnemo_core::thresholds::NAMESPACE_PATTERN))]
    pub namespace: Option<String>,
    /// Include the embedding vectors.
    pub vectors: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportArgs {
    /// JSON lines as `export` writes them.
    pub jsonl: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnrichArgs {
    /// Items per target (memories, episodes) this run (default 50).
    pub limit: Option<u32>,
}

impl EnrichArgs {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(ENRICH_LIMIT)
    }
}
