//! The sandbox of every plugin call.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct PluginLimits {
    /// Linear memory a plugin instance may grow to.
    pub memory_bytes: usize,
    /// Wall-clock budget of one call (epoch interruption).
    pub deadline: Duration,
    /// Instruction budget of one call; `None` = unmetered.
    pub fuel: Option<u64>,
    /// Longest input text handed to a plugin.
    pub max_input_bytes: usize,
    /// Most entities a call may return.
    pub max_entities: usize,
    /// Longest entity text a call may return.
    pub max_entity_bytes: usize,
}

impl Default for PluginLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            deadline: Duration::from_millis(1000),
            fuel: None,
            max_input_bytes: 64 << 10,
            max_entities: 512,
            max_entity_bytes: 512,
        }
    }
}

/// Epoch tick: the deadline's resolution.
pub const TICK: Duration = Duration::from_millis(5);

impl PluginLimits {
    pub fn deadline_ticks(&self) -> u64 {
        (self.deadline.as_millis() / TICK.as_millis()).max(1) as u64
    }
}
