//! Two jobs at once on two cores: [`beside`] runs one on the calling
//! thread and lends the other to a helper thread, as rayon's `join` does,
//! except that the calling thread's job need not be `Send` (the writer's
//! vector search holds its SQLite connection). The writer's dedup ranks
//! its full text here while it searches the vectors (`near_search`).
//!
//! The helper stays awake, spinning and yielding, for [`BESIDE_SPIN`]
//! after its last job, then parks. A thread spawned per job cost more than
//! it saved: on this machine's VM, waking a parked core took about 0.7 ms
//! a search, more than the ranking it took over (docs/benchmarks.md). When
//! the helper is asleep, or another caller holds it, the caller runs the
//! job itself once its own is done: never later than one after the other.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long the helper waits awake for the next job. The writer's dedup
/// asks once a memory, every 1–2 ms within a batch (`bench serve`'s
/// remember phase); an idle helper costs a core only this long.
pub const BESIDE_SPIN: Duration = Duration::from_millis(2);

const IDLE: u8 = 0;
const POSTED: u8 = 1;
const TAKEN: u8 = 2;
const DONE: u8 = 3;

type Job = *mut (dyn FnMut() + Send + 'static);
type Panic = Box<dyn std::any::Any + Send>;

struct Helper {
    /// Held by the one caller lending a job.
    claimed: AtomicBool,
    state: AtomicU8,
    /// Set while the helper is parked (or about to be).
    asleep: AtomicBool,
    /// The job: written by the caller while `IDLE`, run by the helper
    /// between `TAKEN` and `DONE`.
    job: UnsafeCell<Option<Job>>,
    /// The job's panic, written by the helper before `DONE`.
    panic: UnsafeCell<Option<Panic>>,
    thread: OnceLock<Thread>,
}

// SAFETY: `job` and `panic` are touched by one side at a time, handed over
// by `state`'s release stores and acquire loads (see `beside`).
unsafe impl Sync for Helper {}

/// Runs `a` on this thread and `b` beside it, on the helper when it takes
/// `b` before `a` is done, else here after `a`. Panics as `a` or `b` did.
pub fn beside<A, B: Send>(a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send) -> (A, B) {
    let Some(h) = helper().filter(|h| {
        h.claimed
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }) else {
        return (a(), b());
    };
    let mut b = Some(b);
    let mut out: Option<B> = None;
    let mut run = || out = b.take().map(|b| b());
    let job: *mut (dyn FnMut() + Send + '_) = &mut run;
    // SAFETY: only the lifetime is erased. The job is run (by the helper)
    // only between `POSTED` and `DONE`, and this function does not return,
    // nor unwind, before taking it back or seeing `DONE`.
    let job: Job = unsafe { std::mem::transmute(job) };
    // SAFETY: `IDLE`: the helper does not read the slot.
    unsafe { *h.job.get() = Some(job) };
    h.state.store(POSTED, Ordering::SeqCst);
    if h.asleep.load(Ordering::SeqCst)
        && let Some(t) = h.thread.get()
    {
        t.unpark();
    }
    let mine = catch_unwind(AssertUnwindSafe(a));
    let lent = h
        .state
        .compare_exchange(POSTED, IDLE, Ordering::Acquire, Ordering::Acquire)
        .is_err();
    let mut panic = None;
    if lent {
        let mut spins = 0u32;
        while h.state.load(Ordering::Acquire) != DONE {
            pause(&mut spins);
        }
        // SAFETY: `DONE`: the helper is finished with the slot.
        panic = unsafe { (*h.panic.get()).take() };
        h.state.store(IDLE, Ordering::Release);
    }
    // SAFETY: `IDLE` again, and the job no longer runs anywhere.
    unsafe { *h.job.get() = None };
    h.claimed.store(false, Ordering::Release);
    let mine = mine.unwrap_or_else(|p| resume_unwind(p));
    if let Some(p) = panic {
        resume_unwind(p);
    }
    // Taken back untouched (`b` is still here), or run by the helper.
    let theirs = match (out, b) {
        (Some(theirs), _) => theirs,
        (None, Some(b)) => b(),
        (None, None) => resume_unwind(Box::new("the lent job left no answer")),
    };
    (mine, theirs)
}

/// The process's helper, started on first use; `None` if no thread starts.
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
    *HELPER.get_or_init(|| {
        let h: &'static Helper = Box::leak(Box::new(Helper {
            claimed: AtomicBool::new(false),
            state: AtomicU8::new(IDLE),
            asleep: AtomicBool::new(false),
            job: UnsafeCell::new(None),
            panic: UnsafeCell::new(None),
            thread: OnceLock::new(),
        }));
        let t = thread::Builder::new()
            .name("mnemo-beside".into())
            .spawn(move || serve(h))
            .ok()?;
        let _ = h.thread.set(t.thread().clone());
        Some(h)
    })
}

fn serve(h: &'static Helper) {
    let mut last = Instant::now();
    let mut spins = 0u32;
    loop {
        if h.state
            .compare_exchange(POSTED, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: `TAKEN`: the caller waits for `DONE` before it
            // touches the slot or lets the job's borrows end.
            let run = match unsafe { *h.job.get() } {
                Some(job) => catch_unwind(AssertUnwindSafe(|| unsafe { (*job)() })),
                None => Ok(()),
            };
            if let Err(p) = run {
                unsafe { *h.panic.get() = Some(p) };
            }
            h.state.store(DONE, Ordering::Release);
            last = Instant::now();
            continue;
        }
        if last.elapsed() < BESIDE_SPIN {
            pause(&mut spins);
            continue;
        }
        h.asleep.store(true, Ordering::SeqCst);
        if h.state.load(Ordering::SeqCst) != POSTED {
            thread::park();
        }
        h.asleep.store(false, Ordering::SeqCst);
        last = Instant::now();
    }
}

/// One round of waiting awake: a spin hint, and every 64th round the
/// core offered to any other thread that can run on it.
fn pause(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if spins.is_multiple_of(64) {
        thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_jobs_run_once_and_answer_whichever_thread_runs_them() {
        let data: Vec<u64> = (0..10_000).collect();
        for round in 0..2_000u64 {
            let (a, b) = beside(
                || data.iter().sum::<u64>() + round,
                || data.iter().rev().take(100).sum::<u64>() * round,
            );
            assert_eq!(a, 49_995_000 + round);
            assert_eq!(b, (9_900..10_000).sum::<u64>() * round);
            if round % 500 == 0 {
                // Long enough for the helper to fall asleep.
                thread::sleep(BESIDE_SPIN * 3);
            }
        }
    }

    #[test]
    fn the_lent_job_runs_on_the_helper_when_it_is_awake() {
        let me = thread::current().id();
        // Other tests may hold the helper, or the machine be busy: one
        // job taken is the proof, 10,000 the patience.
        for _ in 0..10_000 {
            let (_, id) = beside(
                || thread::sleep(Duration::from_micros(300)),
                || thread::current().id(),
            );
            if id != me {
                return;
            }
        }
        panic!("the helper took none of 10,000 jobs");
    }

    #[test]
    fn a_panic_on_either_side_is_the_callers_and_the_helper_lives_on() {
        let lent = std::panic::catch_unwind(|| {
            beside(
                || thread::sleep(Duration::from_micros(200)),
                || panic!("lent"),
            )
        });
        assert!(lent.is_err());
        let own = std::panic::catch_unwind(|| beside(|| panic!("own"), || 1));
        assert!(own.is_err());
        assert_eq!(beside(|| 2, || 3), (2, 3));
    }
}
