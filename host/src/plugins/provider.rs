//! One loaded plugin: its own store (memory limit, no WASI capabilities), a
//! deadline and optional fuel on every call, caps on what crosses the
//! boundary. A trapped instance is replaced from the `InstancePre`.

use anyhow::anyhow;
use mnemo_core::model::{EntityType, Mention};
use wasmtime::Store;
use wasmtime::component::Component;

use super::limits::{PluginLimits, describe_trap};
use super::state::PluginState;
use super::wit::{Provider, ProviderError, ProviderPre};
use crate::ner::NerProvider;

pub struct PluginProvider {
    name: String,
    pub version: String,
    /// The plugin ABI it was linked for.
    pub abi: String,
    pub entity_types: Vec<EntityType>,
    pre: ProviderPre,
    live: Option<(Store<PluginState>, Provider)>,
    limits: PluginLimits,
    /// Calls that trapped (and replaced the instance).
    pub traps: u32,
}

impl PluginProvider {
    /// Links `component` for the ABI `abi` it declared and asks its info.
    pub(super) fn new(
        engine: &wasmtime::Engine,
        component: &Component,
        abi: &str,
        limits: PluginLimits,
        origin: &str,
    ) -> anyhow::Result<Self> {
        let pre = ProviderPre::new(abi, engine, component)?;
        let mut p = Self {
            name: String::new(),
            version: String::new(),
            abi: abi.to_string(),
            entity_types: Vec::new(),
            pre,
            live: None,
            limits,
            traps: 0,
        };
        p.live = Some(p.instantiate()?);
        let info = p
            .guarded(|api, store| api.info(store))
            .map_err(|e| anyhow!("{origin}: info() failed: {e}"))?;
        anyhow::ensure!(
            !info.name.trim().is_empty(),
            "{origin}: the plugin has no name"
        );
        p.name = info.name;
        p.version = info.version;
        p.entity_types = info.entity_types;
        Ok(p)
    }

    fn instantiate(&self) -> anyhow::Result<(Store<PluginState>, Provider)> {
        let state = PluginState::new(self.limits.store_limits());
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|s| s.limits());
        store.epoch_deadline_trap();
        // Instantiation runs guest code too: it gets the same budget as a call.
        store.set_epoch_deadline(self.limits.deadline_ticks());
        store.set_fuel(self.limits.fuel.unwrap_or(u64::MAX))?;
        let api = self.pre.instantiate(&mut store)?;
        Ok((store, api))
    }

    /// Runs `f` under the deadline and fuel budget; a trap replaces the instance.
    fn guarded<R>(
        &mut self,
        f: impl FnOnce(&Provider, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> anyhow::Result<R> {
        if self.live.is_none() {
            self.live = Some(self.instantiate()?);
        }
        let Some((store, api)) = self.live.as_mut() else {
            return Err(anyhow!("no instance"));
        };
        store.set_epoch_deadline(self.limits.deadline_ticks());
        store.set_fuel(self.limits.fuel.unwrap_or(u64::MAX))?;
        match f(api, store) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.traps += 1;
                let why = describe_trap(&e, &self.limits);
                // The instance may be in any state now: throw it away.
                self.live = None;
                if let Ok(fresh) = self.instantiate() {
                    self.live = Some(fresh);
                }
                Err(anyhow!("plugin `{}`: {why}", self.name))
            }
        }
    }
}

impl NerProvider for PluginProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn extract(&mut self, text: &str) -> anyhow::Result<Vec<Mention>> {
        let limits = self.limits.clone();
        if text.len() > limits.max_input_bytes {
            anyhow::bail!(
                "plugin `{}`: input of {} bytes is over the {} byte cap",
                self.name,
                text.len(),
                limits.max_input_bytes
            );
        }
        let owned = text.to_string();
        let result = self.guarded(|api, store| api.extract(store, &owned))?;
        let entities = result.map_err(|e| match e {
            ProviderError::InvalidInput(m) => {
                anyhow!("plugin `{}` rejected the input: {m}", self.name)
            }
            ProviderError::Failed(m) => anyhow!("plugin `{}` failed: {m}", self.name),
        })?;
        if entities.len() > limits.max_entities {
            anyhow::bail!(
                "plugin `{}` returned {} entities; the cap is {}",
                self.name,
                entities.len(),
                limits.max_entities
            );
        }
        entities
            .into_iter()
            .map(|e| {
                if e.text.len() > limits.max_entity_bytes {
                    anyhow::bail!(
                        "plugin `{}` returned an entity of {} bytes; the cap is {}",
                        self.name,
                        e.text.len(),
                        limits.max_entity_bytes
                    );
                }
                let valid = e.start <= e.end
                    && (e.end as usize) <= text.len()
                    && text.is_char_boundary(e.start as usize)
                    && text.is_char_boundary(e.end as usize);
                if !valid {
                    anyhow::bail!(
                        "plugin `{}` returned the span {}..{} outside the input",
                        self.name,
                        e.start,
                        e.end
                    );
                }
                Ok(Mention {
                    text: e.text,
                    entity_type: e.entity_type,
                    start: e.start,
                    end: e.end,
                    confidence: e.confidence.clamp(0.0, 1.0),
                    provider: self.name.clone(),
                })
            })
            .collect()
    }
}
