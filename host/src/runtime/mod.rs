//! The wasmtime side: one `Engine`, the core component loaded through the
//! on-disk cache, an `InstancePre` to instantiate from, and `CoreInstance`, a
//! live instance with its store. A trapped instance is thrown away and re-made
//! from the `InstancePre`, keeping the host state (database, providers).

mod bindings;
pub mod cache;
mod convert;
mod exports;
mod imports;
pub mod timings;
mod transaction;

use std::path::Path;
use std::sync::Arc;

use mnemo_core::{CoreError, Cross};
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::ports::HostPorts;
pub use crate::storage::Locks;
use crate::storage::READ_ONLY;
use bindings::mnemo::core::types;
use bindings::{Mnemo as Bindings, MnemoPre};
pub use cache::LoadReport;
use transaction::{Mode, Transaction};

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
    engine: wasmtime::Engine,
    pre: MnemoPre<HostState>,
    pub load: LoadReport,
    /// Fuel each engine call may burn before it traps; `None`: unmetered.
    fuel: Option<u64>,
}

impl Runtime {
    /// Loads the core component, from `cache_dir` when it holds a fresh artifact.
    pub fn new(cache_dir: Option<&Path>) -> anyhow::Result<Arc<Self>> {
        Self::with_fuel(cache_dir, None)
    }

