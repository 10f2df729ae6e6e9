//! The server's instances of the core and the threads they live on.
//!
//! - **The writers** own the read-write connections: every call that
//!   writes runs on one, one at a time, each in its own transaction, as do
//!   the short jobs the others hand the first (vectors to store, a reader's
//!   effects). A SQLite file has one writer. On Postgres, whose writes lock
//!   namespaces, not the database, there are `MNEMO_WRITERS` (default
//!   `DEFAULT_PG_WRITERS`), each a connection of its own: a namespace's
//!   calls go to one of them by the namespace's hash (so they stay in
//!   order), and a tenant's writes or cycle never queue another's on the
//!   others. The database's locks keep them correct, as they do between
//!   servers.
//! - **The planner** rehearses the writes that call the LLM (a consolidation
//!   cycle, a session's distillation, a reflection, a review, the topic
//!   rebuild) on a connection that forgets what they write, keeping the
//!   LLM's answers; the writer then runs them with those answers and no
//!   network call (`llm/rehearsal.rs`: plan, then apply).
//! - **Readers** (`MNEMO_READERS`, default one per CPU, at least 2) each own
//!   a core instance over a read-only connection; reads (recall, context,
//!   resume, lists, stats, export, ...) run on whichever is free, in parallel
//!   with each other and with the writer (SQLite WAL). A write is committed
//!   before its reply, and every read opens a fresh snapshot, so a client
//!   reads its own writes. The access counts and renewals a read causes
//!   come back as effects the writer applies just after (`storage/reader.rs`),
//!   every read's effects pending at that moment in one transaction.
//! - **Embedding ahead**: the texts a write stores are embedded on the
//!   blocking pool (`AHEAD_PER_CPU` writes per CPU at once) before it
//!   queues on its writer, which then finds the vectors in its cache.
//! - **The embedding worker** finds rows without a vector through a reader
//!   connection, embeds them with no lock held, and hands the vectors to the
//!   writer, which stores those whose text has not changed meanwhile (seed
//!   004's background batches, off the request path).
//!
//! - **The topic watcher** looks at the write counter and, once writes have
//!   been quiet for `TOPIC_DEBOUNCE` (or went on for `TOPIC_MAX_WAIT`),
//!   plans each changed namespace's topic tree on the planner and applies
//!   it on the namespace's writer. Cycles leave the trees to it
//!   (`Config::topics_by_worker`), so no write waits for a clustering.
//!
//! A database that cannot be written (`storage::open_connection`) is served
//! read-only: the readers answer as usual (without counting accesses), every
//! write is refused with a typed `read_only` error, and nothing runs in the
//! background.
//!
//! wasmtime stores and SQLite connections are blocking, so handlers send
//! jobs and await replies; the async executor never blocks.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::embedding::Embeddings;
use crate::llm::rehearsal::{Answers, Script};
use crate::storage::Store;
use crate::{Config, Mnemo};
use anyhow::Context;
use mnemo_core::model::ConsolidateReport;

use super::effects::PendingEffects;
use super::error::ApiError;
use super::stop::{Closed, Stop};
use super::writers::{Job, more_writers, spawn_writer, spawn_writer_with, writer_of};

/// How often the embedding worker looks for rows without a vector.
const BACKFILL_EVERY: Duration = Duration::from_millis(500);
/// Rows per embedding batch (one short write to store them).
const BACKFILL_BATCH: usize = 32;
/// Writes whose texts are embedded at once, ahead of the write, per CPU
/// (`Engines::embed_ahead`): a local model's batch keeps a core busy, so
/// more would only share the cores; a remote provider's call waits on the
/// network, and one per CPU already overlaps the writers' work.
const AHEAD_PER_CPU: usize = 1;
/// Cores the background embedding may use: a local model otherwise takes
/// every core for each batch and recalls wait behind it.
const BACKFILL_THREADS: usize = 1;
/// The background embedding's nice value: on the core it shares with
/// requests, a recall preempts it instead of waiting out its time slice.
const BACKFILL_NICE: i32 = 10;

