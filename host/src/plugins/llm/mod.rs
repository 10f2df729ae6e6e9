//! One loaded LLM provider plugin (`mnemo:llm`): a pool of sandboxed
//! instances (`sandbox.rs`), each call under the plugin limits — the
//! deadline on the plugin's own time, the memory limit, optional fuel —
//! with a cap on the answer's size. A trap throws its instance away; a URL
//! outside the grant fails the call whatever the plugin answers.

mod registry;
mod sandbox;
mod since_v0_1_0;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::anyhow;
use mnemo_core::model::{ChatRequest, ChatResponse};
use wasmtime::Store;
use wasmtime::component::Component;

use super::limits::{PluginLimits, describe_trap};
pub use registry::LlmPlugins;
use sandbox::LlmState;
pub use sandbox::{Grant, Wire, within};
use since_v0_1_0::{Instance, Pre};

/// How the host adds the key to the plugin's requests (the ABI's `auth-scheme`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Bearer,
    Header(String),
    None,
}

impl std::fmt::Display for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bearer => write!(f, "bearer"),
            Self::Header(h) => write!(f, "header {h}"),
            Self::None => write!(f, "none"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Chat,
    Embed,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Embed => "embed",
        }
    }
}

/// What a plugin says about itself.
pub struct Info {
    pub name: String,
    pub version: String,
    pub auth: Auth,
    pub capabilities: Vec<Capability>,
}

/// A provider's own typed error (not a trap).
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    RateLimited(Option<u32>),
    Unavailable(String),
    InvalidRequest(String),
    MalformedResponse(String),
    Unsupported(String),
}

/// Vectors from a plugin's `embed`.
#[derive(Debug, Clone)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    pub model: String,
    pub input_tokens: u32,
}

/// Why a plugin call gave no usable answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("plugin `{plugin}`: {error:?}")]
    Provider {
        plugin: String,
        error: ProviderError,
    },
    #[error("plugin `{plugin}` tried to reach {url}, outside its allow-list")]
    Denied { plugin: String, url: String },
    #[error("plugin `{plugin}`: {why}")]
    Trapped { plugin: String, why: String },
    #[error("plugin `{plugin}`: {why}")]
    Refused { plugin: String, why: String },
}

struct Live {
    store: Store<LlmState>,
    api: Instance,
}

pub struct LlmPlugin {
    pub name: String,
    pub version: String,
    pub abi: String,
    pub origin: String,
    pub auth: Auth,
    pub capabilities: Vec<Capability>,
    pre: Pre,
    limits: PluginLimits,
    idle: Mutex<Vec<Live>>,
    traps: AtomicU32,
}

impl LlmPlugin {
    /// Links `component` for the ABI `abi` it declared and asks its info.
    pub(super) fn new(
        engine: &wasmtime::Engine,
        component: &Component,
        abi: &str,
        limits: PluginLimits,
        origin: &str,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(abi == "0.1.0", "LLM plugin ABI {abi} is not supported");
        let pre = since_v0_1_0::pre(engine, component)?;
        let mut p = Self {
            name: String::new(),
            version: String::new(),
            abi: abi.to_string(),
            origin: origin.to_string(),
            auth: Auth::None,
            capabilities: Vec::new(),
            pre,
            limits,
            idle: Mutex::new(Vec::new()),
            traps: AtomicU32::new(0),
        };
        let info = p
            .call(None, since_v0_1_0::info)
            .map_err(|e| anyhow!("{origin}: info() failed: {e}"))?
            .0;
        anyhow::ensure!(
            !info.name.trim().is_empty(),
            "{origin}: the plugin has no name"
        );
        p.name = info.name;
        p.version = info.version;
        p.auth = info.auth;
        p.capabilities = info.capabilities;
        Ok(p)
    }

    /// Calls that trapped (and lost their instance).
    pub fn traps(&self) -> u32 {
        self.traps.load(Ordering::Relaxed)
    }

    fn instantiate(&self) -> anyhow::Result<Live> {
        let state = LlmState::new(self.limits.store_limits(), self.limits.deadline);
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_callback(|ctx| ctx.data().on_epoch());
        store.set_epoch_deadline(self.limits.deadline_ticks());
        store.set_fuel(self.limits.fuel.unwrap_or(u64::MAX))?;
        // Instantiation runs guest code too: it gets the same budget.
        store.data_mut().begin(&self.name, &self.auth, None);
        let api = self.pre.instantiate(&mut store)?;
        Ok(Live { store, api })
    }

