//! The agent and lifecycle tools: context for a prompt, resume, topics and
//! a topic's memories, triggers, recent changes, dialogue turns and
//! sessions, facts and their graph, consolidation, review, reflection.
//! Each runs as its HTTP route does (the route is named on each).

use mnemo_core::model::*;
use rmcp::handler::server::wrapper::Parameters;
use std::collections::BTreeMap;

use rmcp::model::Extensions;
use rmcp::{tool, tool_router};

use super::{Failure, Json, MnemoMcp, answer, flat, namespace, namespace_or_all, untouched};
use crate::server::args::*;
use crate::server::error::ApiError;
use crate::server::routes::{
    Facts, Memories, Sessions, TopicMemories, Topics, Triggers, topic_map,
};

/// Hops of `fact_graph` by default (as `GET /facts/graph`).
const GRAPH_HOPS: u32 = 2;

fn invalid(message: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "invalid_input",
        message,
    )
}

#[tool_router(router = agent_tools, vis = "pub(super)")]
impl MnemoMcp {
    /// `POST /context`.
    #[tool(
        description = "The block of relevant earlier facts to read before answering a prompt (context injection). Call it with each user message.",
        title = "Context for a prompt",
        annotations(
            title = "Context for a prompt",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn context(
        &self,
        Parameters(a): Parameters<ContextArgs>,
        ext: Extensions,
    ) -> Result<Json<ContextBlock>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = self
            .engine
            .read_as(untouched(&ext), move |m| {
                m.context(&ns, &a.prompt, a.session_id.as_deref(), a.limit)
            })
            .await;
        answer(flat(out))
    }

    /// `GET /resume`.
    #[tool(
        description = "Session-recovery context: Core memories, what changed recently, the topic index and the triggers. Call it at the start of a session.",
        title = "Resume a session",
        annotations(
            title = "Resume a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn resume(
        &self,
        Parameters(a): Parameters<ResumeArgs>,
        ext: Extensions,
    ) -> Result<Json<ResumeBlock>, Failure> {
        let req = ResumeRequest {
            namespace: namespace(a.namespace.as_deref(), &ext),
            hours: a.hours.unwrap_or(0),
            context: a.context,
        };
        answer(flat(
            self.engine
                .read_as(untouched(&ext), move |m| m.resume(req))
                .await,
        ))
    }

    /// `GET /topics`.
    #[tool(
        description = "The topic tree: each topic's id, name, parent and children.",
        title = "The topic tree",
        annotations(
            title = "The topic tree",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn topics(
        &self,
        Parameters(a): Parameters<NsArgs>,
        ext: Extensions,
    ) -> Result<Json<Topics>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = flat(self.engine.read(move |m| m.topics(&ns, &[])).await);
        answer(out.map(Topics::from))
    }

    /// `POST /topic`.
    #[tool(
        description = "Drill into topics of the resume index (kb1, kb2, ...): each one's name, memories, parent and children.",
        title = "Topics' memories",
        annotations(
            title = "Topics' memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn topic(
        &self,
        Parameters(a): Parameters<TopicArgs>,
        ext: Extensions,
    ) -> Result<Json<BTreeMap<String, TopicMemories>>, Failure> {
        if a.ids.is_empty() {
            return answer(Err(invalid("`ids` must name at least one topic")));
        }
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = flat(self.engine.read(move |m| m.topics(&ns, &a.ids)).await);
        answer(out.map(topic_map))
    }

