//! The records a host configures the core with: the bounds of its LLM
//! work (`guard/`, issue 42) — the policy, and the circuits and waiting
//! items it reads back — and who reads whose memories (`sharing.rs`,
//! issue 77).

/// Every record of the engine interface about LLM bounds, for a callback
/// macro (kept apart from `engine_records!` to keep each list short).
#[macro_export]
macro_rules! llm_records {
    ($cb:ident) => {
        $cb! { records
        /// One cap on the LLM work of background steps (issue 42): calls
        /// and tokens per engine call (`cycle`) or per clock hour, counted
        /// in all or per namespace.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::LlmBudget {
            /// `cycle`: one engine call (a consolidation cycle, a session
            /// trigger, a topic rebuild); `hour`: one UTC clock hour.
            scope: BudgetScope,
            /// Counted for each namespace on its own rather than in all.
            per_namespace: bool,
            /// Calls allowed (none: no cap).
            calls: Option<u32>,
            /// Input plus output tokens allowed (none: no cap).
            tokens: Option<u64>,
        }

        /// How the core bounds its LLM work: the circuit per LLM step, the
        /// backoff of an item whose step failed, and the budgets.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::LlmPolicy {
            /// Consecutive failures of a step that open its circuit.
            circuit_failures: u32,
            /// How long an open circuit skips its step before one probe.
            circuit_cooldown_ms: Millis,
            /// The wait after an item's first failure; it doubles with each.
            retry_base_ms: Millis,
            /// Failures after which an item is parked until retried by hand.
            retry_limit: u32,
            budgets: Vec<LlmBudget>,
        }

        /// One LLM step's circuit.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::CircuitState {
            /// The LLM step.
            component: LlmComponent,
            /// Open: the step is skipped (its items wait) until the
            /// cool-down passes and one probe call decides.
            open: bool,
            /// Consecutive failures (unusable answers or provider errors).
            failures: u32,
            /// When the circuit opened (milliseconds since the Unix epoch).
            opened_at: Option<Millis>,
            /// The last failure's error.
            last_error: Option<String>,
            /// When it happened (milliseconds since the Unix epoch).
            last_error_at: Option<Millis>,
        }

        /// An item whose LLM step failed: it waits for a retry in a later
        /// cycle, or (parked) for a retry by hand. Nothing about it is lost.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        engine::WaitingItem {
            /// The item's namespace.
            namespace: String,
            /// The step that failed on it.
            step: LlmComponent,
            /// A session id, a memory id, or a pair (`pair:<id>:<id>`).
            id: String,
            /// Failures so far (a success forgets the item).
            failures: u32,
            /// The last failure's error.
            last_error: String,
            /// When it last failed (milliseconds since the Unix epoch).
            failed_at: Millis,
            /// When a cycle may try it again; none when parked.
            retry_at: Option<Millis>,
        }

        /// Who reads whose memories (issue 77): whether every namespace also
        /// reads `default`, and the groups of namespaces the operator
        /// declared to share (each member reads the others, and only within
        /// one group may the lifecycle combine memories of two namespaces).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::Sharing {
            mode: SharingMode,
            groups: Vec<Vec<String>>,
        }

        /// The LLM steps' circuits and the items that wait.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::LlmState {
            /// Every step that has failed since its last success.
            circuits: Vec<CircuitState>,
            /// Items whose step failed, oldest failure first.
            waiting: Vec<WaitingItem>,
        }
        }
    };
}
