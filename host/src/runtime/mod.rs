//! The wasmtime side: one `Engine`, the core component loaded through the
//! on-disk cache, an `InstancePre` to instantiate from, and `CoreInstance`, a
//! live instance with its store. A trapped instance is thrown away and re-made
//! from the `InstancePre`, keeping the host state (database, providers).

mod bindings;
pub mod cache;
mod convert;
mod imports;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use mnemo_core::CoreError;
use mnemo_core::model::*;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::ports::HostPorts;
use bindings::{Mnemo as Bindings, MnemoPre};
pub use cache::LoadReport;

/// The core component, built by `build.rs` from `core/`.
pub static CORE_WASM: &[u8] = include_bytes!(env!("MNEMO_CORE_WASM"));

/// What a store carries: the ports the imports delegate to, and a WASI
/// context that grants nothing (std needs the interfaces, not the access).
pub struct HostState {
    pub ports: HostPorts,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Compiled core, ready to instantiate.
pub struct Runtime {
    engine: Engine,
    pre: MnemoPre<HostState>,
    pub load: LoadReport,
}

impl Runtime {
    /// Loads the core component, from `cache_dir` when it holds a fresh artifact.
    pub fn new(cache_dir: Option<&Path>) -> anyhow::Result<Arc<Self>> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        let engine = Engine::new(&config)?;
        let (component, load) = cache::load(&engine, "mnemo-core", CORE_WASM, cache_dir)?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Bindings::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
        let pre = MnemoPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Arc::new(Self { engine, pre, load }))
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn instantiate_state(&self, state: HostState) -> anyhow::Result<(Store<HostState>, Bindings)> {
        let mut store = Store::new(&self.engine, state);
        let api = self
            .pre
            .instantiate(&mut store)
            .map_err(anyhow::Error::from)
            .context("instantiating the core component")?;
        Ok((store, api))
    }

    pub fn instantiate(self: &Arc<Self>, ports: HostPorts) -> anyhow::Result<CoreInstance> {
        let state = HostState {
            ports,
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let (store, api) = self.instantiate_state(state)?;
        Ok(CoreInstance {
            runtime: self.clone(),
            live: Some((store, api)),
            traps: 0,
            calls: 0,
        })
    }
}

/// A failure of an engine call: the core's typed error, or a trap (a bug or
/// a limit breach) after which the instance was replaced.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("the core component trapped ({0}); the instance was replaced")]
    Trap(String),
}

/// A live core instance. Every engine export is a method here taking and
/// returning model types.
pub struct CoreInstance {
    runtime: Arc<Runtime>,
    live: Option<(Store<HostState>, Bindings)>,
    /// Traps survived so far.
    pub traps: u32,
    /// Calls into the component's exports so far.
    pub calls: u64,
}

impl CoreInstance {
    pub fn ports(&self) -> &HostPorts {
        match &self.live {
            Some((store, _)) => &store.data().ports,
            None => unreachable_state(),
        }
    }

    pub fn ports_mut(&mut self) -> &mut HostPorts {
        match &mut self.live {
            Some((store, _)) => &mut store.data_mut().ports,
            None => unreachable_state(),
        }
    }

    fn call<R, W: Into<R>>(
        &mut self,
        f: impl FnOnce(
            &Bindings,
            &mut Store<HostState>,
        ) -> wasmtime::Result<Result<W, bindings::mnemo::core::types::Error>>,
    ) -> Result<R, CallError> {
        let Some((store, api)) = self.live.as_mut() else {
            return Err(CallError::Trap(
                "the core instance could not be re-made after an earlier trap".into(),
            ));
        };
        self.calls += 1;
        let result = f(api, store);
        store.data().ports.flush_ledger();
        match result {
            Ok(Ok(v)) => Ok(v.into()),
            Ok(Err(e)) => Err(CallError::Core(e.into())),
            Err(trap) => {
                self.traps += 1;
                let message = format!("{trap:#}");
                tracing::error!(error = %message, "core component trapped; re-instantiating");
                if let Some((store, _)) = self.live.take() {
                    let state = store.into_data();
                    match self.runtime.instantiate_state(state) {
                        Ok(live) => self.live = Some(live),
                        Err(e) => {
                            return Err(CallError::Trap(format!(
                                "{message}; re-instantiation failed: {e:#}"
                            )));
                        }
                    }
                }
                Err(CallError::Trap(message))
            }
        }
    }

    pub fn remember(&mut self, req: RememberRequest) -> Result<RememberOutcome, CallError> {
        let req = req.into();
        self.call(|api, s| api.mnemo_core_engine().call_remember(s, &req))
    }

    pub fn ingest(&mut self, turn: Turn) -> Result<IngestOutcome, CallError> {
        let turn = turn.into();
        self.call(|api, s| api.mnemo_core_engine().call_ingest(s, &turn))
    }

