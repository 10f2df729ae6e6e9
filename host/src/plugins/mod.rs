//! NER providers as sandboxed WASM components. One plugin `Engine` (with
//! epoch interruption and fuel metering) shared by all plugins, a ticker
//! thread advancing its epoch, and for each plugin its own store with a
//! memory limit and no WASI capabilities. A plugin that traps, loops or
//! balloons costs one call: its instance is re-made and the host goes on.

mod abi;
mod limits;
mod provider;
mod wit;

use std::path::{Path, PathBuf};

use wasmtime::Config;

pub use abi::{SUPPORTED as SUPPORTED_ABIS, declared_versions};
pub use limits::PluginLimits;
pub use provider::PluginProvider;

/// The bundled providers, built from `plugins/` by `build.rs`.
pub static BUNDLED: &[(&str, &[u8])] = &[
    ("regex", include_bytes!(env!("MNEMO_PLUGIN_REGEX_WASM"))),
    ("names", include_bytes!(env!("MNEMO_PLUGIN_NAMES_WASM"))),
];

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("{origin} is not a WebAssembly file")]
    NotWasm { origin: String },
    #[error("{origin} is a core WebAssembly module, not a component; build it for wasm32-wasip2")]
    NotAComponent { origin: String },
    #[error("{origin} is not valid WebAssembly: {message}")]
    Malformed { origin: String, message: String },
    #[error("{origin} declares plugin ABI {found}; this mnemo supports {supported}")]
    UnknownAbi {
        origin: String,
        found: String,
        supported: String,
    },
    #[error("{origin} failed to load: {message}")]
    Load { origin: String, message: String },
    #[error("cannot read {origin}: {message}")]
    Io { origin: String, message: String },
}

pub struct PluginHost {
    engine: wasmtime::Engine,
    limits: PluginLimits,
    cache_dir: Option<PathBuf>,
}

impl PluginHost {
    pub fn new(limits: PluginLimits, cache_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(true);
        let engine = wasmtime::Engine::new(&config)?;
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("mnemo-plugin-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(limits::TICK);
                }
            })?;
        Ok(Self {
            engine,
            limits,
            cache_dir,
        })
    }

    pub fn limits(&self) -> &PluginLimits {
        &self.limits
    }

    /// Checks the declared ABI, compiles (through the on-disk cache) and
    /// instantiates a plugin.
    pub fn load(&self, origin: &str, bytes: &[u8]) -> Result<PluginProvider, PluginError> {
        let abi = abi::check(origin, bytes)?;
        let load = |e: anyhow::Error| PluginError::Load {
            origin: origin.into(),
            message: format!("{e:#}"),
        };
        let (component, _) =
            crate::runtime::cache::load(&self.engine, "plugin", bytes, self.cache_dir.as_deref())
                .map_err(load)?;
        PluginProvider::new(&self.engine, &component, &abi, self.limits.clone(), origin)
            .map_err(load)
    }

    pub fn load_file(&self, path: &Path) -> Result<PluginProvider, PluginError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| PluginError::Io {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        self.load(&origin, &bytes)
    }

    /// Every `*.wasm` in `dir`, in name order; a file that fails is reported, not fatal.
    pub fn load_dir(&self, dir: &Path) -> Vec<Result<PluginProvider, PluginError>> {
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                .collect(),
            Err(e) => {
                return vec![Err(PluginError::Io {
                    origin: dir.display().to_string(),
                    message: e.to_string(),
                })];
            }
        };
        paths.sort();
        paths.iter().map(|p| self.load_file(p)).collect()
    }
}
