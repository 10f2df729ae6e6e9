//! ABI `mnemo:llm@0.1.0` (`wit/llm/since_v0.1.0/`): its bindings, the
//! host's side of `transport` (in `sandbox.rs`, through [`Transport`]), and
//! the conversions between the bindings and the host's types. A later ABI
//! adds a file beside this one; a released one is never edited.

use mnemo_core::model::{ChatRequest, ChatResponse};
use wasmtime::Store;
use wasmtime::component::{Component, HasSelf, Linker};

use super::sandbox::{LlmState, Refusal};
use super::{Auth, Capability, Embedded, Info, ProviderError};
use crate::http::Inbound;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/llm/since_v0.1.0",
        world: "llm-provider",
    });
}

use bindings::mnemo::llm::{transport as x, types as t};
pub use bindings::{LlmProvider as Instance, LlmProviderPre};

pub type Pre = LlmProviderPre<LlmState>;

impl t::Host for LlmState {}

impl x::Host for LlmState {
    fn send(&mut self, r: x::HttpRequest) -> Result<x::HttpResponse, x::HttpError> {
        match self.send(&r.method, &r.url, r.headers, &r.body) {
            Ok(Inbound {
                status,
                headers,
                body,
            }) => Ok(x::HttpResponse {
                status,
                headers,
                body,
            }),
            Err(Refusal::Denied(m)) => Err(x::HttpError::Denied(m)),
            Err(Refusal::Timeout(m)) => Err(x::HttpError::Timeout(m)),
            Err(Refusal::Unreachable(m)) => Err(x::HttpError::Unreachable(m)),
            Err(Refusal::TooLarge(n)) => Err(x::HttpError::TooLarge(n)),
            Err(Refusal::Invalid(m)) => Err(x::HttpError::Invalid(m)),
        }
    }
}

/// Links the WASI that grants nothing and this ABI's `transport`.
pub fn pre(engine: &wasmtime::Engine, component: &Component) -> anyhow::Result<Pre> {
    let mut linker: Linker<LlmState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    Instance::add_to_linker::<LlmState, HasSelf<LlmState>>(&mut linker, |s| s)?;
    Ok(LlmProviderPre::new(linker.instantiate_pre(component)?)?)
}

pub fn info(p: &Instance, store: &mut Store<LlmState>) -> wasmtime::Result<Info> {
    let i = p.mnemo_llm_provider().call_info(store)?;
    Ok(Info {
        name: i.name,
        version: i.version,
        auth: match i.auth {
            t::AuthScheme::Bearer => Auth::Bearer,
            t::AuthScheme::Header(h) => Auth::Header(h),
            t::AuthScheme::None => Auth::None,
        },
        capabilities: i
            .capabilities
            .into_iter()
            .map(|c| match c {
                t::Capability::Chat => Capability::Chat,
                t::Capability::Embed => Capability::Embed,
            })
            .collect(),
    })
}

fn error(e: t::Error) -> ProviderError {
    match e {
        t::Error::RateLimited(ms) => ProviderError::RateLimited(ms),
        t::Error::Unavailable(m) => ProviderError::Unavailable(m),
        t::Error::InvalidRequest(m) => ProviderError::InvalidRequest(m),
        t::Error::MalformedResponse(m) => ProviderError::MalformedResponse(m),
        t::Error::Unsupported(m) => ProviderError::Unsupported(m),
    }
}

pub fn chat(
    p: &Instance,
    store: &mut Store<LlmState>,
    base_url: &str,
    model: &str,
    req: &ChatRequest,
    max_tokens: u32,
) -> wasmtime::Result<Result<ChatResponse, ProviderError>> {
    let request = t::ChatRequest {
        model: model.to_string(),
        messages: req
            .messages
            .iter()
            .map(|m| t::Message {
                role: m.role.clone(),
                content: m.content.clone(),
            })
            .collect(),
        tool: req.tool.as_ref().map(|tool| t::Tool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        }),
        json: req.json,
        max_tokens,
        temperature: None,
    };
    Ok(p.mnemo_llm_provider()
        .call_chat(store, base_url, &request)?
        .map(|a| ChatResponse {
            content: a.content,
            model: a.model,
            input_tokens: a.usage.input_tokens,
            output_tokens: a.usage.output_tokens,
        })
        .map_err(error))
}

pub fn embed(
    p: &Instance,
    store: &mut Store<LlmState>,
    base_url: &str,
    model: &str,
    texts: &[String],
    dimensions: Option<u32>,
) -> wasmtime::Result<Result<Embedded, ProviderError>> {
    let request = t::EmbedRequest {
        model: model.to_string(),
        texts: texts.to_vec(),
        dimensions,
    };
    Ok(p.mnemo_llm_provider()
        .call_embed(store, base_url, &request)?
        .map(|a| Embedded {
            vectors: a.vectors,
            model: a.model,
            input_tokens: a.usage.input_tokens,
        })
        .map_err(error))
}
