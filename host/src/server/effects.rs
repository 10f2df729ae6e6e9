//! Reads' effects on their way to the writer: the access counts and
//! renewals a read causes (`storage/reader.rs`) are applied by the writer
//! just after the read, every read's effects pending at that moment in one
//! transaction.

use std::sync::{Arc, Mutex, mpsc};

use crate::storage::{Effect, Locks};

use super::writers::Job;

/// Attempts at writing a batch of reads' effects before it is dropped: each
/// waits up to the store's lock timeout (5 s on Postgres, SQLite's busy
/// timeout) for the namespaces it touches.
const FLUSH_ATTEMPTS: u32 = 3;

/// Reads' effects waiting for the writer. The first read to leave some
/// queues one flush job; reads finishing before the writer gets to it add
/// theirs to the same batch, and the flush applies them all in one
/// transaction. Under load the writer then commits once per batch, not
/// once per read (on Postgres each commit also takes the write lock).
#[derive(Clone)]
pub(super) struct PendingEffects {
    batch: Arc<Mutex<Vec<Effect>>>,
    writer: mpsc::Sender<Job>,
}

impl PendingEffects {
    pub(super) fn new(writer: mpsc::Sender<Job>) -> Self {
        Self {
            batch: Arc::new(Mutex::new(Vec::new())),
            writer,
        }
    }

    /// Adds a read's effects, queueing a flush unless one is pending;
    /// false once the writer has stopped.
    pub(super) fn add(&self, effects: Vec<Effect>) -> bool {
        let first = {
            let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
            let first = batch.is_empty();
            batch.extend(effects);
            first
        };
        if !first {
            return true;
        }
        self.writer.send(self.flush(1)).is_ok()
    }

    /// The job that applies the pending batch; attempt `attempt` of
    /// `FLUSH_ATTEMPTS`. A batch that cannot be written (a namespace's lock
    /// held past the lock timeout by a write on another writer or server)
    /// goes back to the queue with the effects of the reads since, and is
    /// tried again after the writer's next jobs; only the last attempt's
    /// failure drops it, with a warning.
    fn flush(&self, attempt: u32) -> Job {
        let this = self.clone();
        Box::new(move |m| {
            let effects =
                std::mem::take(&mut *this.batch.lock().unwrap_or_else(|e| e.into_inner()));
            if effects.is_empty() {
                return;
            }
            // Increments and a time set to now commute with one another,
            // not with a cycle that rewrites the row it read: the flush
            // holds the locks of the namespaces it touches.
            let ids: Vec<String> = effects
                .iter()
                .flat_map(|e| match e {
                    Effect::Touch(ids, _) | Effect::Renew(ids, _) => ids.clone(),
                    Effect::Decision(_) => Vec::new(),
                })
                .collect();
            let done = m
                .ports()
                .store
                .namespaces_of(&ids)
                .map_err(anyhow::Error::from)
                .and_then(|namespaces| {
                    let locks = Locks::each(namespaces.iter().map(String::as_str));
                    m.atomically(locks, |m| -> anyhow::Result<()> {
                        m.ports().store.apply_effects(&effects)?;
                        Ok(())
                    })
                });
            let Err(e) = done else { return };
            if attempt >= FLUSH_ATTEMPTS {
                tracing::warn!(error = %format!("{e:#}"), effects = effects.len(), attempts = attempt, "reads' access counts and decisions could not be written; dropped");
                return;
            }
            tracing::info!(error = %format!("{e:#}"), effects = effects.len(), attempt, "reads' access counts and decisions could not be written yet; kept for another attempt");
            {
                let mut batch = this.batch.lock().unwrap_or_else(|e| e.into_inner());
                let newer = std::mem::replace(&mut *batch, effects);
                batch.extend(newer);
            }
            // The batch is not empty now, so no read queues a flush: this
            // does (a stopped writer has dropped the batch anyway).
            let _ = this.writer.send(this.flush(attempt + 1));
        })
    }
}
