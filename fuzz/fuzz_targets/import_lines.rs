//! `cargo fuzz run -s none import_lines` (or `scripts/fuzz import_lines`): see `mnemo_fuzz::import_lines`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::import_lines(data));
