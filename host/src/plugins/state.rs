//! What a NER plugin's store holds: a WASI context that grants nothing, its
//! resource table and its memory limits. The ABI bindings (`wit/`) and the
//! loaded provider (`provider.rs`) both name it.

use wasmtime::StoreLimits;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl PluginState {
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits,
        }
    }

    /// The store's limiter (`Store::limiter`).
    pub fn limits(&mut self) -> &mut StoreLimits {
        &mut self.limits
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
