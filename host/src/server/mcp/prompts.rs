//! MCP prompts for the agent flows the seeds describe, and completions for
//! their arguments (the texts are the core's, `agent::prompts`; this file
//! reads what they show):
//!
//! - `start_session`: the resume block (seed 003's session recovery) with
//!   how to use memory during the session;
//! - `save_learned`: what to save before a session ends, and how (one
//!   self-contained fact per `remember_fact`, `correct_fact` for a change),
//!   with what was already saved lately so nothing is saved twice;
//! - `review_topic`: one topic's memories to tidy with the memory tools.
//!
//! Prompt arguments are strings (the protocol's rule). Completions offer
//! the store's namespaces (listed by a loose index scan, a seek per
//! namespace: no read of every row while the request waits) and a
//! namespace's topic ids.

use mnemo_core::agent_prompts;
use mnemo_core::model::ResumeRequest;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, Extensions, GetPromptResult,
    PromptMessage, Reference, Role,
};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData, prompt, prompt_router};
use serde::Deserialize;

use super::{MnemoMcp, flat, namespace, protocol_error};
use crate::server::error::ApiError;
use crate::server::routes::topic_map;

#[derive(Deserialize, JsonSchema)]
pub(super) struct StartArgs {
    /// The namespace (user or agent) to resume; default: the request's.
    namespace: Option<String>,
    /// Hours of recent changes to include (default: since the last session).
    hours: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SaveArgs {
    /// The namespace to save into; default: the request's.
    namespace: Option<String>,
    /// What happened in the session, if the client has it as text.
    notes: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct TopicArgs {
    /// The topic's id from the resume index (kb1, kb2, ...).
    topic: String,
    /// The topic's namespace; default: the request's.
    namespace: Option<String>,
}

#[prompt_router(router = "prompts", vis = "pub(super)")]
impl MnemoMcp {
    /// Start a session with what the agent remembers.
    #[prompt(
        title = "Start a session",
        description = "Resume: the Core memories, what changed lately, the topic index and the triggers, and how to use memory during the session."
    )]
    async fn start_session(
        &self,
        Parameters(a): Parameters<StartArgs>,
        ext: Extensions,
    ) -> Result<GetPromptResult, ErrorData> {
        let hours = match a.hours.as_deref().map(str::trim) {
            None | Some("") => 0,
            Some(h) => h.parse().map_err(|_| {
                ErrorData::invalid_params(
                    format!("`hours` must be a whole number, not `{h}`"),
                    None,
                )
            })?,
        };
        let req = ResumeRequest {
            namespace: namespace(a.namespace.as_deref(), &ext),
            hours,
            context: None,
        };
        let untouched = super::untouched(&ext);
        let block = flat(self.engine.read_as(untouched, move |m| m.resume(req)).await)
            .map_err(protocol_error)?;
        let text = agent_prompts::start_session(&block.text);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("Session start: what is remembered"),
        )
    }

    /// Save what a session taught.
    #[prompt(
        title = "Save what was learned",
        description = "Before a session ends: save each durable fact learned as one self-contained memory, correct what changed, skip what is already saved."
    )]
    async fn save_learned(
        &self,
        Parameters(a): Parameters<SaveArgs>,
        ext: Extensions,
    ) -> Result<GetPromptResult, ErrorData> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let scope = ns.clone();
        let recent = flat(
            self.engine
                .read(move |m| {
                    m.recent(
                        &scope,
                        agent_prompts::SAVED_LATELY_HOURS,
                        agent_prompts::SAVED_LATELY_LIMIT,
                    )
                })
                .await,
        )
        .map_err(protocol_error)?;
        let text = agent_prompts::save_learned(&ns, a.notes.as_deref(), &recent);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("Session end: save what was learned"),
        )
    }

    /// Review one topic's memories.
    #[prompt(
        title = "Review a topic",
        description = "One topic's memories, to merge duplicates, correct what is outdated and confirm what is durable with the memory tools."
    )]
    async fn review_topic(
        &self,
        Parameters(a): Parameters<TopicArgs>,
        ext: Extensions,
    ) -> Result<GetPromptResult, ErrorData> {
        let ns = namespace(a.namespace.as_deref(), &ext);
        let (scope, ids) = (ns.clone(), vec![a.topic.clone()]);
        let topics = flat(self.engine.read(move |m| m.topics(&scope, &ids)).await)
            .map_err(protocol_error)?;
        let Some(topic) = topics.into_iter().find(|t| t.id == a.topic) else {
            return Err(ErrorData::invalid_params(
                format!("no topic `{}` in namespace `{ns}`", a.topic),
                None,
            ));
        };
        let text = agent_prompts::review_topic(&ns, &topic);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(format!("Review of topic {}", topic.name)),
        )
    }
}

/// Completions for the arguments that name stored things: `namespace`
/// (the store's namespaces) and a topic id (`topic` of `review_topic`, `id`
/// of the topic resource template), by prefix.
pub(super) async fn complete(
    server: &MnemoMcp,
    req: CompleteRequestParams,
    ext: &Extensions,
) -> Result<CompleteResult, ErrorData> {
    let given = |name: &str| {
        req.context
            .as_ref()
            .and_then(|c| c.arguments.as_ref())
            .and_then(|a| a.get(name).cloned())
    };
    let is_topic = match &req.r#ref {
        Reference::Prompt(p) => p.name == "review_topic" && req.argument.name == "topic",
        Reference::Resource(r) => r.uri.ends_with("/topics/{id}") && req.argument.name == "id",
        _ => false,
    };
    let prefix = req.argument.value.clone();
    let candidates: Vec<String> = if req.argument.name == "namespace" {
        server
            .engine
            .read(|m| m.ports().store.namespaces())
            .await
            .and_then(|r| r.map_err(ApiError::storage))
            .map_err(protocol_error)?
    } else if is_topic {
        let ns = namespace(given("namespace").as_deref(), ext);
        let topics =
            flat(server.engine.read(move |m| m.topics(&ns, &[])).await).map_err(protocol_error)?;
        topic_map(topics).into_keys().collect()
    } else {
        Vec::new()
    };
    let mut values: Vec<String> = candidates
        .into_iter()
        .filter(|c| c.starts_with(&prefix))
        .collect();
    values.sort();
    let total = values.len() as u32;
    values.truncate(CompletionInfo::MAX_VALUES);
    let has_more = (values.len() as u32) < total;
    let info = CompletionInfo::with_pagination(values, Some(total), has_more)
        .map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}
