//! `cargo fuzz run -s none tokens` (or `scripts/fuzz tokens`): see `mnemo_fuzz::tokens`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::tokens(data));
