//! MCP on the official Rust SDK (`rmcp`): one tool set, two transports.
//!
//! - **Streamable HTTP** at `/mcp` on `mnemo serve`, behind the API's own
//!   layers: the same bearer token, body limits and access log, and the
//!   same namespace rule (the tool's `namespace`, else the request's
//!   `X-Namespace` header, else `default`). It is stateless (the protocol's
//!   2026-07-28 form, JSON answers): any of several servers on one Postgres
//!   answers any request.
//! - **stdio** for `mnemo mcp`, which starts the server's engines (writer,
//!   readers, planner, embedding worker) and its scheduler, so an MCP-only
//!   user's memory consolidates and fades as a server's does; with
//!   `--listen ADDR` the HTTP API is served from those same engines.
//!
//! Each tool runs as the matching HTTP route does (`routes/`): reads on a
//! reader, writes on the writer, LLM steps planned then applied, the
//! session-switch trigger after a turn. Its input schema is derived from
//! its argument type (`args.rs`, and the engine's own request types with
//! the core's `schema` feature), its output schema from the type it
//! answers (`Json<T>`), its annotations say what it does to data. A
//! failure the caller should see — an unknown id, bad input, a refused
//! write — is a tool result with `isError` and the API's
//! `{"error": {"code", "message"}}`; nothing is swallowed and the server
//! keeps serving.
//!
//! Beside the tools: resources and their subscriptions (`resources.rs`,
//! `watch.rs`), prompts and completions (`prompts.rs`), the clients'
//! configuration (`clients.rs`), and the client's model as mnemo's LLM
//! (`llm/sampling.rs`, connected here for a stdio session).

mod admin_tools;
mod agent_tools;
mod clients;
mod memory_tools;
mod prompts;
pub mod resources;
mod watch;

use std::net::SocketAddr;

use anyhow::Context;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{
    CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, prompt_handler, tool_handler};
use serde::Serialize;

use super::engine::Engines;
use super::error::ApiError;
use crate::Config;

/// What an agent is told when it connects.
const INSTRUCTIONS: &str = "Long-term memory. Call `resume` at the start of a session and \
`context` with the user's message before answering; use `search_memory` for questions about \
the user or earlier sessions, `remember_fact` for durable facts, `ingest_turn` for each \
dialogue turn.";

/// The MCP server: the engines and the request's namespace rule, and
/// for a session (stdio) the resources it subscribed to.
#[derive(Clone)]
pub struct MnemoMcp {
    engine: Engines,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
    /// `resources/subscribe`'s resources; one watch runs while any is.
    subscribed: watch::Watched,
}

impl MnemoMcp {
    pub(super) fn new(engine: Engines) -> Self {
        Self {
            engine,
            tool_router: Self::memory_tools() + Self::agent_tools() + Self::admin_tools(),
            prompt_router: Self::prompts(),
            subscribed: Default::default(),
        }
    }
}

/// Every tool `mnemo mcp` offers, sorted by name, as `tools/list` answers
/// (the generated reference reads it).
pub fn tools() -> Vec<rmcp::model::Tool> {
    (MnemoMcp::memory_tools() + MnemoMcp::agent_tools() + MnemoMcp::admin_tools()).list_all()
}

/// Every prompt `mnemo mcp` offers (the generated reference reads it).
pub fn prompts() -> Vec<rmcp::model::Prompt> {
    MnemoMcp::prompts().list_all()
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for MnemoMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let ns = namespace(None, &context.extensions);
        resources::list(&self.engine, &ns).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&self.engine, &request.uri, untouched(&context.extensions))
            .await
            .map(ReadResourceResponse::Complete)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        prompts::complete(self, request, &context.extensions).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris = requested.resource_subscriptions.as_ref()?;
        let accepted: Vec<String> = uris
            .iter()
            .filter(|u| resources::Target::parse(u).is_ok())
            .cloned()
            .collect();
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(accepted)
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let watched = watch::Watched::default();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            if let Ok(target) = resources::Target::parse(uri) {
                watched.add(&self.engine, target).await;
            }
        }
        let sink = context.sink().clone();
        let notify = move |uri: String| {
            let sink = sink.clone();
            async move { sink.notify_resource_updated(uri).await.is_ok() }
        };
        watch::run(self.engine.clone(), watched, notify, context.cancelled()).await;
        Ok(())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let target = resources::Target::parse(&request.uri)?;
        self.subscribed.add(&self.engine, target).await;
        if self.subscribed.start() {
            let peer = context.peer.clone();
            let notify = move |uri: String| {
                let peer = peer.clone();
                async move {
                    peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                        .await
                        .is_ok()
                }
            };
            let (engine, watched) = (self.engine.clone(), self.subscribed.clone());
            tokio::spawn(watch::run(engine, watched, notify, std::future::pending()));
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .remove(&resources::Target::parse(&request.uri)?);
        Ok(())
    }
}

/// The namespace a tool acts in: its argument, else the HTTP request's
/// `X-Namespace` header (none over stdio), else `default`.
fn namespace(given: Option<&str>, ext: &rmcp::model::Extensions) -> String {
    if let Some(ns) = given.filter(|n| !n.is_empty()) {
        return ns.to_string();
    }
    header_namespace(ext).unwrap_or_else(|| "default".to_string())
}

/// The given namespace, else the header, else none: the operator's runs
/// (stats, consolidate, review) then cover every namespace, as over HTTP.
fn namespace_or_all(given: Option<String>, ext: &rmcp::model::Extensions) -> Option<String> {
    given
        .filter(|n| !n.is_empty())
        .or_else(|| header_namespace(ext))
}

