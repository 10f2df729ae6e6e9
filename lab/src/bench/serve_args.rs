//! What `mnemo-lab bench serve` takes: the store sizes, the clients, the
//! seconds of load, the stub's dimension and the stall table. The fill and
//! the stall table read it too.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ServeBenchArgs {
    /// Store sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub(super) memories: Vec<usize>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 4)]
    pub(super) clients: usize,
    /// Seconds of recall load per size.
    #[arg(long, default_value_t = 10)]
    pub(super) seconds: u64,
    /// Dimension of the stub's vectors.
    #[arg(long, default_value_t = 64)]
    pub(super) dimension: usize,
    /// Also measure recall during background embedding (local model) and
    /// during an LLM consolidation cycle (the stall table).
    #[arg(long)]
    pub(super) stalls: bool,
    /// Spread each size over this many namespaces and measure one tenant's
    /// recall in it against the same tenant alone (`tenants.rs`); 1: one
    /// namespace, the full table.
    #[arg(long, default_value_t = 1)]
    pub(super) namespaces: usize,
    /// Keep the stores on this Postgres server (a URL of it), each in a
    /// database of its own named after the store, created anew (or kept,
    /// with `--reuse`). With `--namespaces N` (N > 1) the tenant rows; else
    /// one store of every memory in one namespace: its import and recall.
    #[arg(long)]
    pub(super) postgres: Option<String>,
    /// Seed of the corpus.
    #[arg(long, default_value_t = 42)]
    pub(super) seed: u64,
    /// Work folder (default: a fresh temporary one, removed afterwards).
    #[arg(long)]
    pub(super) dir: Option<PathBuf>,
    /// Print the rows as one JSON array at the end instead of the table.
    #[arg(long)]
    pub(super) json: bool,
    /// Keep a size's store found in `--dir` from an earlier run (same seed)
    /// instead of filling it again: only the recall and restart rows are
    /// measured.
    #[arg(long, requires = "dir")]
    pub(super) reuse: bool,
}

impl ServeBenchArgs {
    pub(super) fn clients(&self) -> usize {
        self.clients.max(1)
    }
    pub(super) fn seconds(&self) -> u64 {
        self.seconds.max(1)
    }
    pub(super) fn seed(&self) -> u64 {
        self.seed
    }
    pub(super) fn dimension(&self) -> usize {
        self.dimension
    }
}
