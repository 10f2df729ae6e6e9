//! The server's instances of the core and the threads they live on.
//!
//! - **One writer** owns the read-write connection: every call that writes
//!   runs there, one at a time, each in its own transaction. It also runs
//!   the scheduled tasks, the debounced topic rebuild, and the short jobs
//!   the others hand it (vectors to store, a reader's effects).
//! - **Readers** (`MNEMO_READERS`, default one per CPU, at least 2) each own
//!   a core instance over a read-only connection; reads (recall, context,
//!   resume, lists, stats, export, ...) run on whichever is free, in parallel
//!   with each other and with the writer (SQLite WAL). A write is committed
//!   before its reply, and every read opens a fresh snapshot, so a client
//!   reads its own writes. The access counts and renewals a read causes
//!   come back as effects the writer applies just after (`storage/reader.rs`).
//! - **The embedding worker** finds rows without a vector through a reader
//!   connection, embeds them with no lock held, and hands the vectors to the
//!   writer, which stores those whose text has not changed meanwhile (seed
//!   004's background batches, off the request path).
//!
//! wasmtime stores and SQLite connections are blocking, so handlers send
//! jobs and await replies; the async executor never blocks.

use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::Context;
use mnemo_host::embedding::Embeddings;
use mnemo_host::storage::SqliteStore;
use mnemo_host::{Config, Mnemo};

use super::error::ApiError;

/// How often the embedding worker looks for rows without a vector.
const BACKFILL_EVERY: Duration = Duration::from_millis(500);
/// Rows per embedding batch (one short write to store them).
const BACKFILL_BATCH: usize = 64;
/// Seed 004 §6.4: the topic trees are rebuilt after a 5-second quiet window
/// following writes (each write restarts it), and at start when none is cached.
const TOPIC_DEBOUNCE: Duration = Duration::from_secs(5);
/// How often an idle writer looks at the write counter and the ledger.
const WRITER_TICK: Duration = Duration::from_millis(500);

pub(super) type Job = Box<dyn FnOnce(&mut Mnemo) + Send>;

/// Handles to the writer, the reader pool and (through the writer) the
/// embedding worker. Cloned into every handler.
#[derive(Clone)]
pub(super) struct Engines {
    writer: mpsc::Sender<Job>,
    readers: mpsc::Sender<Job>,
}

impl Engines {
    pub(super) fn spawn(config: Config) -> anyhow::Result<Self> {
        let writer_tx = spawn_writer(&config)?;
        let (read_tx, read_rx) = mpsc::channel::<Job>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        // The readers and the embedding worker are made on the writer's
        // thread from its instance (they share its vector state, graphs,
        // model and ledger), then moved to threads of their own.
        let (made_tx, made_rx) = mpsc::channel();
        let readers = config.readers;
        let reader_config = config.clone();
        let job: Job = Box::new(move |m| {
            let made = (0..readers)
                .map(|_| m.reader(&reader_config))
                .collect::<anyhow::Result<Vec<_>>>()
                .and_then(|rs| {
                    let store = m.ports().store.reader()?;
                    Ok((rs, store, m.ports().embeddings.share()))
                });
            let _ = made_tx.send(made);
        });
        writer_tx
            .send(job)
            .map_err(|_| anyhow::anyhow!("the writer stopped while starting"))?;
        let (instances, store, embeddings) = made_rx
            .recv()
            .context("the writer died while making the readers")??;
        for (i, instance) in instances.into_iter().enumerate() {
            spawn_reader(i, instance, read_rx.clone(), writer_tx.clone())?;
        }
        spawn_embedder(store, embeddings, writer_tx.clone())?;
        Ok(Self {
            writer: writer_tx,
            readers: read_tx,
        })
    }

    /// Runs `f` on the writer and awaits its answer.
    pub(super) async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        on(&self.writer, f).await
    }

    /// Runs `f` on the first free reader and awaits its answer. `f` must
    /// only read: the reader's connection refuses writes.
    pub(super) async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        on(&self.readers, f).await
    }

    /// Queues `job` on the writer without waiting (work after a reply).
    pub(super) fn later(&self, job: Job) -> bool {
        self.writer.send(job).is_ok()
    }

    /// Seed 003's session-switch trigger: distil the sessions a new one left
    /// open, on the writer after the reply (never in the request).
    pub(super) fn consolidate_sessions_later(&self, namespace: &str, ids: &[String]) {
        let (namespace, ids) = (namespace.to_string(), ids.to_vec());
        let job: Job = Box::new(move |m| match m.consolidate_sessions(&namespace, &ids) {
            Ok(r) => tracing::info!(
                sessions = r.sessions.len(),
                facts = r.facts_added,
                warnings = r.warnings.len(),
                "consolidated the sessions a new one left open"
            ),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "session consolidation failed; the nightly run retries")
            }
        });
        if !self.later(job) {
            tracing::warn!("the engine stopped before consolidating the open sessions");
        }
    }
}