    pub fn recall(&mut self, req: RecallRequest) -> Result<RecallResponse, CallError> {
        let req = req.into();
        self.call(|api, s| api.mnemo_core_engine().call_recall(s, &req))
    }

    pub fn get(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_get(s, namespace, id))
    }

    pub fn list(&mut self, req: ListRequest) -> Result<Vec<Memory>, CallError> {
        let req = req.into();
        let v: Vec<bindings::mnemo::core::types::Memory> =
            self.call(|api, s| api.mnemo_core_engine().call_list(s, &req))?;
        Ok(v.into_iter().map(Into::into).collect())
    }

    pub fn update(
        &mut self,
        namespace: &str,
        id: &str,
        patch: MemoryPatch,
    ) -> Result<Memory, CallError> {
        let patch = patch.into();
        self.call(|api, s| {
            api.mnemo_core_engine()
                .call_update(s, namespace, id, &patch)
        })
    }

    pub fn delete(&mut self, namespace: &str, id: &str, reason: &str) -> Result<Memory, CallError> {
        self.call(|api, s| {
            api.mnemo_core_engine()
                .call_delete(s, namespace, id, reason)
        })
    }

    pub fn restore(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_restore(s, namespace, id))
    }

    pub fn confirm(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_confirm(s, namespace, id))
    }

    pub fn correct(
        &mut self,
        namespace: &str,
        id: &str,
        content: &str,
    ) -> Result<Memory, CallError> {
        self.call(|api, s| {
            api.mnemo_core_engine()
                .call_correct(s, namespace, id, content)
        })
    }

    pub fn import(&mut self, item: ImportItem) -> Result<ImportOutcome, CallError> {
        use bindings::exports::mnemo::core::engine as api;
        let item = match item {
            ImportItem::Memory { memory, vector } => {
                api::ImportItem::Memory((memory.into(), vector))
            }
            ImportItem::Episode { episode, vector } => {
                api::ImportItem::Episode((episode.into(), vector))
            }
            ImportItem::Session { session } => api::ImportItem::Session(session.into()),
            ImportItem::Entity {
                entity,
                memories,
                episodes,
            } => api::ImportItem::Entity((entity.into(), memories, episodes)),
        };
        let out: api::ImportOutcome =
            self.call(|a, s| a.mnemo_core_engine().call_import(s, &item))?;
        Ok(match out {
            api::ImportOutcome::Created => ImportOutcome::Created,
            api::ImportOutcome::Exists => ImportOutcome::Exists,
            api::ImportOutcome::Merged => ImportOutcome::Merged,
        })
    }

    pub fn decay(&mut self) -> Result<mnemo_core::decay::DecayReport, CallError> {
        let r: bindings::exports::mnemo::core::engine::DecayReport =
            self.call(|a, s| a.mnemo_core_engine().call_decay(s))?;
        Ok(mnemo_core::decay::DecayReport {
            examined: r.examined,
            decayed: r.decayed,
            pruned: r.pruned,
        })
    }

    pub fn stats(&mut self, namespace: Option<&str>) -> Result<StoreStats, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_stats(s, namespace))
    }

    pub fn entity_info(
        &mut self,
        namespace: &str,
        name: &str,
        limit: u32,
    ) -> Result<Vec<EntityProfile>, CallError> {
        let v: Vec<bindings::exports::mnemo::core::engine::EntityProfile> =
            self.call(|api, s| {
                api.mnemo_core_engine()
                    .call_entity_info(s, namespace, name, limit)
            })?;
        Ok(v.into_iter().map(Into::into).collect())
    }

    pub fn enrich(&mut self, limit: u32) -> Result<EnrichReport, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_enrich(s, limit))
    }

    pub fn version(&mut self) -> Result<String, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_version(s).map(Ok))
    }

    /// `calls` guest→host clock imports inside one host→guest call.
    pub fn probe(&mut self, calls: u32) -> Result<i64, CallError> {
        self.call(|api, s| api.mnemo_core_engine().call_probe(s, calls).map(Ok))
    }

    /// Replaces the instance with a fresh one from the `InstancePre` (what a
    /// trap does); returns how long instantiation took.
    pub fn reinstantiate(&mut self) -> anyhow::Result<std::time::Duration> {
        let Some((store, _)) = self.live.take() else {
            anyhow::bail!("no live instance");
        };
        let start = std::time::Instant::now();
        let live = self.runtime.instantiate_state(store.into_data())?;
        let took = start.elapsed();
        self.live = Some(live);
        Ok(took)
    }
}

/// `live` is only `None` inside `call` while an instance is being replaced.
#[allow(clippy::panic)]
fn unreachable_state() -> ! {
    panic!("core instance used while being replaced")
}
