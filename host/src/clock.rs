//! Wall-clock time and randomness for the core's `Clock` port.

use std::hash::{BuildHasher, Hasher};

use mnemo_core::model::Millis;
use mnemo_core::ports::Clock;

#[derive(Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as Millis)
            .unwrap_or(0)
    }

    fn random(&self) -> u64 {
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
