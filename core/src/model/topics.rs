//! The record of a topic rebuild split in two (`lifecycle/topics/`): the
//! plan, computed where no write waits (a reader), and its application, a
//! short write. A host with a topic worker runs them apart, so no
//! namespace's writes wait for a clustering.

/// Every record of the engine interface about topic plans, for a callback
/// macro (kept apart from `engine_records!` to keep each list short).
#[macro_export]
macro_rules! topic_records {
    ($cb:ident) => {
        $cb! { records
        /// A namespace's topic tree computed by `plan_topics`, not yet stored.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        engine::TopicPlan {
            /// The namespace whose tree it is.
            namespace: String,
            /// When its memories were read: changes after it wait for the
            /// next plan.
            at: Millis,
            /// The tree in its stored form (JSON), every leaf named by the
            /// name it kept or by its words.
            tree: String,
            /// The leaves that did not keep a name: id and sample texts,
            /// for the LLM's naming.
            unnamed: Vec<(String, Vec<String>)>,
        }
        }
    };
}
