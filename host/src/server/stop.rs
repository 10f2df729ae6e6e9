//! Stopping the engines: a flag the threads that loop by themselves look at
//! between their rounds, and the signal that the writer has closed the
//! database (`engine.rs`; `Embedded::close` in `mod.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often a pausing thread looks at the flag: the longest a stop waits
/// for one.
const STOP_CHECK: Duration = Duration::from_millis(500);

/// Stopping the engines (a program embedding mnemo closes it): the threads
/// that loop by themselves (scheduler, topic watcher, embedding worker) see
/// the flag and end; the writer, readers and planner end once nothing can
/// send them a job; the writer's end closes the database.
#[derive(Clone, Default)]
pub(super) struct Stop {
    flag: Arc<AtomicBool>,
    closed: Arc<(Mutex<bool>, Condvar)>,
    /// The writers' threads, joined once the database is closed, so that
    /// a close returns with none of them left.
    writers: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
}

impl Stop {
    pub(super) fn raise(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Sleeps `d` (in `STOP_CHECK` slices); false once stopped.
    pub(super) fn pause(&self, d: Duration) -> bool {
        let until = Instant::now() + d;
        while !self.flag.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(STOP_CHECK));
        }
        false
    }

    /// Keeps a writer's thread, to be joined by [`Stop::wait_closed`].
    pub(super) fn keep(&self, writer: std::thread::JoinHandle<()>) {
        self.writers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(writer);
    }

    /// Waits up to `timeout` for the writers to close the database, then
    /// for their threads to end (they signal as their last step).
    pub(super) fn wait_closed(&self, timeout: Duration) -> bool {
        let (closed, signal) = &*self.closed;
        let guard = closed.lock().unwrap_or_else(|e| e.into_inner());
        let done = signal
            .wait_timeout_while(guard, timeout, |closed| !*closed)
            .map(|(closed, _)| *closed)
            .unwrap_or(false);
        if done {
            let writers =
                std::mem::take(&mut *self.writers.lock().unwrap_or_else(|e| e.into_inner()));
            for w in writers {
                let _ = w.join();
            }
        }
        done
    }
}

/// Dropped by the writer's thread after its instance: the database is closed.
pub(super) struct Closed(pub(super) Stop);

impl Drop for Closed {
    fn drop(&mut self) {
        let (closed, signal) = &*self.0.closed;
        *closed.lock().unwrap_or_else(|e| e.into_inner()) = true;
        signal.notify_all();
    }
}
