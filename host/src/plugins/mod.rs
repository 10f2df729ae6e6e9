//! Providers as sandboxed WASM components: NER plugins (`mnemo:ner`) and
//! LLM plugins (`mnemo:llm`, `llm/`). One plugin `Engine` for the process
//! (epoch interruption and fuel metering) with one ticker thread advancing
//! its epoch, compiled components kept per process, and for each instance
//! its own store with a memory limit and no WASI capabilities. A plugin
//! that traps, loops or balloons costs one call: its instance is thrown
//! away and the host goes on.

mod abi;
mod limits;
pub mod llm;
mod provider;
mod state;
mod wit;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use wasmtime::Config;
use wasmtime::component::Component;

pub use abi::Kind;
pub use limits::PluginLimits;
pub use llm::LlmPlugin;
pub use provider::PluginProvider;

/// The bundled NER providers, built from `plugins/` by `build.rs`.
pub static BUNDLED: &[(&str, &[u8])] = &[
    ("regex", include_bytes!(env!("MNEMO_PLUGIN_REGEX_WASM"))),
    ("names", include_bytes!(env!("MNEMO_PLUGIN_NAMES_WASM"))),
];

/// The bundled LLM providers, built from `plugins/llm-*` by `build.rs`:
/// every provider, these included, runs as a plugin.
pub static BUNDLED_LLM: &[(&str, &[u8])] = &[
    (
        "openai",
        include_bytes!(env!("MNEMO_PLUGIN_LLM_OPENAI_WASM")),
    ),
    (
        "anthropic",
        include_bytes!(env!("MNEMO_PLUGIN_LLM_ANTHROPIC_WASM")),
    ),
    (
        "ollama",
        include_bytes!(env!("MNEMO_PLUGIN_LLM_OLLAMA_WASM")),
    ),
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

/// A loaded plugin of either kind.
pub enum Loaded {
    Ner(PluginProvider),
    Llm(LlmPlugin),
}

/// The process's plugin engine; its epoch ticker runs for as long as the
/// process does.
fn engine() -> anyhow::Result<&'static wasmtime::Engine> {
    static ENGINE: OnceLock<Result<wasmtime::Engine, String>> = OnceLock::new();
    let made = ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(true);
        let engine = wasmtime::Engine::new(&config).map_err(|e| format!("{e:#}"))?;
        let ticking = engine.clone();
        std::thread::Builder::new()
            .name("mnemo-plugin-epoch".into())
            .spawn(move || {
                loop {
                    ticking.increment_epoch();
                    std::thread::sleep(limits::TICK);
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(engine)
    });
    made.as_ref().map_err(|e| anyhow::anyhow!("{e}"))
}

/// Compiles `bytes` once per process (and once per cache folder on disk).
fn compile(bytes: &[u8], cache_dir: Option<&Path>) -> anyhow::Result<Component> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Component>>> = OnceLock::new();
    let engine = engine()?;
    let key = crate::runtime::cache::cache_key(engine, bytes);
    let memo = COMPILED.get_or_init(Default::default);
    if let Some(c) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(c.clone());
    }
    let (component, _) = crate::runtime::cache::load(engine, "plugin", bytes, cache_dir)?;
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, component.clone());
    Ok(component)
}

#[derive(Clone)]
pub struct PluginHost {
    limits: PluginLimits,
    cache_dir: Option<PathBuf>,
}

impl PluginHost {
    pub fn new(limits: PluginLimits, cache_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        engine()?;
        Ok(Self { limits, cache_dir })
    }

    pub fn limits(&self) -> &PluginLimits {
        &self.limits
    }

    /// Checks the declared ABI, compiles (through the caches) and
    /// instantiates a plugin of whichever kind it is.
    pub fn load_any(&self, origin: &str, bytes: &[u8]) -> Result<Loaded, PluginError> {
        self.load_kind(origin, bytes, None)
    }

