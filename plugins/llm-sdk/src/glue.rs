//! Conversions between the SDK types and the generated bindings.

use super::bindings::mnemo::llm::types as t;
use super::*;

fn error(e: Error) -> t::Error {
    match e {
        Error::RateLimited(ms) => t::Error::RateLimited(ms),
        Error::Unavailable(m) => t::Error::Unavailable(m),
        Error::InvalidRequest(m) => t::Error::InvalidRequest(m),
        Error::MalformedResponse(m) => t::Error::MalformedResponse(m),
        Error::Unsupported(m) => t::Error::Unsupported(m),
    }
}

fn usage(u: Usage) -> t::Usage {
    t::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
    }
}

pub fn info<P: Provider>() -> t::ProviderInfo {
    let i = P::info();
    t::ProviderInfo {
        name: i.name,
        version: i.version,
        auth: match i.auth {
            Auth::Bearer => t::AuthScheme::Bearer,
            Auth::Header(h) => t::AuthScheme::Header(h),
            Auth::None => t::AuthScheme::None,
        },
        capabilities: i
            .capabilities
            .into_iter()
            .map(|c| match c {
                Capability::Chat => t::Capability::Chat,
                Capability::Embed => t::Capability::Embed,
            })
            .collect(),
    }
}

pub fn chat<P: Provider>(base_url: &str, r: t::ChatRequest) -> Result<t::ChatResponse, t::Error> {
    let request = ChatRequest {
        model: r.model,
        messages: r
            .messages
            .into_iter()
            .map(|m| Message {
                role: m.role,
                content: m.content,
            })
            .collect(),
        tool: r.tool.map(|t| Tool {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
        }),
        json: r.json,
        max_tokens: r.max_tokens,
        temperature: r.temperature,
    };
    P::chat(base_url, &request)
        .map(|a| t::ChatResponse {
            content: a.content,
            model: a.model,
            usage: usage(a.usage),
        })
        .map_err(error)
}

pub fn embed<P: Provider>(
    base_url: &str,
    r: t::EmbedRequest,
) -> Result<t::EmbedResponse, t::Error> {
    let request = EmbedRequest {
        model: r.model,
        texts: r.texts,
        dimensions: r.dimensions,
    };
    P::embed(base_url, &request)
        .map(|a| t::EmbedResponse {
            vectors: a.vectors,
            model: a.model,
            usage: usage(a.usage),
        })
        .map_err(error)
}
