//! Where a core call's time goes: the wall time of each host import the
//! core makes (storage, embedding, LLM, NER), summed per import while
//! switched on. `mnemo-lab eval locomo --timings` prints it beside recall's
//! latency, so a claim about what bounds recall's p50 can be rerun. Off
//! (the default), an import pays one relaxed atomic load.
//!
//! One table for the process: meant for a single caller at a time (the
//! evaluation), not for a server's concurrent requests.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static TABLE: Mutex<BTreeMap<&'static str, (u64, Duration)>> = Mutex::new(BTreeMap::new());

/// One import's calls and their summed wall time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportTime {
    /// The WIT name of the import (`fts-search`, `embed`, …).
    pub import: &'static str,
    pub calls: u64,
    pub total: Duration,
}

/// Starts (or stops) timing imports; starting clears what was summed.
pub fn record(on: bool) {
    if on {
        TABLE.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
    ON.store(on, Ordering::Relaxed);
}

/// What was summed since [`record`]`(true)`, the slowest import first.
pub fn summed() -> Vec<ImportTime> {
    let table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut out: Vec<ImportTime> = table
        .iter()
        .map(|(&import, &(calls, total))| ImportTime {
            import,
            calls,
            total,
        })
        .collect();
    out.sort_by(|a, b| b.total.cmp(&a.total).then(a.import.cmp(b.import)));
    out
}

/// Runs one import, timing it when recording.
pub(super) fn timed<T>(import: &'static str, call: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return call();
    }
    let started = Instant::now();
    let out = call();
    let took = started.elapsed();
    let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = table.entry(import).or_default();
    entry.0 += 1;
    entry.1 += took;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Other tests may call imports meanwhile: these names are the test's own.
    #[test]
    fn imports_are_summed_only_while_recording() {
        let find = |name: &str| summed().into_iter().find(|t| t.import == name);
        timed("test-before", || ());
        record(true);
        timed("test-slow", || std::thread::sleep(Duration::from_millis(2)));
        timed("test-slow", || ());
        timed("test-fast", || ());
        record(false);
        timed("test-slow", || ());
        assert_eq!(find("test-before"), None, "not recording yet");
        let slow = find("test-slow").expect("recorded");
        assert_eq!(
            slow.calls, 2,
            "the call after recording stopped is not counted"
        );
        assert!(slow.total >= Duration::from_millis(2));
        assert_eq!(find("test-fast").map(|t| t.calls), Some(1));
        let order: Vec<&str> = summed().iter().map(|t| t.import).collect();
        let at = |n: &str| order.iter().position(|&o| o == n);
        assert!(
            at("test-slow") < at("test-fast"),
            "slowest first: {order:?}"
        );
        record(true);
        assert_eq!(find("test-slow"), None, "starting again clears the table");
        record(false);
    }
}
