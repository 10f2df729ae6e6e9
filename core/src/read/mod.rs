//! The read paths: recall (channels, reciprocal rank fusion, scoring, what
//! a question asks for, session context, LLM expansion and rerank), the
//! fact walk, entity info, and reads by id.

mod assist;
mod dialogue;
mod entity_info;
pub(crate) mod facts;
pub(crate) mod fusion;
mod items;
pub(crate) mod question;
mod recall;
mod scored;
pub(crate) mod scoring;

pub(crate) use recall::admits;

#[cfg(test)]
mod properties;
