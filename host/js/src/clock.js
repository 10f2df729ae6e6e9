// The core's clock import: the wall clock, or a driven clock that stands
// at a given time and draws reproducible randomness exactly as the native
// host's driven clock does (`host/src/clock.rs`: a counter times the
// golden-ratio constant), so two hosts fed the same calls mint the same ids.

const MASK64 = 0xffffffffffffffffn;
const GOLDEN = 0x9e3779b97f4a7c15n;

/// Milliseconds now, and 64 random bits from the platform's CSPRNG.
export function wallClock() {
  const bits = new BigUint64Array(1);
  return {
    now: () => BigInt(Date.now()),
    random: () => {
      crypto.getRandomValues(bits);
      return bits[0];
    },
  };
}

/// A clock standing at `at` (milliseconds; move it with `set`), with the
/// native driven clock's counter randomness.
export function drivenClock(at) {
  let now = BigInt(at);
  let counter = 0n;
  return {
    now: () => now,
    set: (t) => {
      now = BigInt(t);
    },
    random: () => {
      const r = (counter * GOLDEN) & MASK64;
      counter += 1n;
      return r;
    },
  };
}
