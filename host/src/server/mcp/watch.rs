//! Resource subscriptions: a client subscribed to a `mnemo://` resource is
//! told (`notifications/resources/updated`) when what it would read there
//! changes. Both forms of the protocol are served: `subscriptions/listen`
//! (2026-07-28: a long request whose filter names the URIs) and the earlier
//! `resources/subscribe` of a session (stdio).
//!
//! A watch compares what it would read, not a guess at what a write
//! touched: each tick it reads the store's change counter (one small read,
//! bumped by every memory write, on every server of a shared Postgres) and,
//! when it moved or every [`REFRESH`] (a topic rebuild or a reinforcement
//! does not move it), reads each watched resource again and notifies the
//! ones whose JSON differs. No request waits for it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::resources::Target;
use crate::server::engine::Engines;

/// How often a watch reads the store's change counter.
pub const TICK: Duration = Duration::from_millis(500);
/// How often a watch reads its resources again whatever the counter says.
pub const REFRESH: Duration = Duration::from_secs(10);

/// The resources one client watches, with a digest of each as last seen
/// (`None`: not readable, e.g. a memory not yet written), and whether a
/// watch already runs for them (one per client, however often it
/// subscribes and unsubscribes).
#[derive(Clone, Default)]
pub(super) struct Watched {
    seen: Arc<Mutex<HashMap<Target, Option<u64>>>>,
    running: Arc<AtomicBool>,
}

impl Watched {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Target, Option<u64>>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True the first time only: the caller starts the watch.
    pub(super) fn start(&self) -> bool {
        !self.running.swap(true, Ordering::AcqRel)
    }

    /// Starts watching `target` from what it reads now.
    pub(super) async fn add(&self, engine: &Engines, target: Target) {
        let seen = digest(engine, &target).await;
        self.lock().insert(target, seen);
    }

    pub(super) fn remove(&self, target: &Target) {
        self.lock().remove(target);
    }
}

async fn digest(engine: &Engines, target: &Target) -> Option<u64> {
    // Looking for a change shows nothing to anyone: it renews nothing.
    let json = target.read(engine, true).await.ok()?;
    let mut h = DefaultHasher::new();
    json.hash(&mut h);
    Some(h.finish())
}

/// Runs a watch until `notify` fails (the client is gone) or `stop`
/// resolves: each changed resource's URI goes to `notify`.
pub(super) async fn run<N, S, F>(engine: Engines, watched: Watched, notify: N, stop: F)
where
    N: Fn(String) -> S,
    S: Future<Output = bool>,
    F: Future<Output = ()>,
{
    let watching = async {
        let mut counter = changes(&engine).await;
        let mut refreshed = Instant::now();
        loop {
            tokio::time::sleep(TICK).await;
            let now = changes(&engine).await;
            if now == counter && refreshed.elapsed() < REFRESH {
                continue;
            }
            counter = now;
            refreshed = Instant::now();
            let targets: Vec<(Target, Option<u64>)> = watched
                .lock()
                .iter()
                .map(|(t, d)| (t.clone(), *d))
                .collect();
            for (target, before) in targets {
                let after = digest(&engine, &target).await;
                if after == before {
                    continue;
                }
                if let Some(seen) = watched.lock().get_mut(&target) {
                    *seen = after;
                }
                if !notify(target.uri()).await {
                    return;
                }
            }
        }
    };
    tokio::select! {
        _ = watching => {}
        _ = stop => {}
    }
}

/// The store's change counter (0 when it cannot be read: the next tick
/// tries again).
async fn changes(engine: &Engines) -> u64 {
    engine
        .read(|m| m.ports().store.memories_changed())
        .await
        .unwrap_or(0)
}
