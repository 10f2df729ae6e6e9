//! The writers: threads that each own a read-write connection and a core
//! instance and run the jobs sent to them in order (`engine.rs` sends them).
//! A SQLite file has one; on Postgres, whose writes lock namespaces, a
//! server runs `MNEMO_WRITERS`, and [`writer_of`] says which takes a
//! namespace's calls, so one namespace's calls keep their order while
//! other namespaces' go on beside them.

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::{Config, Mnemo};

use super::stop::Closed;

/// A call for a core instance, run on its thread.
pub(super) type Job = Box<dyn FnOnce(&mut Mnemo) + Send>;

/// How often an idle writer wakes (to write the ledger when due), and the
/// topic watcher looks at the write counter.
pub(super) const WRITER_TICK: Duration = Duration::from_millis(500);

/// How often an idle writer writes the ledger (the readers' embedding
/// calls). Each write ends every reader connection's page cache and file
/// mapping (SQLite's WAL: a reader that sees a new commit starts over),
/// and a 1,000,000-row store remapped its 1 GB file 13 times a second
/// across the readers while 4 clients only recalled (`strace -c`: 8 ms
/// per `munmap`). A crash loses at most this much of the ledger.
pub(super) const LEDGER_IDLE_FLUSH: Duration = Duration::from_secs(5);

/// Which of `writers` takes `namespace`'s writes: FNV-1a of its bytes,
/// modulo (stable across builds and servers, unlike std's hasher).
pub fn writer_of(namespace: &str, writers: usize) -> usize {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0100_0000_01b3;
    let hash = namespace.bytes().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    });
    (hash % writers.max(1) as u64) as usize
}

/// The first writer's thread: opens the database, then [`writer_loop`].
pub(super) fn spawn_writer(
    config: &Config,
    closed: Arc<Closed>,
) -> anyhow::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel();
    let config = config.clone();
    let stop = closed.0.clone();
    let thread = std::thread::Builder::new()
        .name("mnemo-writer".into())
        .spawn(move || match Mnemo::open(&config) {
            Ok(m) => {
                let _ = ready_tx.send(Ok(()));
                writer_loop(m, rx, closed);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })?;
    stop.keep(thread);
    ready_rx
        .recv()
        .context("the writer died while starting")??;
    Ok(tx)
}

/// Another writer's thread, with an instance the first made.
pub(super) fn spawn_writer_with(
    i: usize,
    mnemo: Mnemo,
    closed: Arc<Closed>,
) -> anyhow::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let stop = closed.0.clone();
    let thread = std::thread::Builder::new()
        .name(format!("mnemo-writer-{i}"))
        .spawn(move || writer_loop(mnemo, rx, closed))?;
    stop.keep(thread);
    Ok(tx)
}

/// A writer: jobs in order, the ledger written after each (and every
/// `LEDGER_IDLE_FLUSH` when idle, for what the others spent), and once
/// more at the end. The database is closed once the last writer's
/// instance is dropped (`closed`), after the full-text builder's thread
/// has ended.
fn writer_loop(mut mnemo: Mnemo, rx: mpsc::Receiver<Job>, closed: Arc<Closed>) {
    let mut flushed = Instant::now();
    loop {
        let ran = match rx.recv_timeout(WRITER_TICK) {
            Ok(job) => {
                job(&mut mnemo);
                true
            }
            Err(mpsc::RecvTimeoutError::Timeout) => false,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if ran || flushed.elapsed() >= LEDGER_IDLE_FLUSH {
            mnemo.ports().flush_ledger();
            flushed = Instant::now();
        }
    }
    mnemo.ports().flush_ledger();
    // The partition builder ends here, not in whichever thread drops the
    // store's shared state last (it may be the builder itself).
    mnemo.ports().store.close_text_builder();
    drop(mnemo);
    drop(closed);
}

/// The writers beside the first (`MNEMO_WRITERS` in all): each a
/// read-write connection of its own, where the store locks per namespace
/// (Postgres); none on a SQLite file, whose one writer is the file's.
pub(super) fn more_writers(
    first: &Mnemo,
    config: &Config,
    writers: usize,
) -> anyhow::Result<Vec<Mnemo>> {
    let mut more = Vec::new();
    while more.len() + 1 < writers {
        match first.writer_beside(config)? {
            Some(m) => more.push(m),
            None => break,
        }
    }
    Ok(more)
}
