//! The core linked natively against the same host ports — no WASM in
//! between. Used by the benchmark to measure the WASM tax; mnemo itself
//! always runs the component.

use mnemo_core::Engine;

use crate::config::Config;
use crate::mnemo::host_ports;
use crate::ports::HostPorts;

pub struct NativeMnemo {
    pub engine: Engine<HostPorts>,
}

impl NativeMnemo {
    pub fn open(config: &Config) -> anyhow::Result<Self> {
        Ok(Self {
            engine: Engine::new(host_ports(config)?),
        })
    }
}