/// A write that may call the LLM: run once as a rehearsal (`true`), then
/// for real (`false`).
pub(super) type Planned<R> = Arc<dyn Fn(&mut Mnemo, bool) -> R + Send + Sync>;

/// Handles to the writer, the reader pool, the planner and (through the
/// writer) the embedding worker. Cloned into every handler.
#[derive(Clone)]
pub(super) struct Engines {
    /// The writers; the first also takes the jobs of no one namespace.
    writers: Arc<Vec<mpsc::Sender<Job>>>,
    readers: mpsc::Sender<Job>,
    planner: mpsc::Sender<Job>,
    /// Embeds a write's texts before it reaches its writer.
    ahead: Arc<Ahead>,
    /// Whether LLM steps run at all; without them nothing is rehearsed.
    llm_on: bool,
    /// The database cannot be written: writes are refused.
    read_only: bool,
    stop: Stop,
}

impl Engines {
    /// The engines, and (on a database that can be written) a reader
    /// connection for the topic watcher (`topics.rs`), which the server
    /// starts beside them and which rebuilds the trees the cycles change.
    pub(super) fn spawn(mut config: Config) -> anyhow::Result<(Self, Option<Store>)> {
        config.topics_by_worker = true;
        let stop = Stop::default();
        let closed = Arc::new(Closed(stop.clone()));
        let writer_tx = spawn_writer(&config, Arc::clone(&closed))?;
        let (read_tx, read_rx) = mpsc::channel::<Job>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        // The readers and the embedding worker are made on the writer's
        // thread from its instance (they share its vector state, graphs,
        // model and ledger), then moved to threads of their own.
        let (made_tx, made_rx) = mpsc::channel();
        let (readers, writers) = (config.readers, config.writers);
        let reader_config = config.clone();
        let job: Job = Box::new(move |m| {
            let made = (0..readers)
                .map(|_| m.reader(&reader_config))
                .collect::<anyhow::Result<Vec<_>>>()
                .and_then(|rs| {
                    Ok(Made {
                        readers: rs,
                        writers: more_writers(m, &reader_config, writers)?,
                        planner: m.rehearsal(&reader_config)?,
                        store: m.ports().store.reader()?,
                        watcher: m.ports().store.reader()?,
                        embeddings: m.ports().embeddings.share(),
                        ahead: m.ports().embeddings.share(),
                        llm_on: m.llm_on(),
                        read_only: m.ports().store.is_read_only(),
                    })
                });
            let _ = made_tx.send(made);
        });
        writer_tx
            .send(job)
            .map_err(|_| anyhow::anyhow!("the writer stopped while starting"))?;
        let made = made_rx
            .recv()
            .context("the writer died while making the readers")??;
        // Read-only: a read's effects are dropped, not handed to the writer.
        let effects_to = (!made.read_only).then(|| PendingEffects::new(writer_tx.clone()));
        for (i, instance) in made.readers.into_iter().enumerate() {
            stop.keep(spawn_reader(
                i,
                instance,
                read_rx.clone(),
                effects_to.clone(),
            )?);
        }
        if !made.read_only {
            stop.keep(spawn_embedder(
                made.store,
                made.embeddings,
                writer_tx.clone(),
                stop.clone(),
            )?);
        }
        let mut writers = vec![writer_tx];
        for (i, instance) in made.writers.into_iter().enumerate() {
            writers.push(spawn_writer_with(i + 1, instance, Arc::clone(&closed))?);
        }
        drop(closed);
        let (planner, planner_thread) = spawn_planner(made.planner)?;
        stop.keep(planner_thread);
        let engines = Self {
            writers: Arc::new(writers),
            readers: read_tx,
            planner,
            ahead: Arc::new(Ahead::new(made.ahead)),
            llm_on: made.llm_on,
            read_only: made.read_only,
            stop,
        };
        let watcher = (!made.read_only).then_some(made.watcher);
        Ok((engines, watcher))
    }

    /// How these engines are stopped.
    pub(super) fn stop(&self) -> &Stop {
        &self.stop
    }

