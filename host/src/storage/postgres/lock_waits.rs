//! How long writes waited for their write locks on Postgres, by namespace
//! (issue 43): what `/metrics` shows an operator whose writes queue. A
//! process-wide tally, since every connection of a server adds to it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::storage::Locks;

/// Namespaces tallied by name; past this many the rest share one label,
/// so a store of many tenants keeps the scrape bounded.
const MAX_NAMED: usize = 1_000;
/// The label of the namespaces past `MAX_NAMED`.
const OTHERS: &str = "(others)";
/// The label of a whole-store write.
pub const ALL: &str = "(all)";

/// One namespace's waits.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct LockWaits {
    pub count: u64,
    pub seconds: f64,
    pub max_seconds: f64,
}

static WAITS: Mutex<BTreeMap<String, LockWaits>> = Mutex::new(BTreeMap::new());

/// Adds one write's wait for `locks` (to each namespace it locked).
pub fn record(locks: &Locks, waited: Duration) {
    let Ok(mut waits) = WAITS.lock() else { return };
    let names: Vec<&str> = match locks {
        Locks::All => vec![ALL],
        Locks::Namespaces(names) => names.iter().map(String::as_str).collect(),
    };
    let seconds = waited.as_secs_f64();
    for name in names {
        let label = if waits.contains_key(name) || waits.len() < MAX_NAMED {
            name
        } else {
            OTHERS
        };
        let w = waits.entry(label.to_string()).or_default();
        w.count += 1;
        w.seconds += seconds;
        w.max_seconds = w.max_seconds.max(seconds);
    }
}

/// Every namespace's waits since the process started.
pub fn snapshot() -> BTreeMap<String, LockWaits> {
    WAITS.lock().map(|w| w.clone()).unwrap_or_default()
}
