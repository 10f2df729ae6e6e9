//! The texts of the agent flows the seeds describe, as a host offers them
//! to an agent (MCP prompts): start a session with the resume block, save
//! what a session taught, review one topic. Pure text from what the host
//! read; every host words them alike.

use crate::model::{Memory, Topic};

/// Hours of recent changes `save_learned` shows (what this session saved).
pub const SAVED_LATELY_HOURS: u32 = 24;
/// At most this many of them.
pub const SAVED_LATELY_LIMIT: u32 = 50;

fn bullet(m: &Memory) -> String {
    format!("- [{}] {}", m.id, m.content)
}

/// A session's start: the resume block's text, and how to use memory.
pub fn start_session(resume_text: &str) -> String {
    format!(
        "You are continuing to work with someone you have worked with before. This is what you remember:\n\n{}\n\n\
         During this session: call `context` with each of their messages before answering and use what it returns; \
         call `search_memory` when they refer to something earlier; save each durable fact you learn \
         (a preference, a plan, a person, a decision) with `remember_fact`, and use `correct_fact` when one changes. \
         Read a topic of the index above with `topic` or the resource mnemo://namespaces/{{namespace}}/topics/{{id}}.",
        resume_text.trim()
    )
}

/// A session's end: what to save and how, the session's notes if the
/// client has them, and what `namespace` saved in the last
/// `SAVED_LATELY_HOURS` (`recent`), so nothing is saved twice.
pub fn save_learned(namespace: &str, notes: Option<&str>, recent: &[Memory]) -> String {
    let mut text = String::from(
        "Before this session ends, save what you learned about the user and their work.\n\n\
         - Save each durable fact (a preference, a plan, a person and how they relate, a decision, a date) \
         with `remember_fact`: one self-contained sentence each, naming who it is about (\"The user's sister Ana lives in Lisbon\", not \"she moved there\").\n\
         - When something you remember has changed, find it with `search_memory` and replace it with `correct_fact`.\n\
         - Do not save small talk, what only mattered within this session, or what is already saved below.\n",
    );
    if let Some(notes) = notes.filter(|n| !n.trim().is_empty()) {
        text.push_str(&format!("\nThe session:\n\n{}\n", notes.trim()));
    }
    if recent.is_empty() {
        text.push_str(&format!(
            "\nNothing was saved in namespace `{namespace}` in the last {SAVED_LATELY_HOURS} hours.\n"
        ));
    } else {
        text.push_str(&format!(
            "\nAlready saved in namespace `{namespace}` in the last {SAVED_LATELY_HOURS} hours:\n\n"
        ));
        for m in recent {
            text.push_str(&bullet(m));
            text.push('\n');
        }
    }
    text
}

/// One topic's memories, and how to tidy them with the memory tools.
pub fn review_topic(namespace: &str, topic: &Topic) -> String {
    let mut text = format!(
        "Review the memories of the topic \"{}\" ({}) in namespace `{namespace}`:\n\n",
        topic.name, topic.id
    );
    for m in &topic.memories {
        text.push_str(&format!(
            "{} (layer {}, importance {:.2})\n",
            bullet(m),
            m.layer,
            m.importance
        ));
    }
    text.push_str(
        "\nFor each change, say why, then make it:\n\
         - two memories that say the same thing: keep the better one (`edit_memory` to complete it) and `forget` the other with the reason;\n\
         - a memory that is no longer true: `correct_fact` with what is true now;\n\
         - a memory that will stay true and matters: `confirm_fact`.\n\
         Everything you change stays in its history and the trash, and can be restored.",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_learned_names_the_namespace_and_the_notes() {
        let text = save_learned("u1", Some("  They adopted a cat. "), &[]);
        assert!(
            text.contains("The session:\n\nThey adopted a cat.\n"),
            "{text}"
        );
        assert!(
            text.contains("Nothing was saved in namespace `u1`"),
            "{text}"
        );
        assert!(!save_learned("u1", Some("   "), &[]).contains("The session"));
        assert!(start_session(" Core: x \n").contains("remember:\n\nCore: x\n\n"));
    }
}