    /// Like [`Runtime::new`], with every engine call limited to `fuel` units
    /// of work: a call that runs out traps (and is rolled back). Used to
    /// bound a runaway core, and by the tests to trap a call at every point.
    pub fn with_fuel(cache_dir: Option<&Path>, fuel: Option<u64>) -> anyhow::Result<Arc<Self>> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(fuel.is_some());
        let engine = wasmtime::Engine::new(&config)?;
        let (component, load) = cache::load(&engine, "mnemo-core", CORE_WASM, cache_dir)?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Bindings::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
        let pre = MnemoPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Arc::new(Self {
            engine,
            pre,
            load,
            fuel,
        }))
    }

    pub fn engine(&self) -> &wasmtime::Engine {
        &self.engine
    }

    /// A fresh instance around `state`; on failure the state comes back so
    /// the caller keeps its ports (and can try again later).
    fn instantiate_state(&self, state: HostState) -> Result<Slot, (Box<HostState>, anyhow::Error)> {
        let mut store = Store::new(&self.engine, state);
        if self.fuel.is_some() {
            // Instantiating is not a call: it runs unmetered; each call then
            // gets its own budget.
            if let Err(e) = store.set_fuel(u64::MAX) {
                return Err((
                    Box::new(store.into_data()),
                    anyhow::Error::from(e).context("metering the core"),
                ));
            }
        }
        match self.pre.instantiate(&mut store) {
            Ok(api) => {
                // Every instance (a re-made one too) keeps the same bounds.
                // and the same rule of who reads whom.
                let bounds = store.data().ports.llm.bounds().clone().cross();
                let sharing = store.data().ports.sharing.clone().cross();
                let engine = api.mnemo_core_engine();
                let configured = engine
                    .call_configure_llm(&mut store, &bounds)
                    .map_err(|e| {
                        anyhow::Error::from(e).context("configuring the core's LLM bounds")
                    })
                    .and_then(|()| {
                        engine
                            .call_configure_sharing(&mut store, &sharing)
                            .map_err(|e| {
                                anyhow::Error::from(e).context("configuring the core's sharing")
                            })
                    });
                if let Err(e) = configured {
                    return Err((Box::new(store.into_data()), e));
                }
                Ok(Slot::Live(store, api))
            }
            Err(e) => Err((
                Box::new(store.into_data()),
                anyhow::Error::from(e).context("instantiating the core component"),
            )),
        }
    }

    pub fn instantiate(self: &Arc<Self>, ports: HostPorts) -> anyhow::Result<CoreInstance> {
        let state = HostState {
            ports,
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let slot = self.instantiate_state(state).map_err(|(_, e)| e)?;
        Ok(CoreInstance {
            runtime: self.clone(),
            slot: Some(slot),
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

/// The instance with its store, or — after a trap whose replacement failed —
/// just the host state, so the ports stay usable and the next call tries to
/// instantiate again.
// One per instance, moved only when a trap replaces it.
#[allow(clippy::large_enum_variant)]
enum Slot {
    Live(Store<HostState>, Bindings),
    Idle(Box<HostState>),
}

impl Slot {
    fn state(&self) -> &HostState {
        match self {
            Slot::Live(store, _) => store.data(),
            Slot::Idle(state) => state,
        }
    }

    fn state_mut(&mut self) -> &mut HostState {
        match self {
            Slot::Live(store, _) => store.data_mut(),
            Slot::Idle(state) => state,
        }
    }

    fn into_state(self) -> HostState {
        match self {
            Slot::Live(store, _) => store.into_data(),
            Slot::Idle(state) => *state,
        }
    }
}

/// A live core instance. Every engine export is a method here taking and
/// returning model types.
pub struct CoreInstance {
    runtime: Arc<Runtime>,
    /// `None` only inside [`CoreInstance::replace`], which always puts a
    /// slot back before returning.
    slot: Option<Slot>,
    /// Traps survived so far.
    pub traps: u32,
    /// Calls into the component's exports so far.
    pub calls: u64,
}

impl CoreInstance {
    /// The compiled component this instance came from (more instances are
    /// made from it in microseconds).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    pub fn ports(&self) -> &HostPorts {
        match &self.slot {
            Some(slot) => &slot.state().ports,
            None => unreachable_state(),
        }
    }

    pub fn ports_mut(&mut self) -> &mut HostPorts {
        match &mut self.slot {
            Some(slot) => &mut slot.state_mut().ports,
            None => unreachable_state(),
        }
    }

    /// Throws the current instance away (if any) and makes a fresh one
    /// around the same host state. On failure the state is kept, idle, and
    /// the next call tries again.
    fn replace(&mut self) -> anyhow::Result<()> {
        let Some(old) = self.slot.take() else {
            unreachable_state()
        };
        match self.runtime.instantiate_state(old.into_state()) {
            Ok(slot) => {
                self.slot = Some(slot);
                Ok(())
            }
            Err((state, e)) => {
                self.slot = Some(Slot::Idle(state));
                Err(e)
            }
        }
    }

    /// One call of an engine export, atomic: it runs in a transaction of its
    /// own (a savepoint inside a batch's), committed when the core answers
    /// `Ok` and rolled back on an error or a trap, so nothing is ever
    /// half-written. The LLM usage ledger is written after the transaction
    /// ends (after the batch's, inside one), so it survives a rollback.
    fn call<R, W: Cross<R>>(
        &mut self,
        mode: Mode,
        f: impl FnOnce(&Bindings, &mut Store<HostState>) -> wasmtime::Result<Result<W, types::Error>>,
    ) -> Result<R, CallError> {
        if matches!(self.slot, Some(Slot::Idle(_))) {
            self.replace().map_err(|e| {
                CallError::Trap(format!(
                    "the core instance could not be re-made after an earlier trap: {e:#}"
                ))
            })?;
        }
        let Some(Slot::Live(store, api)) = self.slot.as_mut() else {
            unreachable_state()
        };
        self.calls += 1;
        let db = &store.data().ports.store;
        if matches!(mode, Mode::Write(_)) && db.is_read_only() {
            return Err(CallError::Core(CoreError::Unavailable(READ_ONLY.into())));
        }
        // A transaction that cannot open (a lock waited out, the database
        // busy or gone) wrote nothing, and may open on a retry: unavailable
        // (HTTP 503), not an internal error.
        let tx = Transaction::begin(db, &mode).map_err(|e| {
            CallError::Core(CoreError::Unavailable(format!(
                "the store is busy or unreachable; nothing was written: {e:#}"
            )))
        })?;
        if let Some(fuel) = self.runtime.fuel {
            store
                .set_fuel(fuel)
                .map_err(|e| CallError::Trap(format!("setting the fuel budget: {e:#}")))?;
        }
        let result = f(api, store);
        let ended = tx.finish(&store.data().ports, matches!(result, Ok(Ok(_))));
        match result {
            Ok(Ok(v)) => match ended {
                Ok(()) => Ok(v.cross()),
                Err(e) => Err(CallError::Core(CoreError::Storage(format!("{e:#}")))),
            },
            Ok(Err(e)) => Err(CallError::Core(with_rollback(e.cross(), ended))),
            Err(trap) => {
                self.traps += 1;
                let mut message = format!("{trap:#}");
                if let Err(e) = ended {
                    message = format!("{message}; and the rollback failed: {e:#}");
                }
                tracing::error!(error = %message, "core component trapped; re-instantiating");
                if let Err(e) = self.replace() {
                    return Err(CallError::Trap(format!(
                        "{message}; re-instantiation failed (retried on the next call): {e:#}"
                    )));
                }
                Err(CallError::Trap(message))
            }
        }
    }

    /// Runs `f` — several engine calls — as one transaction holding
    /// `locks` (every namespace the calls inside write): every call inside
    /// becomes a savepoint, and all of it is rolled back if `f` fails (a
    /// batch, an import file). The ledger is written afterwards.
    pub fn atomically<R, E: From<anyhow::Error>>(
        &mut self,
        locks: Locks,
        f: impl FnOnce(&mut Self) -> Result<R, E>,
    ) -> Result<R, E> {
        if self.ports().store.is_read_only() {
            return Err(E::from(anyhow::anyhow!(READ_ONLY)));
        }
        let tx = Transaction::begin(&self.ports().store, &Mode::Write(locks))?;
        let result = f(self);
        let ended = tx.finish(self.ports(), result.is_ok());
        match result {
            Ok(v) => ended.map(|()| v).map_err(E::from),
            Err(e) => {
                log_failed_rollback(ended);
                Err(e)
            }
        }
    }

    /// The mode of a read whose only writes are its effects (an access
    /// counted, a renewal, an injection logged): a write, except on a
    /// read-only database, where the effects are kept aside like a
    /// reader's (`storage/reader.rs`) and the read is served.
    fn effects_only(&self, namespace: &str) -> Mode {
        if self.ports().store.is_read_only() {
            Mode::Read
        } else {
            Mode::Write(Locks::one(namespace))
        }
    }

    /// Replaces the instance with a fresh one from the `InstancePre` (what a
    /// trap does); returns how long instantiation took.
    pub fn reinstantiate(&mut self) -> anyhow::Result<std::time::Duration> {
        let start = std::time::Instant::now();
        self.replace()?;
        Ok(start.elapsed())
    }
}

/// The core's error, kept as the answer when the rollback after it failed
/// too (that failure is logged, never put in the error's place).
fn with_rollback(e: CoreError, ended: anyhow::Result<()>) -> CoreError {
    log_failed_rollback(ended);
    e
}

fn log_failed_rollback(ended: anyhow::Result<()>) {
    if let Err(rollback) = ended {
        tracing::error!(error = %format!("{rollback:#}"), "rollback failed after an error");
    }
}

/// `slot` is `None` only inside `replace`, which holds `&mut self`, and the
/// idle case is turned live at the top of `call`; neither is observable.
#[allow(clippy::panic)]
fn unreachable_state() -> ! {
    panic!("core instance used while being replaced")
}