async fn on<R: Send + 'static>(
    queue: &mpsc::Sender<Job>,
    f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
) -> Result<R, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    queue
        .send(Box::new(move |m| {
            let _ = tx.send(f(m));
        }))
        .map_err(|_| ApiError::unavailable("the engine stopped"))?;
    rx.await
        .map_err(|_| ApiError::unavailable("the engine dropped the request"))
}

/// The writer's thread: jobs in order; the ledger written after each; the
/// topic trees once writes have been quiet for `TOPIC_DEBOUNCE` (and at
/// start when none is cached).
fn spawn_writer(config: &Config) -> anyhow::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel();
    let config = config.clone();
    std::thread::Builder::new()
        .name("mnemo-writer".into())
        .spawn(move || {
            let mut mnemo = match Mnemo::open(&config) {
                Ok(m) => {
                    let _ = ready_tx.send(Ok(()));
                    m
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let mut topics_due = mnemo
                .ports()
                .store
                .needs_topic_tree()
                .unwrap_or(false)
                .then(Instant::now);
            let mut seen_changes = mnemo.ports().store.memories_changed();
            loop {
                let wait =
                    topics_due.map_or(WRITER_TICK, |due| due.saturating_duration_since(Instant::now()));
                match rx.recv_timeout(wait.min(WRITER_TICK)) {
                    Ok(job) => job(&mut mnemo),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
                // What readers and the embedding worker spent on providers.
                mnemo.ports().flush_ledger();
                let changes = mnemo.ports().store.memories_changed();
                if changes != seen_changes {
                    seen_changes = changes;
                    topics_due = Some(Instant::now() + TOPIC_DEBOUNCE);
                }
                if topics_due.is_some_and(|due| due <= Instant::now()) {
                    topics_due = None;
                    match mnemo.rebuild_topics(None) {
                        Ok(n) => tracing::info!(topics = n, "topic trees rebuilt after writes"),
                        Err(e) => tracing::warn!(error = %e, "topic rebuild failed; the next write or cycle retries"),
                    }
                }
            }
        })?;
    ready_rx
        .recv()
        .context("the writer died while starting")??;
    Ok(tx)
}

/// A reader's thread: takes the next read job, runs it, and hands the
/// effects the call kept to the writer.
fn spawn_reader(
    i: usize,
    mut mnemo: Mnemo,
    jobs: Arc<Mutex<mpsc::Receiver<Job>>>,
    writer: mpsc::Sender<Job>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name(format!("mnemo-reader-{i}"))
        .spawn(move || {
            loop {
                let job = match jobs.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                job(&mut mnemo);
                let effects = mnemo.ports().store.take_effects();
                if effects.is_empty() {
                    continue;
                }
                let apply: Job = Box::new(move |m| {
                    let done = m.atomically(|m| -> anyhow::Result<()> {
                        m.ports().store.apply_effects(&effects)?;
                        Ok(())
                    });
                    if let Err(e) = done {
                        tracing::warn!(error = %format!("{e:#}"), "a read's access counts could not be written");
                    }
                });
                if writer.send(apply).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// The embedding worker: every `BACKFILL_EVERY`, a batch of rows without a
/// vector (read through its own connection), embedded with no lock held,
/// stored by the writer in one short job. A provider failure is logged and
/// the rows stay without a vector, so the next round retries them.
fn spawn_embedder(
    store: SqliteStore,
    embeddings: Embeddings,
    writer: mpsc::Sender<Job>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("mnemo-embedder".into())
        .spawn(move || {
            loop {
                std::thread::sleep(BACKFILL_EVERY);
                loop {
                    let batch = match mnemo_host::backfill::pending(&store, BACKFILL_BATCH) {
                        Ok(b) if b.is_empty() => break,
                        Ok(b) => b,
                        Err(e) => {
                            tracing::warn!(error = %format!("{e:#}"), "looking for rows to embed failed; will retry");
                            break;
                        }
                    };
                    let embedded = match mnemo_host::backfill::embed(&embeddings, batch) {
                        Ok(e) => e,
                        Err(e) => {
                            tracing::warn!(error = %format!("{e:#}"), "embedding backfill failed; will retry");
                            break;
                        }
                    };
                    // Stored before the next batch is read, so no row is
                    // embedded twice.
                    let (done_tx, done_rx) = mpsc::channel();
                    let job: Job = Box::new(move |m| {
                        let _ = done_tx.send(mnemo_host::backfill::store(m, &embedded));
                    });
                    if writer.send(job).is_err() {
                        return;
                    }
                    match done_rx.recv() {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            tracing::warn!(error = %format!("{e:#}"), "storing embedded vectors failed; will retry");
                            break;
                        }
                        Err(_) => return,
                    }
                }
            }
        })?;
    Ok(())
}
