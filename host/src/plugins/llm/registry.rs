//! The LLM plugins a process can route to, by the name each declares: the
//! bundled ones (`openai`, `anthropic`, `ollama`), compiled on first use,
//! then those of the plugin folder, which may add names or replace a
//! bundled one. Cheap to clone: every engine instance shares one registry,
//! and so one pool of instances per plugin.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::LlmPlugin;
use crate::plugins::{BUNDLED_LLM, PluginHost, PluginLimits};

struct Bundled {
    name: &'static str,
    bytes: &'static [u8],
    loaded: OnceLock<Result<Arc<LlmPlugin>, String>>,
}

struct Inner {
    host: PluginHost,
    bundled: Vec<Bundled>,
    /// From the plugin folder, by declared name.
    added: BTreeMap<String, Arc<LlmPlugin>>,
}

#[derive(Clone)]
pub struct LlmPlugins(Arc<Inner>);

impl LlmPlugins {
    /// The bundled plugins, under `limits`, compiled through `cache_dir`.
    pub fn bundled(limits: PluginLimits, cache_dir: Option<PathBuf>) -> anyhow::Result<Self> {
        Ok(Self::with(PluginHost::new(limits, cache_dir)?, Vec::new()))
    }

    /// The bundled plugins and `added` (which win on a shared name).
    pub fn with(host: PluginHost, added: Vec<Arc<LlmPlugin>>) -> Self {
        let bundled = BUNDLED_LLM
            .iter()
            .map(|(name, bytes)| Bundled {
                name,
                bytes,
                loaded: OnceLock::new(),
            })
            .collect();
        let added = added.into_iter().map(|p| (p.name.clone(), p)).collect();
        Self(Arc::new(Inner {
            host,
            bundled,
            added,
        }))
    }

    /// Every name a provider setting may use.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.0.bundled.iter().map(|b| b.name.to_string()).collect();
        for name in self.0.added.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    pub fn knows(&self, name: &str) -> bool {
        self.names().iter().any(|n| n == name)
    }

    /// The plugin called `name`, loading a bundled one on first use.
    pub fn get(&self, name: &str) -> Result<Arc<LlmPlugin>, String> {
        if let Some(p) = self.0.added.get(name) {
            return Ok(p.clone());
        }
        let Some(b) = self.0.bundled.iter().find(|b| b.name == name) else {
            return Err(format!(
                "no LLM provider plugin is called `{name}`; known: {}",
                self.names().join(", ")
            ));
        };
        b.loaded
            .get_or_init(|| {
                self.0
                    .host
                    .load_llm(&format!("bundled plugin `{}`", b.name), b.bytes)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}