    /// `GET /triggers`.
    #[tool(
        description = "The triggers (actions with memories tagged `trigger:<name>` to recall before them) and how often each was used.",
        title = "Triggers",
        annotations(title = "Triggers", read_only_hint = true, open_world_hint = false)
    )]
    async fn triggers(
        &self,
        Parameters(a): Parameters<NsArgs>,
        ext: Extensions,
    ) -> Result<Json<Triggers>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let out = flat(self.engine.read(move |m| m.triggers(&ns)).await);
        answer(out.map(Triggers::from))
    }

    /// `GET /recent`.
    #[tool(
        description = "Memories created or changed in the last hours, newest first.",
        title = "Recent changes",
        annotations(
            title = "Recent changes",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn recent(
        &self,
        Parameters(a): Parameters<RecentArgs>,
        ext: Extensions,
    ) -> Result<Json<Memories>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let (hours, limit) = a.window();
        let out = flat(self.engine.read(move |m| m.recent(&ns, hours, limit)).await);
        answer(out.map(|memories| Memories { memories }))
    }

    /// `POST /episodes`.
    #[tool(
        description = "Store one dialogue turn (no LLM call, no waiting for embeddings). A turn of a new session consolidates the sessions it left open, after the reply.",
        title = "Store a dialogue turn",
        annotations(
            title = "Store a dialogue turn",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn ingest_turn(
        &self,
        Parameters(mut turn): Parameters<Turn>,
        ext: Extensions,
    ) -> Result<Json<IngestOutcome>, Failure> {
        turn.namespace = namespace(Some(&turn.namespace), &ext);
        let out = flat(
            self.engine
                .run_in(turn.namespace.clone(), move |m| m.ingest(turn))
                .await,
        );
        if let Ok(o) = &out
            && !o.pending_sessions.is_empty()
        {
            self.engine
                .consolidate_sessions_later(&o.episode.namespace, &o.pending_sessions);
        }
        answer(out)
    }

    /// `GET /sessions`.
    #[tool(
        description = "Dialogue sessions, most recently active first, and whether each is consolidated.",
        title = "Dialogue sessions",
        annotations(
            title = "Dialogue sessions",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn sessions(
        &self,
        Parameters(a): Parameters<SessionsArgs>,
        ext: Extensions,
    ) -> Result<Json<Sessions>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let (pending, limit) = (a.pending, a.limit());
        let out = self
            .engine
            .read(move |m| m.ports().store.sessions(&ns, pending, limit))
            .await
            .and_then(|r| r.map_err(ApiError::storage));
        answer(out.map(|sessions| Sessions { sessions }))
    }

    /// `POST /consolidate`.
    #[tool(
        description = "Run one lifecycle cycle now: promotion through Buffer, Working and Core, merges, decay, session distillation. `dry` reports what it would do and writes nothing.",
        title = "Run a lifecycle cycle",
        annotations(
            title = "Run a lifecycle cycle",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn consolidate(
        &self,
        Parameters(mut req): Parameters<ConsolidateRequest>,
        ext: Extensions,
    ) -> Result<Json<ConsolidateReport>, Failure> {
        req.namespace = namespace_or_all(req.namespace.take(), &ext);
        let out = if req.dry {
            self.engine
                .dry(move |m| m.consolidate_as_configured(req).map_err(ApiError::from))
                .await
        } else {
            self.engine
                .run_planned(req.namespace.clone(), move |m, _| {
                    m.consolidate_as_configured(req.clone())
                        .map_err(ApiError::from)
                })
                .await
        };
        answer(flat(out))
    }

    /// `POST /review`.
    #[tool(
        description = "The LLM review of Working and Core under its rules (`dry`: the proposals and verdicts only). Needs an LLM.",
        title = "Review memory with the LLM",
        annotations(
            title = "Review memory with the LLM",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn review(
        &self,
        Parameters(a): Parameters<ReviewArgs>,
        ext: Extensions,
    ) -> Result<Json<ReviewReport>, Failure> {
        let ns = namespace_or_all(a.namespace, &ext);
        let dry = a.dry;
        let review =
            move |m: &mut crate::Mnemo| m.review(ns.as_deref(), dry).map_err(ApiError::from);
        let out = if dry {
            self.engine.dry(review).await
        } else {
            self.engine.run_planned(None, move |m, _| review(m)).await
        };
        answer(flat(out))
    }

    /// `POST /reflect`.
    #[tool(
        description = "Write the weekly reflection now (`force`: even if the last is less than six days old).",
        title = "Write the reflection",
        annotations(
            title = "Write the reflection",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn reflect(
        &self,
        Parameters(a): Parameters<ReflectArgs>,
        ext: Extensions,
    ) -> Result<Json<ReflectOutcome>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let force = a.force;
        let out = self
            .engine
            .run_planned(Some(ns.clone()), move |m, _| m.reflect(&ns, force))
            .await;
        answer(flat(out))
    }

    /// `POST /facts`.
    #[tool(
        description = "Add a subject–predicate–object fact. `exclusive`: the predicate holds one value, and the subject's older ones are superseded (kept as history).",
        title = "Add a fact",
        annotations(
            title = "Add a fact",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_fact(
        &self,
        Parameters(mut input): Parameters<FactInput>,
        ext: Extensions,
    ) -> Result<Json<FactOutcome>, Failure> {
        input.namespace = namespace(Some(&input.namespace), &ext);
        answer(flat(
            self.engine
                .run_in(input.namespace.clone(), move |m| m.add_fact(input))
                .await,
        ))
    }

    /// `GET /facts` (and `GET /facts/history` with `history`).
    #[tool(
        description = "Current facts about an entity (as subject or object), or by subject, predicate and object; `history` adds the superseded ones.",
        title = "Query facts",
        annotations(title = "Query facts", read_only_hint = true, open_world_hint = false)
    )]
    async fn query_facts(
        &self,
        Parameters(a): Parameters<FactsArgs>,
        ext: Extensions,
    ) -> Result<Json<Facts>, Failure> {
        if a.history && a.subject.is_none() && a.entity.is_none() {
            return answer(Err(invalid("history needs `subject` or `entity`")));
        }
        let q = FactQuery {
            namespaces: vec![namespace(a.namespace.as_deref(), &ext)],
            subject: a.subject,
            predicate: a.predicate,
            object: a.object,
            entity: a.entity,
            include_invalid: a.history,
            limit: a.limit.unwrap_or(0),
            ..Default::default()
        };
        let out = flat(self.engine.read(move |m| m.query_facts(q)).await);
        answer(out.map(|facts| Facts { facts }))
    }

    /// `GET /facts/graph`.
    #[tool(
        description = "The facts within one or two hops of an entity.",
        title = "An entity's fact graph",
        annotations(
            title = "An entity's fact graph",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn fact_graph(
        &self,
        Parameters(a): Parameters<GraphArgs>,
        ext: Extensions,
    ) -> Result<Json<Facts>, Failure> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let hops = a.hops.unwrap_or(GRAPH_HOPS);
        let out = flat(
            self.engine
                .read(move |m| m.fact_graph(&ns, &a.entity, hops))
                .await,
        );
        answer(out.map(|facts| Facts { facts }))
    }
}
