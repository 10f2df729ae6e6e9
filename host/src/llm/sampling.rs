//! The agent's own model as mnemo's LLM: with `MNEMO_LLM_PROVIDER=sampling`
//! every LLM step (consolidation, gate, merge, review, reflection, naming,
//! expansion) is sent to the MCP client of `mnemo mcp` as
//! `sampling/createMessage`, so a user whose agent already has a model
//! needs no second key.
//!
//! Opt-in, and only where the protocol allows it: a stdio session whose
//! client declared `sampling` at `initialize` (the 2026-07-28 revision has
//! no server-to-client requests). Without such a client, or when it
//! refuses, errs or does not answer within [`TIMEOUT`], the call fails with
//! a typed error like any provider's: the core's bounds (backoff, circuit,
//! budgets) keep the work pending and retry it later; nothing is lost.
//!
//! A step that needs structured output (`ToolSpec`) is asked for the JSON
//! object alone, with the schema in the system prompt: sampling's own tool
//! use needs a capability few clients declare, and the core parses and
//! checks the JSON either way.
//!
//! rmcp marks sampling deprecated (SEP-2577 drops it after 2025-11-25);
//! the sessions that still negotiate it are the ones this module serves.
#![allow(deprecated)]

use std::sync::Mutex;
use std::time::Duration;

use mnemo_core::CoreError;
use mnemo_core::model::{ChatRequest, ChatResponse};
use rmcp::model::{CreateMessageRequestParams, Role, SamplingMessage};
use rmcp::service::{Peer, RoleServer};

/// The provider name that routes a tier's calls to the MCP client.
pub const PROVIDER: &str = "sampling";
/// The endpoint URL a sampling endpoint shows (it has none).
pub const URL: &str = "mcp:sampling";
/// How long a client may take to answer: it may ask its user first.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The connected client, if any, and the runtime its transport runs on.
struct Client {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
}

/// One `mnemo mcp` process serves one stdio client.
static CLIENT: Mutex<Option<Client>> = Mutex::new(None);

fn client() -> std::sync::MutexGuard<'static, Option<Client>> {
    CLIENT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The stdio client connected (its `initialize` is done).
pub fn connect(peer: Peer<RoleServer>, runtime: tokio::runtime::Handle) {
    *client() = Some(Client { peer, runtime });
}

/// The client went away: calls fail (and wait) until another connects.
pub fn disconnect() {
    *client() = None;
}

/// What the client is asked: the system messages as its system prompt,
/// the rest as the conversation.
fn request(req: &ChatRequest, max_tokens: u32) -> CreateMessageRequestParams {
    let mut system: Vec<String> = Vec::new();
    let mut messages = Vec::new();
    for m in &req.messages {
        match m.role.as_str() {
            "system" => system.push(m.content.clone()),
            "assistant" => messages.push(SamplingMessage::assistant_text(m.content.clone())),
            _ => messages.push(SamplingMessage::user_text(m.content.clone())),
        }
    }
    if let Some(tool) = &req.tool {
        system.push(format!(
            "Answer with one JSON object and nothing else: the arguments of `{}` ({}), matching this JSON Schema:\n{}",
            tool.name, tool.description, tool.parameters
        ));
    } else if req.json {
        system.push("Answer with one JSON object and nothing else.".into());
    }
    let mut params = CreateMessageRequestParams::new(messages, max_tokens);
    if !system.is_empty() {
        params = params.with_system_prompt(system.join("\n\n"));
    }
    params
}

/// One completion by the client's model; on failure, the core's error and
/// the ledger's outcome.
pub(crate) fn complete(
    req: &ChatRequest,
    max_tokens: u32,
) -> Result<ChatResponse, (CoreError, String)> {
    let unavailable = |m: String| {
        (
            CoreError::Llm(format!("sampling: {m}")),
            "unavailable".into(),
        )
    };
    let (peer, runtime) = match client().as_ref() {
        Some(c) => (c.peer.clone(), c.runtime.clone()),
        None => {
            return Err(unavailable(
                "no MCP client is connected to `mnemo mcp` (sampling needs a stdio client)".into(),
            ));
        }
    };
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.sampling.is_some());
    if !declared {
        return Err(unavailable(
            "the MCP client did not declare `sampling` at initialize".into(),
        ));
    }
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(unavailable(
            "an LLM step ran on an async thread; sampling waits on engine threads only".into(),
        ));
    }
    let params = request(req, max_tokens);
    let answer = runtime
        .block_on(async { tokio::time::timeout(TIMEOUT, peer.create_message(params)).await });
    let result = match answer {
        Err(_) => {
            return Err((
                CoreError::Llm(format!(
                    "sampling: the client did not answer within {} s",
                    TIMEOUT.as_secs()
                )),
                "timeout".into(),
            ));
        }
        Ok(Err(e)) => {
            return Err((
                CoreError::Llm(format!("sampling: the client refused: {e}")),
                "refused".into(),
            ));
        }
        Ok(Ok(r)) => r,
    };
    if result.message.role != Role::Assistant {
        return Err((
            crate::llm::malformed("the sampled message is not the assistant's"),
            "malformed".into(),
        ));
    }
    let text: String = result
        .message
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("");
    if text.trim().is_empty() {
        return Err((
            crate::llm::malformed("the sampled message has no text"),
            "malformed".into(),
        ));
    }
    Ok(ChatResponse {
        content: text,
        model: result.model,
        input_tokens: 0,
        output_tokens: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::model::{ChatMessage, LlmComponent, ToolSpec};

    #[test]
    fn system_messages_and_the_schema_become_the_system_prompt() {
        let req = ChatRequest {
            component: LlmComponent::Gate,
            messages: vec![
                ChatMessage {
                    role: "system".into(),
                    content: "You judge memories.".into(),
                },
                ChatMessage {
                    role: "user".into(),
                    content: "Keep this?".into(),
                },
            ],
            json: true,
            max_tokens: None,
            tool: Some(ToolSpec {
                name: "verdict".into(),
                description: "the verdict".into(),
                parameters: r#"{"type":"object"}"#.into(),
            }),
        };
        let p = request(&req, 64);
        assert_eq!(p.max_tokens, 64);
        assert_eq!(p.messages.len(), 1);
        let system = p.system_prompt.unwrap();
        assert!(system.starts_with("You judge memories."), "{system}");
        assert!(system.contains("`verdict`") && system.contains(r#"{"type":"object"}"#));
    }

    #[test]
    fn without_a_client_a_call_fails_and_says_why() {
        disconnect();
        let req = ChatRequest {
            component: LlmComponent::Gate,
            messages: vec![],
            json: false,
            max_tokens: None,
            tool: None,
        };
        let (e, outcome) = complete(&req, 16).unwrap_err();
        assert_eq!(outcome, "unavailable");
        assert!(e.to_string().contains("no MCP client"), "{e}");
    }
}
