//! Test support that travels with the core (feature `testing`, and the
//! core's own tests): in-memory fakes of every port, and the storage
//! contract suite that both the fake and every real store must pass, so the
//! fake cannot drift from the database it stands in for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod contract;
mod ports;
mod storage;

pub use ports::{BowEmbedder, CapsNer, FakePorts, ScriptedLlm, TestClock};
pub use storage::MemStorage;

#[cfg(test)]
mod tests {
    #[test]
    fn the_in_memory_store_keeps_the_storage_contract() {
        super::contract::all(super::MemStorage::default);
    }
}
