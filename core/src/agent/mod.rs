//! What an agent reads before it answers: seed 004's resume (Core, Recent,
//! Topics, Triggers) with its Core summary, seed 003's context injection,
//! and the texts of the agent flows a host offers (`prompts`).

pub(crate) mod context;
mod core_order;
pub(crate) mod domains;
pub(crate) mod gate;
pub mod prompts;
pub(crate) mod resume;
pub(crate) mod summary;
