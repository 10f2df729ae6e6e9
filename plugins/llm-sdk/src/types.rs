//! The ABI's records as plain Rust, and the trait a provider implements.

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

/// Structured output: the answer is a call of this function.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// The arguments' JSON Schema, as JSON text.
    pub parameters: String,
}

impl Tool {
    /// The arguments' JSON Schema, parsed; a schema that is not JSON is
    /// the caller's error.
    pub fn schema(&self) -> Result<serde_json::Value, Error> {
        serde_json::from_str(&self.parameters).map_err(|e| {
            Error::InvalidRequest(format!(
                "tool `{}` parameters are not a JSON schema: {e}",
                self.name
            ))
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tool: Option<Tool>,
    /// Ask for a JSON object where the provider has a JSON mode.
    pub json: bool,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The tool call's arguments (JSON text), or the model's text.
    pub content: String,
    /// The model that answered, as the provider named it.
    pub model: String,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EmbedRequest {
    pub model: String,
    pub texts: Vec<String>,
    /// Ask for vectors of this length where the provider can shorten them.
    pub dimensions: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EmbedResponse {
    /// One vector per text, in the order given.
    pub vectors: Vec<Vec<f32>>,
    pub model: String,
    pub usage: Usage,
}

/// A provider's typed failure; the host maps each to its own error and
/// decides about retrying.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The provider is rate limiting; milliseconds it asked to wait, if it said.
    RateLimited(Option<u32>),
    /// The provider cannot be reached or failed on its side (5xx).
    Unavailable(String),
    /// The provider refused the request (4xx other than 429).
    InvalidRequest(String),
    /// The answer cannot be read, or was cut off at max tokens.
    MalformedResponse(String),
    /// This provider does not do what was asked.
    Unsupported(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RateLimited(Some(ms)) => write!(f, "rate limited (retry after {ms} ms)"),
            Self::RateLimited(None) => write!(f, "rate limited"),
            Self::Unavailable(m) => write!(f, "unavailable: {m}"),
            Self::InvalidRequest(m) => write!(f, "invalid request: {m}"),
            Self::MalformedResponse(m) => write!(f, "malformed response: {m}"),
            Self::Unsupported(m) => write!(f, "unsupported: {m}"),
        }
    }
}

/// How the host adds the API key to requests to the allowed base URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`
    Bearer,
    /// The key as the value of this header (e.g. `x-api-key`).
    Header(String),
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Chat,
    Embed,
}

/// Who the provider is.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    /// What `MNEMO_LLM_PROVIDER` (or `MNEMO_<TIER>_PROVIDER`) names.
    pub name: String,
    pub version: String,
    pub auth: Auth,
    pub capabilities: Vec<Capability>,
}

/// An LLM provider. Every function must be total: return an error, never
/// panic (a panic traps, and the host counts that against the plugin).
pub trait Provider {
    fn info() -> Info;
    fn chat(base_url: &str, request: &ChatRequest) -> Result<ChatResponse, Error>;
    fn embed(_base_url: &str, _request: &EmbedRequest) -> Result<EmbedResponse, Error> {
        Err(Error::Unsupported("this provider has no embeddings".into()))
    }
}
