//! `cargo fuzz run -s none core_exports` (or `scripts/fuzz core_exports`): see `mnemo_fuzz::core_exports`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::core_exports(data));
