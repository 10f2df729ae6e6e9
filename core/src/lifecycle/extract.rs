//! Fact extraction from dialogue without an LLM (LLM level `off`): first-
//! person statements with a clear relation ("I live in Berlin", "my
//! favourite colour is green") become third-person facts with a triple.
//! Precision over recall: anything less clear stays in the transcript,
//! where recall still finds it.

use crate::model::Kind;
use crate::prompts::ExtractedFact;

/// Longest object kept, in words.
const MAX_OBJECT_WORDS: usize = 8;

/// (cue, predicate, single-valued). The cue is matched at a word start in
/// the lower-cased sentence; the object is what follows it.
const CUES: &[(&str, &str, bool)] = &[
    ("my name is ", "is named", true),
    ("i live in ", "lives in", true),
    ("i moved to ", "lives in", true),
    ("i work at ", "works at", true),
    ("i work for ", "works at", true),
    ("i'm from ", "is from", true),
    ("i am from ", "is from", true),
    ("i'm allergic to ", "is allergic to", false),
    ("i am allergic to ", "is allergic to", false),
    ("i prefer ", "prefers", false),
    ("i love ", "loves", false),
    ("i like ", "likes", false),
    ("i enjoy ", "enjoys", false),
    ("i hate ", "dislikes", false),
    ("i dislike ", "dislikes", false),
    ("i don't like ", "dislikes", false),
    ("i'm a ", "is a", false),
    ("i am a ", "is a", false),
    ("i'm an ", "is an", false),
    ("i am an ", "is an", false),
    ("i have a ", "has a", false),
    ("i have an ", "has an", false),
];

/// Words that end an object: the clause goes on with something else.
const STOPS: &[&str] = &[
    "and", "but", "because", "so", "which", "who", "when", "since", "though", "although", "if",
    "or", "too", "as",
];

/// The name a role goes by in a fact.
pub fn speaker_name(role: &str) -> String {
    let role = role.trim();
    match role.to_ascii_lowercase().as_str() {
        "" | "user" | "human" => "The user".into(),
        _ => {
            let mut c = role.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        }
    }
}

/// Whether a role's turns carry facts about a person (not the agent's own).
pub fn is_person_role(role: &str) -> bool {
    !matches!(
        role.to_ascii_lowercase().as_str(),
        "assistant" | "agent" | "system" | "tool"
    )
}

/// Clauses of statements (questions left out), without their punctuation.
fn statements(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(['.', '!', '?', ';', '\n'])
        .filter(|s| !s.trim_end().ends_with('?'))
        .flat_map(|s| s.split(','))
        .map(|s| s.trim().trim_end_matches(['.', '!', ';']).trim())
        .filter(|s| !s.is_empty())
}

fn object_after(rest: &str) -> Option<String> {
    let mut words = Vec::new();
    for w in rest.split_whitespace() {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-');
        if STOPS.contains(&bare.to_ascii_lowercase().as_str()) || words.len() == MAX_OBJECT_WORDS {
            break;
        }
        let ends = w.ends_with(',') || w.ends_with(':');
        if !bare.is_empty() {
            words.push(bare.to_string());
        }
        if ends {
            break;
        }
    }
    (!words.is_empty()).then(|| words.join(" "))
}

/// Facts stated in one turn by `role`. `turn` is its index in the chunk.
pub fn facts_in_turn(role: &str, text: &str, turn: usize) -> Vec<ExtractedFact> {
    if !is_person_role(role) {
        return Vec::new();
    }
    let subject = speaker_name(role);
    let mut out = Vec::new();
    for sentence in statements(text) {
        let lower = sentence.to_lowercase();
        // Offsets found in the lower-cased text index the original only
        // when lower-casing kept every byte length.
        if lower.len() != sentence.len() {
            continue;
        }
        let mut taken: Vec<usize> = Vec::new();
        for (cue, predicate, exclusive) in CUES {
            let Some(at) = find_word_start(&lower, cue) else {
                continue;
            };
            if taken.contains(&at) {
                continue;
            }
            // `lower` may differ in length from `sentence` (non-ASCII case
            // folding): every slice is checked, never assumed.
            let Some(object) = sentence.get(at + cue.len()..).and_then(object_after) else {
                continue;
            };
            out.push(ExtractedFact {
                content: format!("{subject} {predicate} {object}"),
                kind: Kind::Semantic,
                importance: None,
                triple: Some((subject.clone(), (*predicate).to_string(), object)),
                exclusive: *exclusive,
                turns: vec![turn],
            });
            taken.push(at);
        }
        if let Some(fact) = favourite(&subject, sentence, &lower, turn) {
            out.push(fact);
        }
    }
    out
}

/// "my favourite X is Y" → (subject, "favourite X", Y), single-valued.
fn favourite(subject: &str, sentence: &str, lower: &str, turn: usize) -> Option<ExtractedFact> {
    let cue = ["my favorite ", "my favourite "]
        .iter()
        .find_map(|c| find_word_start(lower, c).map(|at| at + c.len()))?;
    let is = lower.get(cue..)?.find(" is ")?;
    let what = sentence.get(cue..cue + is)?.trim();
    if what.is_empty() || what.split_whitespace().count() > 3 {
        return None;
    }
    let object = object_after(sentence.get(cue + is + 4..)?)?;
    let predicate = format!("favourite {}", what.to_lowercase());
    Some(ExtractedFact {
        content: format!("{subject}'s {predicate} is {object}"),
        kind: Kind::Semantic,
        importance: None,
        triple: Some((subject.to_string(), predicate, object)),
        exclusive: true,
        turns: vec![turn],
    })
}

fn find_word_start(haystack: &str, needle: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + i;
        let before = haystack.get(..at).unwrap_or_default();
        if !before.ends_with(|c: char| c.is_alphanumeric()) {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triples(role: &str, text: &str) -> Vec<(String, String, String, bool)> {
        facts_in_turn(role, text, 0)
            .into_iter()
            .filter_map(|f| f.triple.map(|(s, p, o)| (s, p, o, f.exclusive)))
            .collect()
    }

    #[test]
    fn first_person_relations_become_facts() {
        assert_eq!(
            triples(
                "Caroline",
                "Hey! I live in Berlin now, and I love hiking in the Alps."
            ),
            vec![
                (
                    "Caroline".into(),
                    "lives in".into(),
                    "Berlin now".into(),
                    true
                ),
                (
                    "Caroline".into(),
                    "loves".into(),
                    "hiking in the Alps".into(),
                    false
                ),
            ]
        );
        let f = facts_in_turn("user", "My favourite colour is green.", 3);
        assert_eq!(f[0].content, "The user's favourite colour is green");
        assert!(f[0].exclusive);
        assert_eq!(f[0].turns, vec![3]);
    }

    #[test]
    fn questions_agent_turns_and_mid_word_cues_are_skipped() {
        assert!(triples("user", "Do you think I like jazz?").is_empty());
        assert!(triples("assistant", "I like helping you.").is_empty());
        assert!(triples("user", "Hi like everyone else").is_empty());
    }
}