    /// Whether the database is served read-only.
    pub(super) fn read_only(&self) -> bool {
        self.read_only
    }

    /// The refusal of a write to a read-only database.
    fn refused(&self) -> Result<(), ApiError> {
        if self.read_only {
            return Err(ApiError::read_only());
        }
        Ok(())
    }

    /// A write that may call the LLM, planned then applied: rehearsed on
    /// the planner (its LLM calls made there, no lock held), then run on
    /// the writer at the same pinned time with the rehearsal's answers.
    /// `done` gets the real run's answer. Without LLM steps it just runs
    /// on the writer. `namespace`: the one it writes, if one (its writer).
    pub(super) fn planned<R: Send + 'static>(
        &self,
        namespace: Option<&str>,
        f: Planned<R>,
        done: impl FnOnce(R) + Send + 'static,
    ) -> bool {
        if self.read_only {
            return false;
        }
        let writer = self.writer(namespace).clone();
        if !self.llm_on {
            return writer.send(Box::new(move |m| done(f(m, false)))).is_ok();
        }
        let at = crate::ledger::now_ms();
        let script = Arc::new(Script::default());
        let rehearse: Job = Box::new(move |p| {
            p.rehearse(&script, at, |p| f(p, true));
            // The planner waits for the apply: the next rehearsal then reads
            // what this one wrote (a circuit opened, a session's failure
            // recorded, a budget spent), not the state before it.
            let (applied_tx, applied_rx) = mpsc::channel::<()>();
            let apply: Job = Box::new(move |m| {
                let out = m.scripted(Answers::Replay(script.clone()), at, |m| f(m, false));
                if script.misses() > 0 {
                    tracing::info!(
                        planned = script.len(),
                        changed = script.misses(),
                        "applied a planned write; steps whose input changed since planning wait for the next run"
                    );
                }
                done(out);
                let _ = applied_tx.send(());
            });
            if writer.send(apply).is_err() {
                tracing::warn!("the writer stopped before applying a planned write");
                return;
            }
            let _ = applied_rx.recv();
        });
        self.planner.send(rehearse).is_ok()
    }

    /// [`Engines::planned`], awaiting the real run's answer.
    pub(super) async fn run_planned<R: Send + 'static>(
        &self,
        namespace: Option<String>,
        f: impl Fn(&mut Mnemo, bool) -> R + Send + Sync + 'static,
    ) -> Result<R, ApiError> {
        self.refused()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        if !self.planned(namespace.as_deref(), Arc::new(f), move |r| {
            let _ = tx.send(r);
        }) {
            return Err(ApiError::unavailable("the engine stopped"));
        }
        rx.await
            .map_err(|_| ApiError::unavailable("the engine dropped the request"))
    }

    /// Queues a background job on the planner (work that reads a while and
    /// writes nothing, such as a topic plan); `false` once it stopped.
    pub(super) fn background(&self, job: Job) -> bool {
        self.planner.send(job).is_ok()
    }

    /// Runs `f` on the planner, live (a dry run that may call the LLM but
    /// writes nothing: it must not hold the writer either).
    pub(super) async fn dry<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        on(&self.planner, f).await
    }

    /// Runs `f`, which writes no one namespace, on the first writer and
    /// awaits its answer.
    pub(super) async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        self.refused()?;
        on(self.writer(None), f).await
    }

    /// Runs `f`, which writes `namespace`, on its writer and awaits its
    /// answer.
    pub(super) async fn run_in<R: Send + 'static>(
        &self,
        namespace: String,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        self.refused()?;
        on(self.writer(Some(&namespace)), f).await
    }

    /// The writer of `namespace`'s calls (the first for none), so one
    /// namespace's calls keep their order.
    fn writer(&self, namespace: Option<&str>) -> &mpsc::Sender<Job> {
        let i = namespace.map_or(0, |ns| writer_of(ns, self.writers.len()));
        &self.writers[i]
    }

    /// Runs `f` where what earlier requests queued is already written (the
    /// usage ledger a read's provider calls append to, flushed by the
    /// writer): on the writer, or on a reader when the server is read-only
    /// (and nothing is queued).
    pub(super) async fn settled<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        if self.read_only {
            return self.read(f).await;
        }
        on(self.writer(None), f).await
    }

    /// Runs `f` on the first free reader and awaits its answer. `f` must
    /// only read: the reader's connection refuses writes.
    pub(super) async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Mnemo) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        on(&self.readers, f).await
    }

    /// The vectors of the texts a write is about to store, computed apart
    /// from the writer (in parallel with it) and primed into its cache by
    /// [`Primed::prime`]. `None` when the provider fails: the write then
    /// embeds by itself and reports the failure as usual.
    ///
    /// Not on a reader: a write waiting there for its vector queued behind
    /// every recall before it (on Postgres under 32 clients, most of a
    /// remember's ~300 ms).
    pub(super) async fn embed_ahead(&self, texts: Vec<String>) -> Primed {
        let texts: Vec<String> = texts.iter().map(|t| t.trim().to_string()).collect();
        // The slot goes with the task: a request given up on (its client
        // gone) still holds it until the provider answers.
        let Ok(slot) = Arc::clone(&self.ahead.slots).acquire_owned().await else {
            return Primed(None);
        };
        let ahead = Arc::clone(&self.ahead);
        let vectors = tokio::task::spawn_blocking(move || {
            let v = ahead.embeddings.embed_batch(&texts);
            drop(slot);
            v.ok().map(|v| (texts, v))
        })
        .await
        .ok()
        .flatten();
        Primed(vectors)
    }

    /// Seed 003's session-switch trigger: distil the sessions a new one left
    /// open, on the writer after the reply (never in the request).
    pub(super) fn consolidate_sessions_later(&self, namespace: &str, ids: &[String]) {
        let written = namespace.to_string();
        let (namespace, ids) = (namespace.to_string(), ids.to_vec());
        let distil: Planned<_> = Arc::new(move |m, _| m.consolidate_sessions(&namespace, &ids));
        let done = |outcome: Result<ConsolidateReport, crate::runtime::CallError>| match outcome {
            Ok(r) => tracing::info!(
                sessions = r.sessions.len(),
                facts = r.facts_added,
                warnings = r.warnings.len(),
                "consolidated the sessions a new one left open"
            ),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "session consolidation failed; the nightly run retries")
            }
        };
        if !self.planned(Some(&written), distil, done) {
            tracing::warn!("the engine stopped before consolidating the open sessions");
        }
    }
}

