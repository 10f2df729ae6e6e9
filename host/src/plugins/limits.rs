//! The sandbox of every plugin call, NER and LLM alike.

use std::time::Duration;

use wasmtime::{StoreLimits, StoreLimitsBuilder, Trap};

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
    /// Longest answer an LLM plugin may return (a chat answer is
    /// kilobytes; `max_tokens` of 1,024 is about 4 KiB).
    pub max_answer_bytes: usize,
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
            max_answer_bytes: 1 << 20,
        }
    }
}

/// Epoch tick: the deadline's resolution.
pub const TICK: Duration = Duration::from_millis(5);

impl PluginLimits {
    pub fn deadline_ticks(&self) -> u64 {
        (self.deadline.as_millis() / TICK.as_millis()).max(1) as u64
    }

    /// What one plugin store may grow to: the memory limit, and room for
    /// a component's few instances, tables and memories.
    pub fn store_limits(&self) -> StoreLimits {
        StoreLimitsBuilder::new()
            .memory_size(self.memory_bytes)
            .instances(16)
            .tables(16)
            .memories(4)
            .trap_on_grow_failure(true)
            .build()
    }
}

/// Names the limit a trap broke, when it was one.
pub fn describe_trap(e: &wasmtime::Error, limits: &PluginLimits) -> String {
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!("deadline of {} ms exceeded", limits.deadline.as_millis()),
        Some(Trap::OutOfFuel) => format!("fuel budget of {} exhausted", limits.fuel.unwrap_or(0)),
        _ => {
            let text = format!("{e:#}");
            if text.contains("memory") && (text.contains("grow") || text.contains("limit")) {
                format!("memory limit of {} MiB exceeded", limits.memory_bytes >> 20)
            } else {
                format!("trapped: {}", text.lines().next().unwrap_or("unknown trap"))
            }
        }
    }
}
