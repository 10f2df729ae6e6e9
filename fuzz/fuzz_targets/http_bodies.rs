//! `cargo fuzz run -s none http_bodies` (or `scripts/fuzz http_bodies`): see `mnemo_fuzz::http_bodies`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::http_bodies(data));
