//! The plugin ABIs this host speaks, one file per released version
//! (`since_v0_1_0.rs` binds `wit/ner/since_v0.1.0/`), behind one `Provider`
//! enum that dispatches per version, so the sandbox in `provider.rs` never
//! sees a binding. A new ABI adds a file and a variant; a released one is
//! never edited.

pub mod since_v0_1_0;

use mnemo_core::model::EntityType;
use wasmtime::Store;
use wasmtime::component::Component;

use super::state::PluginState;

/// What a plugin says about itself.
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub entity_types: Vec<EntityType>,
}

/// One entity as the plugin returned it, before the host checks it.
pub struct RawEntity {
    pub text: String,
    pub entity_type: EntityType,
    pub start: u32,
    pub end: u32,
    pub confidence: f32,
}

/// A plugin's own error value (not a trap).
pub enum ProviderError {
    InvalidInput(String),
    Failed(String),
}

/// A compiled plugin, linked for its ABI, ready to instantiate.
pub enum ProviderPre {
    V0_1_0(since_v0_1_0::Pre),
}

/// A live plugin instance of some ABI version.
pub enum Provider {
    V0_1_0(since_v0_1_0::Instance),
}

impl ProviderPre {
    /// Links `component` for the ABI `version` it declared.
    pub fn new(
        version: &str,
        engine: &wasmtime::Engine,
        component: &Component,
    ) -> anyhow::Result<Self> {
        match version {
            "0.1.0" => Ok(Self::V0_1_0(since_v0_1_0::pre(engine, component)?)),
            other => anyhow::bail!("plugin ABI {other} is not supported by this host"),
        }
    }

    pub fn engine(&self) -> &wasmtime::Engine {
        match self {
            Self::V0_1_0(pre) => pre.engine(),
        }
    }

    pub fn instantiate(&self, store: &mut Store<PluginState>) -> wasmtime::Result<Provider> {
        match self {
            Self::V0_1_0(pre) => Ok(Provider::V0_1_0(pre.instantiate(store)?)),
        }
    }
}

impl Provider {
    pub fn info(&self, store: &mut Store<PluginState>) -> wasmtime::Result<PluginInfo> {
        match self {
            Self::V0_1_0(p) => since_v0_1_0::info(p, store),
        }
    }

    pub fn extract(
        &self,
        store: &mut Store<PluginState>,
        text: &str,
    ) -> wasmtime::Result<Result<Vec<RawEntity>, ProviderError>> {
        match self {
            Self::V0_1_0(p) => since_v0_1_0::extract(p, store, text),
        }
    }
}