    /// An NER plugin; a file of another kind is refused.
    pub fn load(&self, origin: &str, bytes: &[u8]) -> Result<PluginProvider, PluginError> {
        match self.load_kind(origin, bytes, Some(Kind::Ner))? {
            Loaded::Ner(p) => Ok(p),
            Loaded::Llm(_) => Err(self.wrong_kind(origin)),
        }
    }

    /// An LLM plugin; a file of another kind is refused.
    pub fn load_llm(&self, origin: &str, bytes: &[u8]) -> Result<LlmPlugin, PluginError> {
        match self.load_kind(origin, bytes, Some(Kind::Llm))? {
            Loaded::Llm(p) => Ok(p),
            Loaded::Ner(_) => Err(self.wrong_kind(origin)),
        }
    }

    fn wrong_kind(&self, origin: &str) -> PluginError {
        PluginError::Load {
            origin: origin.into(),
            message: "not the kind of plugin asked for".into(),
        }
    }

    fn load_kind(
        &self,
        origin: &str,
        bytes: &[u8],
        only: Option<Kind>,
    ) -> Result<Loaded, PluginError> {
        let (kind, abi) = abi::check(origin, bytes, only)?;
        let load = |e: anyhow::Error| PluginError::Load {
            origin: origin.into(),
            message: format!("{e:#}"),
        };
        let component = compile(bytes, self.cache_dir.as_deref()).map_err(load)?;
        let engine = engine().map_err(load)?;
        match kind {
            Kind::Ner => PluginProvider::new(engine, &component, &abi, self.limits.clone(), origin)
                .map(Loaded::Ner)
                .map_err(load),
            Kind::Llm => LlmPlugin::new(engine, &component, &abi, self.limits.clone(), origin)
                .map(Loaded::Llm)
                .map_err(load),
        }
    }

    fn read(&self, path: &Path) -> Result<(String, Vec<u8>), PluginError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| PluginError::Io {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        Ok((origin, bytes))
    }

    pub fn load_file(&self, path: &Path) -> Result<PluginProvider, PluginError> {
        let (origin, bytes) = self.read(path)?;
        self.load(&origin, &bytes)
    }

    /// The `*.wasm` files in `dir`, in name order.
    pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
        let entries = std::fs::read_dir(dir).map_err(|e| PluginError::Io {
            origin: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// A file of either kind.
    pub fn load_path(&self, path: &Path) -> Result<Loaded, PluginError> {
        let (origin, bytes) = self.read(path)?;
        self.load_any(&origin, &bytes)
    }

    /// Every `*.wasm` in `dir` of kind `only` (of either kind with
    /// `None`), in name order; files that declare only the other kind are
    /// passed over unloaded, a file that fails is reported, not fatal.
    pub fn load_dir(&self, dir: &Path, only: Option<Kind>) -> Vec<Result<Loaded, PluginError>> {
        let paths = match Self::wasm_files(dir) {
            Ok(paths) => paths,
            Err(e) => return vec![Err(e)],
        };
        let mut loaded = Vec::new();
        for path in &paths {
            let (origin, bytes) = match self.read(path) {
                Ok(read) => read,
                Err(e) => {
                    loaded.push(Err(e));
                    continue;
                }
            };
            let other_kind = only.is_some_and(|kind| {
                abi::declared(&origin, &bytes)
                    .is_ok_and(|d| !d.is_empty() && d.iter().all(|(k, _)| *k != kind))
            });
            if !other_kind {
                loaded.push(self.load_kind(&origin, &bytes, only));
            }
        }
        loaded
    }

    /// The LLM plugins a folder holds; NER plugins are the NER pipeline's,
    /// failures are logged.
    pub fn llm_plugins_in(&self, dir: &Path) -> Vec<Arc<LlmPlugin>> {
        self.load_dir(dir, Some(Kind::Llm))
            .into_iter()
            .filter_map(|loaded| match loaded {
                Ok(Loaded::Llm(p)) => Some(Arc::new(p)),
                Ok(Loaded::Ner(_)) => None,
                Err(e) => {
                    tracing::debug!("{e}");
                    None
                }
            })
            .collect()
    }
}
