//! Time and randomness for the core's `Clock` port: the wall clock, or a
//! clock the caller drives (`mnemo-lab simulate` runs 90 days in minutes).

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use mnemo_core::model::Millis;
use mnemo_core::ports::Clock;

/// The wall clock unless `driven` is set; a driven clock also makes the
/// ids it seeds reproducible (a counter instead of OS randomness).
#[derive(Debug, Clone, Default)]
pub struct HostClock {
    driven: Option<Arc<AtomicI64>>,
    counter: Arc<AtomicU64>,
    /// Stopped at this time for one call (a rehearsal and the real run of
    /// the same write see the same "now", so their prompts agree).
    pub pinned: Option<Millis>,
}

impl HostClock {
    /// A clock that reads `now` (milliseconds since the Unix epoch), which
    /// its owner moves forward.
    pub fn driven(now: Arc<AtomicI64>) -> Self {
        Self {
            driven: Some(now),
            counter: Arc::default(),
            pinned: None,
        }
    }
}

impl Clock for HostClock {
    fn now(&self) -> Millis {
        if let Some(at) = self.pinned {
            return at;
        }
        if let Some(now) = &self.driven {
            return now.load(Ordering::SeqCst);
        }
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as Millis)
            .unwrap_or(0)
    }

    fn random(&self) -> u64 {
        if self.driven.is_some() {
            return self
                .counter
                .fetch_add(1, Ordering::SeqCst)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        // RandomState is seeded from the OS once per process and perturbed per instance.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.finish()
    }
}
