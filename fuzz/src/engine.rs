//! One mnemo per fuzzing process: the real core component on a SQLite file
//! in a temporary folder, with the hash embedder and no LLM. It is replaced
//! by a fresh store every [`FRESH_EVERY`] inputs, so the store stays small
//! and every input runs at about the same speed.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use mnemo_core::CoreError;
use mnemo_host::runtime::{CallError, Runtime};
use mnemo_host::{Config, Mnemo};

/// Inputs served by one store before a fresh one.
const FRESH_EVERY: u32 = 2_000;

pub struct Harness {
    pub m: Mnemo,
    /// (namespace, id) of memories created so far: what `Pick::Known` names.
    pub known: Vec<(String, String)>,
    inputs: u32,
    /// Inputs served since the process started (unique names per input).
    pub inputs_seen: u64,
    _dir: tempfile::TempDir,
}

thread_local! {
    static RUNTIME: Arc<Runtime> = Runtime::new(Some(&std::env::temp_dir().join("mnemo-fuzz-cache")))
        .expect("the core component loads");
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

/// A configuration on `dir` (hash embedder, no LLM, no NER plugins).
pub fn config(dir: &Path) -> Config {
    Config::with_hash_embedder(dir.join("fuzz.db"), dir.to_path_buf())
}

/// Runs `f` on this process's mnemo.
pub fn with_mnemo<R>(f: impl FnOnce(&mut Harness) -> R) -> R {
    HARNESS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|h| h.inputs >= FRESH_EVERY) {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let m = RUNTIME
                .with(|rt| Mnemo::open_with(rt, &config(dir.path())))
                .expect("mnemo opens");
            *slot = Some(Harness {
                m,
                known: Vec::new(),
                inputs: 0,
                inputs_seen: slot.as_ref().map_or(0, |h| h.inputs_seen),
                _dir: dir,
            });
        }
        let h = slot.as_mut().expect("just made");
        h.inputs += 1;
        f(h)
    })
}

/// Rows of the tables a write changes: a call that failed must leave them
/// as they were.
pub fn rows(m: &Mnemo) -> (u64, u64, u64) {
    let i = m.ports().store.integrity().expect("integrity counts");
    (
        i.memories,
        i.episodes,
        i.memory_fts_rows + i.episode_fts_rows,
    )
}

/// The answer, or `None` for a typed error; panics on what is a bug
/// whatever the input: a trap, or a storage error (the store refused what
/// the core let through).
pub fn typed<T>(what: &str, r: Result<T, CallError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(CallError::Trap(t)) => panic!("{what}: the core trapped: {t}"),
        Err(CallError::Core(CoreError::Storage(e))) => {
            panic!("{what}: a storage error from input: {e}")
        }
        Err(CallError::Core(_)) => None,
    }
}
