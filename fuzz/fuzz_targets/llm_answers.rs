//! `cargo fuzz run -s none llm_answers` (or `scripts/fuzz llm_answers`): see `mnemo_fuzz::llm_answers`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mnemo_fuzz::llm_answers(data));
