//! Generated host bindings of the `mnemo:core` world. Only `convert.rs` and
//! `imports.rs` look inside them.

wasmtime::component::bindgen!({
    path: "../wit/core",
    world: "mnemo",
});
