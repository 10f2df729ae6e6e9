//! MCP prompts for the agent flows the seeds describe, and completions for
//! their arguments:
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

use mnemo_core::model::{Memory, ResumeRequest};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, Extensions, GetPromptResult,
    PromptMessage, Reference, Role,
};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData, prompt, prompt_router};
use serde::Deserialize;

use super::{MnemoMcp, flat, namespace};
use crate::server::error::ApiError;
use crate::server::routes::topic_map;

/// Hours of recent changes `save_learned` shows (what this session saved).
const SAVED_LATELY_HOURS: u32 = 24;
/// At most this many of them.
const SAVED_LATELY_LIMIT: u32 = 50;

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

fn prompt_error(e: ApiError) -> ErrorData {
    if e.status.is_client_error() {
        ErrorData::invalid_params(e.message, None)
    } else {
        ErrorData::internal_error(e.message, None)
    }
}

fn bullet(m: &Memory) -> String {
    format!("- [{}] {}", m.id, m.content)
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
        let block = flat(self.engine.read(move |m| m.resume(req)).await).map_err(prompt_error)?;
        let text = format!(
            "You are continuing to work with someone you have worked with before. This is what you remember:\n\n{}\n\n\
             During this session: call `context` with each of their messages before answering and use what it returns; \
             call `search_memory` when they refer to something earlier; save each durable fact you learn \
             (a preference, a plan, a person, a decision) with `remember_fact`, and use `correct_fact` when one changes. \
             Read a topic of the index above with `topic` or the resource mnemo://namespaces/{{namespace}}/topics/{{id}}.",
            block.text.trim()
        );
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
                .read(move |m| m.recent(&scope, SAVED_LATELY_HOURS, SAVED_LATELY_LIMIT))
                .await,
        )
        .map_err(prompt_error)?;
        let mut text = String::from(
            "Before this session ends, save what you learned about the user and their work.\n\n\
             - Save each durable fact (a preference, a plan, a person and how they relate, a decision, a date) \
             with `remember_fact`: one self-contained sentence each, naming who it is about (\"The user's sister Ana lives in Lisbon\", not \"she moved there\").\n\
             - When something you remember has changed, find it with `search_memory` and replace it with `correct_fact`.\n\
             - Do not save small talk, what only mattered within this session, or what is already saved below.\n",
        );
        if let Some(notes) = a.notes.as_deref().filter(|n| !n.trim().is_empty()) {
            text.push_str(&format!("\nThe session:\n\n{}\n", notes.trim()));
        }
        if recent.is_empty() {
            text.push_str(&format!(
                "\nNothing was saved in namespace `{ns}` in the last {SAVED_LATELY_HOURS} hours.\n"
            ));
        } else {
            text.push_str(&format!(
                "\nAlready saved in namespace `{ns}` in the last {SAVED_LATELY_HOURS} hours:\n\n"
            ));
            for m in &recent {
                text.push_str(&bullet(m));
                text.push('\n');
            }
        }
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
        let topics =
            flat(self.engine.read(move |m| m.topics(&scope, &ids)).await).map_err(prompt_error)?;
        let Some(topic) = topics.into_iter().find(|t| t.id == a.topic) else {
            return Err(ErrorData::invalid_params(
                format!("no topic `{}` in namespace `{ns}`", a.topic),
                None,
            ));
        };
        let mut text = format!(
            "Review the memories of the topic \"{}\" ({}) in namespace `{ns}`:\n\n",
            topic.name, topic.id
        );
        for m in &topic.memories {
            text.push_str(&format!(
                "{} (layer {}, importance {:.2})\n",
                bullet(m),
                m.layer,
                m.importance
            ));
        }
        text.push_str(
            "\nFor each change, say why, then make it:\n\
             - two memories that say the same thing: keep the better one (`edit_memory` to complete it) and `forget` the other with the reason;\n\
             - a memory that is no longer true: `correct_fact` with what is true now;\n\
             - a memory that will stay true and matters: `confirm_fact`.\n\
             Everything you change stays in its history and the trash, and can be restored.",
        );
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
            .map_err(prompt_error)?
    } else if is_topic {
        let ns = namespace(given("namespace").as_deref(), ext);
        let topics =
            flat(server.engine.read(move |m| m.topics(&ns, &[])).await).map_err(prompt_error)?;
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
