//! The enums and variants of the contract, listed once for the callback
//! macros (`define!` here, `impl_cross!` in the adapters). Each enum also
//! gets `ALL`, `as_str`, `FromStr` and `Display` with its WIT spelling.

use super::*;

/// Every enum of the contract.
#[macro_export]
macro_rules! enums {
    ($cb:ident) => { $cb! { enums
        /// Lifecycle layer (seed 004 §1). Every API write lands in `Buffer`.
        types::Layer { Buffer => "buffer", Working => "working", Core => "core" }
        /// What a memory is about; drives epoch decay speed (seed 004 §1).
        types::Kind { Episodic => "episodic", Semantic => "semantic", Procedural => "procedural" }
        /// Which store a search runs over.
        types::Target { Memories => "memories", Episodes => "episodes" }
        /// What an entity is.
        types::EntityType {
            Person => "person", Project => "project", Organization => "organization",
            Location => "location", Email => "email", Url => "url", Date => "date",
            Mention => "mention", Hashtag => "hashtag", Other => "other",
        }
        /// A NER strategy (seed 003): `fast` on the write paths, `accurate`
        /// for the nightly enrichment.
        types::NerStrategy { Fast => "fast", Accurate => "accurate" }
        /// What a line of the decision log, or a lifecycle action, records.
        types::Action {
            Reinforce => "reinforce", Delete => "delete", Restore => "restore",
            Confirm => "confirm", Supersede => "supersede", Promote => "promote",
            Demote => "demote", Evict => "evict", Merge => "merge",
            GateReject => "gate-reject", TriageKeep => "triage-keep", Distill => "distill",
            Fade => "fade", ConsolidateSession => "consolidate-session", Inject => "inject",
            Reflect => "reflect", Review => "review", Scheduled => "scheduled",
            Edit => "edit", Revert => "revert", Cleanup => "cleanup", Overlap => "overlap",
        }
        /// Which memories a listing reads.
        storage::ListState { Active => "active", Deleted => "deleted", All => "all" }
        /// When LLM steps run: never, when a heuristic is unsure, always.
        llm::LlmLevel { Off => "off", Auto => "auto", Full => "full" }
        /// Which pipeline step calls the LLM: routes the model (seed 004 §7)
        /// and labels the usage ledger.
        llm::LlmComponent {
            Gate => "gate", Triage => "triage", Extract => "extract", Reflection => "reflection",
            Merge => "merge", Reconcile => "reconcile", Distill => "distill", Review => "review",
            Expand => "expand", Rerank => "rerank", Naming => "naming", Ner => "ner",
            Compress => "compress",
        }
        /// A recall channel.
        engine::Channel { Fts => "fts", Vector => "vector", Entity => "entity", Fact => "fact" }
        /// The order of a page of hits.
        engine::SortOrder { Score => "score", Recent => "recent", Accessed => "accessed" }
        /// How recall turns channel evidence into relevance: `blend` weighs BM25
        /// and the cosine equally (for a small local embedder); `semantic` is
        /// seed 004 §4.3's cosine-led relevance (for a strong embedder).
        engine::Relevance { Blend => "blend", Semantic => "semantic" }
        /// What an imported line did.
        engine::ImportOutcome { Created => "created", Exists => "exists", Merged => "merged" }
        /// An operation the LLM review may propose (seed 004 §5's three
        /// powers, and `delete`, which the review rules always refuse).
        /// What an LLM budget counts over.
        engine::BudgetScope { Cycle => "cycle", Hour => "hour" }
        /// Whether every namespace also reads `default` (issue 77): `auto`
        /// while the store has no scoped API key, then not; `on`; `off`.
        engine::SharingMode { Auto => "auto", On => "on", Off => "off" }
        engine::ReviewAction {
            Promote => "promote", Demote => "demote", Adjust => "adjust", Merge => "merge",
            Delete => "delete",
        }
    } };
}

/// Every variant (tagged union) of the contract.
#[macro_export]
macro_rules! variants {
    ($cb:ident) => {
        $cb! { variants
            /// What a hit is.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[serde(tag = "type", rename_all = "snake_case")]
            engine::Item { Memory(Memory), Episode(Episode) }
            /// One line of an export (`mnemo export`), imported by `Engine::import`.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[serde(tag = "kind", rename_all = "snake_case")]
            engine::ImportItem {
                Memory(MemoryLine), Episode(EpisodeLine), Session(SessionLine),
                Entity(EntityLine), Fact(FactLine), Version(VersionLine),
            }
        }
    };
}

impl LlmComponent {
    /// The model tier this step's calls use (seed 004 §7: cheap steps on
    /// the gate tier, the review falls back to it).
    pub fn tier(self) -> (LlmTier, Option<LlmTier>) {
        match self {
            Self::Triage | Self::Gate | Self::Distill => (LlmTier::Gate, None),
            Self::Merge | Self::Reconcile => (LlmTier::Merge, None),
            Self::Review => (LlmTier::Review, Some(LlmTier::Gate)),
            Self::Expand => (LlmTier::Expand, None),
            Self::Extract => (LlmTier::Extract, None),
            Self::Rerank => (LlmTier::Rerank, None),
            Self::Naming => (LlmTier::Naming, None),
            Self::Ner => (LlmTier::Ner, None),
            Self::Reflection => (LlmTier::Reflection, None),
            Self::Compress => (LlmTier::Resume, None),
        }
    }
}

define! { enums
    /// A model tier: components that share an endpoint and model (seed 004 §7).
    host::LlmTier {
        Gate => "gate", Merge => "merge", Review => "review", Expand => "expand",
        Extract => "extract", Resume => "resume", Rerank => "rerank", Naming => "naming",
        Ner => "ner", Reflection => "reflection",
    }
}