/// The provider (shared with every instance) and the slots of
/// [`Engines::embed_ahead`].
struct Ahead {
    embeddings: Embeddings,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Ahead {
    fn new(embeddings: Embeddings) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            embeddings,
            slots: Arc::new(tokio::sync::Semaphore::new(cpus * AHEAD_PER_CPU)),
        }
    }
}

/// Vectors computed ahead of a write (see [`Engines::embed_ahead`]).
pub(super) struct Primed(Option<(Vec<String>, Vec<Vec<f32>>)>);

impl Primed {
    /// Hands the vectors to the writer's embedding cache.
    pub(super) fn prime(self, m: &Mnemo) {
        if let Some((texts, vectors)) = self.0 {
            m.ports().embeddings.prime(&texts, vectors);
        }
    }
}

/// What the writer makes for the other threads at start.
struct Made {
    readers: Vec<Mnemo>,
    writers: Vec<Mnemo>,
    planner: Mnemo,
    store: Store,
    watcher: Store,
    embeddings: Embeddings,
    ahead: Embeddings,
    llm_on: bool,
    read_only: bool,
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

/// An engine thread, kept by [`Stop::keep`] to be joined on close.
type Thread = std::thread::JoinHandle<()>;

/// The planner's thread: rehearsals, one at a time, and dry runs.
fn spawn_planner(mut mnemo: Mnemo) -> anyhow::Result<(mpsc::Sender<Job>, Thread)> {
    let (tx, rx) = mpsc::channel::<Job>();
    let thread = std::thread::Builder::new()
        .name("mnemo-planner".into())
        .spawn(move || {
            for job in rx {
                job(&mut mnemo);
            }
        })?;
    Ok((tx, thread))
}

/// A reader's thread: takes the next read job, runs it, and hands the
/// effects the call kept to the writer.
fn spawn_reader(
    i: usize,
    mut mnemo: Mnemo,
    jobs: Arc<Mutex<mpsc::Receiver<Job>>>,
    effects_to: Option<PendingEffects>,
) -> anyhow::Result<Thread> {
    Ok(std::thread::Builder::new()
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
                let Some(pending) = effects_to.as_ref().filter(|_| !effects.is_empty()) else {
                    continue;
                };
                if !pending.add(effects) {
                    return;
                }
            }
        })?)
}

