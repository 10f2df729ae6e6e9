//! Identifiers: `prefix_<ms hex><random hex>`, so ids sort by creation time
//! and never collide in practice (53 random bits per millisecond).

use crate::ports::Clock;

pub fn new_id(prefix: &str, clock: &impl Clock) -> String {
    format!(
        "{prefix}_{:011x}{:014x}",
        clock.now().max(0),
        clock.random() & 0x1f_ffff_ffff_ffff
    )
}