/// Whether the key check marked the HTTP request untouched (its key may
/// not write the namespace: `access::UNTOUCHED`).
fn untouched(ext: &rmcp::model::Extensions) -> bool {
    ext.get::<axum::http::request::Parts>()
        .is_some_and(|p| super::access::untouched(&p.headers))
}

fn header_namespace(ext: &rmcp::model::Extensions) -> Option<String> {
    ext.get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("x-namespace"))
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

/// A tool's answer: the value as structured content (numbers printed as
/// stored, as the API prints them) and the same JSON as a text block for
/// clients older than structured results. A tool returning
/// `Result<Json<T>, Failure>` declares `T`'s schema as its `outputSchema`
/// (the `#[tool]` macro reads the return type), so the schema a client
/// validates against is the type the tool serialises.
pub(super) struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + 'static> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let v = super::json::tidied(self.0).map_err(|e| {
            ErrorData::internal_error(format!("cannot encode the answer: {e}"), None)
        })?;
        Ok(CallToolResult::structured(v).into())
    }
}

/// A failure the caller should see (an unknown id, bad input, a refused
/// write): a tool result with `isError` whose text is the API's
/// `{"error": {"code", "message"}}`, so the model reads what went wrong.
/// It carries no `structuredContent`: clients check structured content
/// against the tool's outputSchema, which describes the success.
pub(super) struct Failure(ApiError);

impl IntoCallToolResult for Failure {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let e = self.0;
        let body = serde_json::json!({ "error": { "code": e.code, "message": e.message } });
        Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(body.to_string())]).into())
    }
}

/// What every tool returns: its typed value, or a failure as a tool error.
pub(super) type Answer<T> = Result<Json<T>, Failure>;

/// A route-shaped result as a tool's answer.
fn answer<T>(result: Result<T, ApiError>) -> Answer<T> {
    result.map(Json).map_err(Failure)
}

/// The API's error as a protocol error (a prompt or resource request, not
/// a tool call): the caller's mistake is `invalid params`, the rest
/// `internal`.
fn protocol_error(e: ApiError) -> ErrorData {
    if e.status.is_client_error() {
        ErrorData::invalid_params(e.message, None)
    } else {
        ErrorData::internal_error(e.message, None)
    }
}

/// An engine job's two layers of failure (the engine stopped; the call
/// failed) as one.
fn flat<T, E: Into<ApiError>>(r: Result<Result<T, E>, ApiError>) -> Result<T, ApiError> {
    r.and_then(|inner| inner.map_err(Into::into))
}

/// `/mcp`: the tools over streamable HTTP, stateless, answering JSON.
/// Without an API key only loopback `Host`s are accepted (DNS-rebinding
/// protection for a server on 127.0.0.1); with one, the bearer token
/// already guards every request and any host name may reach it.
pub(super) fn http_service(
    engine: Engines,
    guarded: bool,
) -> StreamableHttpService<MnemoMcp, NeverSessionManager> {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(super::MAX_BODY_BYTES);
    if guarded {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(MnemoMcp::new(engine.clone())),
        Default::default(),
        config,
    )
}

#[derive(clap::Args)]
pub struct McpArgs {
    /// Also serve the HTTP API (and `/mcp`) on this address, from the same
    /// engines: one writer for both, no second process on the database.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Print the configuration that registers this mnemo with an MCP
    /// client (with this binary's absolute path) and exit.
    #[arg(long, value_enum, value_name = "CLIENT")]
    print_config: Option<clients::McpClient>,
    /// With --print-config: reach a running `mnemo serve` at this `/mcp`
    /// URL instead of starting `mnemo mcp` (MNEMO_API_KEY, if set, goes in
    /// the snippet as the bearer key).
    #[arg(long, value_name = "URL", requires = "print_config")]
    http: Option<String>,
}

/// `mnemo mcp`: the tools over stdio, on the server's engines and
/// scheduler; with `--listen`, the HTTP API (and `/mcp`) from the same ones.
pub fn serve_stdio(config: Config, args: McpArgs) -> anyhow::Result<()> {
    if let Some(client) = args.print_config {
        let bin = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .context("finding this binary's path")?;
        let env: Vec<(String, String)> = clients::PASSED_ON
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect();
        let transport = match &args.http {
            Some(url) => clients::Transport::Http {
                url,
                key: config.api_key.as_deref(),
            },
            None => clients::Transport::Stdio {
                bin: &bin,
                env: &env,
            },
        };
        print!("{}", clients::snippet(client, &transport));
        return Ok(());
    }
    let listen = args.listen;
    if listen.is_some_and(|a| !a.ip().is_loopback()) && config.api_key.is_none() {
        tracing::warn!(
            "serving HTTP off loopback without MNEMO_API_KEY: anyone who can reach it can read your memory"
        );
    }
    let api_key = config.api_key.clone();
    let engine = super::start(config)?;
    let app = listen.map(|_| super::routes_on(engine.clone(), api_key));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        if let (Some(addr), Some(app)) = (listen, app) {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            eprintln!("mnemo listening on http://{}", listener.local_addr()?);
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(error = %e, "the HTTP server stopped");
                }
            });
        }
        let service = MnemoMcp::new(engine)
            .serve(rmcp::transport::stdio())
            .await
            .context("starting MCP on stdio")?;
        // The client's model serves the LLM steps if it declared sampling
        // and `MNEMO_LLM_PROVIDER=sampling` asks for it (llm/sampling.rs).
        crate::llm::sampling::connect(service.peer().clone(), tokio::runtime::Handle::current());
        let served = service.waiting().await;
        crate::llm::sampling::disconnect();
        served.context("serving MCP on stdio")?;
        anyhow::Ok(())
    })?;
    // stdin is closed: the client went away. The engines' threads end with
    // the process; the writer has committed every reply it sent.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