/// The embedding worker: every `BACKFILL_EVERY`, a batch of rows without a
/// vector (read through its own connection), embedded with no lock held,
/// stored by the writer in one short job. A provider failure is logged and
/// the rows stay without a vector, so the next round retries them.
fn spawn_embedder(
    store: Store,
    embeddings: Embeddings,
    writer: mpsc::Sender<Job>,
    stop: Stop,
) -> anyhow::Result<Thread> {
    // The local model's matrix products run on rayon: inside this pool
    // they use `BACKFILL_THREADS` cores, leaving the rest to requests.
    // Its threads end after the pool is dropped, with this thread.
    let keeper = stop.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(BACKFILL_THREADS)
        .start_handler(|_| yield_to_requests())
        .spawn_handler(move |thread| {
            keeper.keep(
                std::thread::Builder::new()
                    .name("mnemo-embedder-math".into())
                    .spawn(|| thread.run())?,
            );
            Ok(())
        })
        .build()?;
    Ok(std::thread::Builder::new()
        .name("mnemo-embedder".into())
        .spawn(move || {
            yield_to_requests();
            // The full-text partitions saved beside the database, loaded
            // before the first searches need them.
            store.text_preload();
            while stop.pause(BACKFILL_EVERY) {
                loop {
                // Every server keeps its own derived full-text index current.
                if let Err(e) = store.text_catch_up_all() {
                    tracing::warn!(error = %format!("{e:#}"), "applying text changes to the full-text index failed; will retry");
                }
                // And holds the sealed vector segments no index serves yet.
                if let Err(e) = store.tail_catch_up() {
                    tracing::warn!(error = %format!("{e:#}"), "reading sealed vector segments into memory failed; will retry");
                }
                    // On a shared Postgres, one server embeds for all, and
                // folds the full-text counts the writes left pending, and
                // moves the large namespaces' vectors into the HNSW graph.
                if !store.lead(crate::storage::Lead::Backfill) {
                    break;
                }
                if let Err(e) = store.fold_counts() {
                    tracing::warn!(error = %format!("{e:#}"), "folding the full-text counts failed; will retry");
                }
                if let Err(e) = store.grow_graphs() {
                    tracing::warn!(error = %format!("{e:#}"), "moving vectors into the HNSW graph failed; will retry");
                }
                // The log of text changes kept short by the writer (one
                // server's, on a shared Postgres).
                if store.text_prune_due() {
                    let job: Job = Box::new(|m| {
                        if let Err(e) = m.ports().store.prune_text_changes() {
                            tracing::warn!(error = %format!("{e:#}"), "pruning the text change log failed; will retry");
                        }
                    });
                    if writer.send(job).is_err() {
                        return;
                    }
                }
                let batch = match crate::backfill::pending(&store, BACKFILL_BATCH) {
                        Ok(b) if b.is_empty() => break,
                        Ok(b) => b,
                        Err(e) => {
                            tracing::warn!(error = %format!("{e:#}"), "looking for rows to embed failed; will retry");
                            break;
                        }
                    };
                    let embedded = match pool.install(|| crate::backfill::embed(&embeddings, batch)) {
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
                        let _ = done_tx.send(crate::backfill::store(m, &embedded));
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
        })?)
}

/// Lowers the calling thread's CPU priority to `BACKFILL_NICE`.
fn yield_to_requests() {
    crate::priority::lower(BACKFILL_NICE);
}
