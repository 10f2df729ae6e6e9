//! `cargo fuzz run -s none fts_query` (or `scripts/fuzz fts_query`): see `mnemo_fuzz::fts_query`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::fts_query(data));