    /// Runs `f` on an idle instance (or a new one) under the limits with
    /// `grant`; a trap throws the instance away.
    fn call<R>(
        &self,
        grant: Option<Grant>,
        f: impl FnOnce(&Instance, &mut Store<LlmState>) -> wasmtime::Result<R>,
    ) -> Result<(R, Wire), CallError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut live = match idle {
            Some(live) => live,
            None => self.instantiate().map_err(|e| CallError::Refused {
                plugin: self.name.clone(),
                why: format!("cannot instantiate: {e:#}"),
            })?,
        };
        live.store.data_mut().begin(&self.name, &self.auth, grant);
        live.store.set_epoch_deadline(self.limits.deadline_ticks());
        let fuel = live.store.set_fuel(self.limits.fuel.unwrap_or(u64::MAX));
        let out = fuel.and_then(|()| f(&live.api, &mut live.store));
        let wire = live.store.data_mut().end();
        match out {
            Ok(r) => {
                self.idle
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(live);
                Ok((r, wire))
            }
            Err(e) => {
                self.traps.fetch_add(1, Ordering::Relaxed);
                Err(CallError::Trapped {
                    plugin: self.name.clone(),
                    why: describe_trap(&e, &self.limits),
                })
            }
        }
    }

    fn checked<R>(
        &self,
        out: Result<(Result<R, ProviderError>, Wire), CallError>,
    ) -> (Result<R, CallError>, Wire) {
        match out {
            Err(e) => (Err(e), Wire::default()),
            Ok((_, wire)) if wire.denied.is_some() => {
                let url = wire.denied.clone().unwrap_or_default();
                let e = CallError::Denied {
                    plugin: self.name.clone(),
                    url,
                };
                (Err(e), wire)
            }
            Ok((Err(error), wire)) => (
                Err(CallError::Provider {
                    plugin: self.name.clone(),
                    error,
                }),
                wire,
            ),
            Ok((Ok(r), wire)) => (Ok(r), wire),
        }
    }

    /// One completion through the plugin; the answer is capped at
    /// `max_answer_bytes`.
    pub fn chat(
        &self,
        grant: Grant,
        model: &str,
        req: &ChatRequest,
        max_tokens: u32,
    ) -> (Result<ChatResponse, CallError>, Wire) {
        let base = grant.base_url.clone();
        let out = self.call(Some(grant), |api, store| {
            since_v0_1_0::chat(api, store, &base, model, req, max_tokens)
        });
        let (result, wire) = self.checked(out);
        let result = result.and_then(|answer| {
            let cap = self.limits.max_answer_bytes;
            if answer.content.len() > cap {
                return Err(CallError::Refused {
                    plugin: self.name.clone(),
                    why: format!(
                        "an answer of {} bytes is over the {cap} byte cap",
                        answer.content.len()
                    ),
                });
            }
            Ok(answer)
        });
        (result, wire)
    }

    /// Embeddings through the plugin: one vector per text, each of the
    /// same length.
    pub fn embed(
        &self,
        grant: Grant,
        model: &str,
        texts: &[String],
        dimensions: Option<u32>,
    ) -> (Result<Embedded, CallError>, Wire) {
        let base = grant.base_url.clone();
        let out = self.call(Some(grant), |api, store| {
            since_v0_1_0::embed(api, store, &base, model, texts, dimensions)
        });
        let (result, wire) = self.checked(out);
        let result = result.and_then(|e| {
            let same = e
                .vectors
                .first()
                .is_none_or(|v| e.vectors.iter().all(|w| w.len() == v.len()));
            if e.vectors.len() != texts.len() || !same {
                return Err(CallError::Provider {
                    plugin: self.name.clone(),
                    error: ProviderError::MalformedResponse(format!(
                        "{} vectors{} for {} texts",
                        e.vectors.len(),
                        if same { "" } else { " of unequal lengths" },
                        texts.len()
                    )),
                });
            }
            Ok(e)
        });
        (result, wire)
    }
}
