//! The host's implementations of the core's ports, bundled. The WIT import
//! implementations (`runtime/imports.rs`) delegate here, and the natively
//! linked engine (`native.rs`) uses this bundle directly.

use mnemo_core::ports::Ports;

use crate::clock::SystemClock;
use crate::embedding::Embeddings;
use crate::llm::LlmClient;
use crate::ner::NerPipeline;
use crate::storage::SqliteStore;

pub struct HostPorts {
    pub store: SqliteStore,
    pub embeddings: Embeddings,
    pub llm: LlmClient,
    pub ner: NerPipeline,
    pub clock: SystemClock,
}

impl Ports for HostPorts {
    type Storage = SqliteStore;
    type Embedder = Embeddings;
    type Llm = LlmClient;
    type Ner = NerPipeline;
    type Clock = SystemClock;

    fn storage(&self) -> &SqliteStore {
        &self.store
    }
    fn embedder(&self) -> &Embeddings {
        &self.embeddings
    }
    fn llm(&self) -> &LlmClient {
        &self.llm
    }
    fn ner(&self) -> &NerPipeline {
        &self.ner
    }
    fn clock(&self) -> &SystemClock {
        &self.clock
    }
}
