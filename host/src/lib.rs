//! mnemo's native host: the wasmtime runtime that runs the core component,
//! SQLite storage, embedding/LLM/NER providers, and the surfaces (CLI, HTTP).

pub mod backfill;
pub mod beside;
pub mod cli;
pub mod clock;
pub mod config;
pub mod embedding;
pub mod http;
pub mod keys;
pub mod ledger;
pub mod llm;
pub mod migrate;
pub mod mnemo;
pub mod native;
pub mod ner;
pub mod plugins;
pub mod ports;
pub mod priority;
pub mod reference;
pub mod runtime;
pub mod scheduler;
pub mod server;
pub mod storage;
pub mod traces;
pub mod transfer;

pub use config::Config;
pub use mnemo::Mnemo;
