//! The host's implementations of the core's ports, bundled. The WIT import
//! implementations (`runtime/imports.rs`) delegate here, and the natively
//! linked engine (`native.rs`) uses this bundle directly.

use mnemo_core::ports::Ports;

use crate::clock::HostClock;
use crate::embedding::Embeddings;
use crate::ledger::Ledger;
use crate::llm::LlmClient;
use crate::ner::NerPipeline;
use crate::storage::Store;

pub struct HostPorts {
    pub store: Store,
    pub embeddings: Embeddings,
    pub llm: LlmClient,
    pub ner: NerPipeline,
    pub clock: HostClock,
    /// Provider calls waiting to be written to the `llm_usage` table.
    pub ledger: Ledger,
    /// Who reads whose memories: configured on every core instance.
    pub sharing: mnemo_core::model::Sharing,
}

impl HostPorts {
    /// Writes pending ledger entries to the database (on this, the database
    /// thread). A failure is logged: the ledger never fails a request.
    /// A reader leaves the entries in the shared queue for the writer.
    pub fn flush_ledger(&self) {
        if self.store.is_reader() {
            return;
        }
        let pending = self.ledger.take();
        if pending.is_empty() {
            return;
        }
        if let Err(e) = self.store.record_usage(&pending) {
            tracing::warn!(error = %format!("{e:#}"), lost = pending.len(), "could not write the usage ledger");
        }
    }
}

impl Ports for HostPorts {
    type Storage = Store;
    type Embedder = Embeddings;
    type Llm = LlmClient;
    type Ner = NerPipeline;
    type Clock = HostClock;

    fn storage(&self) -> &Store {
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
    fn clock(&self) -> &HostClock {
        &self.clock
    }
}
