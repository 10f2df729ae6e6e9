//! What an agent reads before it answers: seed 004's resume (Core, Recent,
//! Topics, Triggers) with its Core summary, and seed 003's context
//! injection.

pub(crate) mod context;
mod core_order;
pub(crate) mod resume;
pub(crate) mod summary;
