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
    /// The engines' threads, joined once the database is closed, so that
    /// a close returns with none of them left.
    threads: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
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

    /// Keeps an engine thread, to be joined by [`Stop::wait_closed`]: one
    /// that ends by itself before the database closes (each holds a way to
    /// the writer, or ends with the stop's flag or the engines' queues).
    /// The threads that have ended already are let go.
    pub(super) fn keep(&self, thread: std::thread::JoinHandle<()>) {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
    }

    /// Waits up to `timeout` for the writers to close the database, then
    /// for the engines' threads to end (the writers signal as their last
    /// step; the others have let go of the writers before).
    pub(super) fn wait_closed(&self, timeout: Duration) -> bool {
        let (closed, signal) = &*self.closed;
        let guard = closed.lock().unwrap_or_else(|e| e.into_inner());
        let done = signal
            .wait_timeout_while(guard, timeout, |closed| !*closed)
            .map(|(closed, _)| *closed)
            .unwrap_or(false);
        if done {
            let threads =
                std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
            for t in threads {
                let _ = t.join();
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
