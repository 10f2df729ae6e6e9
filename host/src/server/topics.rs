//! The topic watcher (seed 004 §6.4): once a store's writes have been
//! quiet for `TOPIC_DEBOUNCE`, or have gone on for `TOPIC_MAX_WAIT`, each
//! namespace's topic tree is planned on the planner, where no write waits
//! for the clustering, and a tree that changed is applied on the
//! namespace's writer in one short write. Consolidation cycles on a server
//! leave the trees to it (`Config::topics_by_worker`).

use std::collections::HashMap;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::engine::{Engines, Planned};
use super::writers::{Job, WRITER_TICK};
use crate::storage::Store;

/// Seed 004 §6.4: the topic trees are rebuilt after a 5-second quiet window
/// following writes (each write restarts it), and at start when none is cached.
const TOPIC_DEBOUNCE: Duration = Duration::from_secs(5);
/// Writes that never pause never give that quiet window: after this long
/// the trees are rebuilt anyway, so under steady load a tree lags its
/// namespace by at most about a minute (our bound; the seed has none).
const TOPIC_MAX_WAIT: Duration = Duration::from_secs(60);
/// A namespace's tree is planned again no sooner than this many times its
/// last planning took, so the topic worker uses at most 1/20 of a core
/// whatever the writes: a clustering grows with the square of a namespace
/// (0.5 s at 6,400 memories), and a store of sporadic writes gives a quiet
/// window every few seconds. A namespace of a hundred memories (about a
/// millisecond) still gets its tree within the debounce.
const TOPIC_SPACING: u32 = 20;

/// The watcher's thread (see the module doc); at start, a store without
/// a tree gets one at once.
pub(super) fn spawn_topic_watcher(store: Store, engines: Engines) -> anyhow::Result<()> {
    let stop = engines.stop().clone();
    let thread = std::thread::Builder::new()
        .name("mnemo-topics".into())
        .spawn(move || {
            let mut due = store.needs_topic_tree().unwrap_or(false).then(Instant::now);
            let mut since: Option<Instant> = None;
            // When each namespace may be planned again.
            let mut spacing: HashMap<String, Instant> = Default::default();
            let mut seen = store.memories_changed();
            while engines.stop().pause(WRITER_TICK) {
                let changes = store.memories_changed();
                if changes != seen {
                    seen = changes;
                    due = Some(Instant::now() + TOPIC_DEBOUNCE);
                    since.get_or_insert_with(Instant::now);
                }
                let waited = since.is_some_and(|t| t.elapsed() >= TOPIC_MAX_WAIT);
                if due.is_none_or(|d| d > Instant::now()) && !waited {
                    continue;
                }
                // On a shared Postgres, one server rebuilds for all (the
                // trees are stored, so every server serves them).
                if !store.lead(crate::storage::Lead::Topics) {
                    continue;
                }
                (due, since) = (None, None);
                let namespaces = match store.namespaces() {
                    Ok(namespaces) => namespaces,
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "could not list the namespaces for the topic rebuild");
                        continue;
                    }
                };
                for ns in namespaces {
                    // A namespace rebuilt lately waits out its spacing,
                    // then is looked at again.
                    if let Some(at) = spacing.get(&ns).filter(|at| **at > Instant::now()) {
                        due = Some(due.map_or(*at, |d| d.min(*at)));
                        continue;
                    }
                    let Some(took) = rebuild_topics_of(&engines, ns.clone()) else {
                        return;
                    };
                    spacing.insert(ns, Instant::now() + took * TOPIC_SPACING);
                }
            }
        })?;
    stop.keep(thread);
    Ok(())
}

/// One namespace's tree: planned on the planner, applied on its writer when
/// it changed. How long the planning took; `None` once the engines stopped.
fn rebuild_topics_of(engines: &Engines, namespace: String) -> Option<Duration> {
    let (tx, rx) = mpsc::channel();
    let of = namespace.clone();
    let plan: Job = Box::new(move |m| {
        let started = Instant::now();
        let plan = m.plan_topics(&of);
        let _ = tx.send((plan, started.elapsed()));
    });
    engines.background(plan).then_some(())?;
    let (plan, took) = rx.recv().ok()?;
    let plan = match plan {
        Ok(Some(plan)) => plan,
        Ok(None) => return Some(took),
        Err(e) => {
            tracing::warn!(namespace, error = %e, "topic planning failed; the next write retries");
            return Some(took);
        }
    };
    let apply: Planned<_> = Arc::new(move |m, _| m.apply_topics(plan.clone()));
    let writer = namespace.clone();
    let sent = engines.planned(Some(&writer), apply, move |outcome| match outcome {
        Ok(n) => tracing::info!(namespace, topics = n, "topic tree rebuilt after writes"),
        Err(e) => {
            tracing::warn!(namespace, error = %e, "topic rebuild failed; the next write retries")
        }
    });
    sent.then_some(took)
}
