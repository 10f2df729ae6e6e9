//! Fact extraction from dialogue without an LLM (LLM level `off`): first-
//! person statements with a clear relation ("I live in Berlin", "my
//! favourite colour is green") become third-person facts with a triple.
//! Precision over recall: anything less clear stays in the transcript,
//! where recall still finds it.

use crate::model::Kind;
use crate::prompts::ExtractedFact;

mod rules;

use rules::*;

/// Longest object kept, in words.
const MAX_OBJECT_WORDS: usize = 8;

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

/// The object that starts `rest`: up to a stop word, a comma or colon, or
/// `MAX_OBJECT_WORDS`; `None` when it is empty or not a fact (a pronoun,
/// a passing thing: "I have a question").
fn object_after(rest: &str, extra_stops: &[&str]) -> Option<String> {
    let mut words = Vec::new();
    for w in rest.split_whitespace() {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-');
        let lower = bare.to_ascii_lowercase();
        if STOPS.contains(&lower.as_str())
            || extra_stops.contains(&lower.as_str())
            || words.len() == MAX_OBJECT_WORDS
        {
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
    let first = words.first()?.to_ascii_lowercase();
    (!NOT_OBJECTS.contains(&first.as_str())).then(|| words.join(" "))
}

/// Whether the clause hedges before `at` ("maybe I like …", "I think I …").
fn hedged(lower: &str, at: usize) -> bool {
    let before = lower.get(..at).unwrap_or_default();
    HEDGES.iter().any(|h| find_word_start(before, h).is_some())
}

fn is_count(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_digit())
        || NUMBER_WORDS.contains(&word.to_ascii_lowercase().as_str())
}

fn fact(
    subject: &str,
    predicate: &str,
    object: String,
    exclusive: bool,
    turn: usize,
) -> ExtractedFact {
    ExtractedFact {
        content: format!("{subject} {predicate} {object}"),
        kind: Kind::Semantic,
        importance: None,
        triple: Some((subject.to_string(), predicate.to_string(), object)),
        exclusive,
        turns: vec![turn],
    }
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
            if taken.contains(&at) || hedged(&lower, at) {
                continue;
            }
            // A role ends at its workplace: "a nurse at the hospital".
            let extra: &[&str] = match *predicate {
                "works as" | "is a" | "is an" => &["at", "in", "for"],
                _ => &[],
            };
            let Some(object) = sentence
                .get(at + cue.len()..)
                .and_then(|r| object_after(r, extra))
            else {
                continue;
            };
            out.push(fact(&subject, predicate, object, *exclusive, turn));
            taken.push(at);
        }
        for (cue, predicate) in COUNTED {
            let Some(at) = find_word_start(&lower, cue) else {
                continue;
            };
            let rest = sentence.get(at + cue.len()..).unwrap_or_default();
            if taken.contains(&at)
                || hedged(&lower, at)
                || !rest.split_whitespace().next().is_some_and(is_count)
            {
                continue;
            }
            if let Some(object) = object_after(rest, &[]) {
                out.push(fact(&subject, predicate, object, false, turn));
                taken.push(at);
            }
        }
        out.extend(relation(&subject, sentence, &lower, turn));
        if let Some(fact) = favourite(&subject, sentence, &lower, turn) {
            out.push(fact);
        }
    }
    out
}

/// "my sister lives in Toronto", "my wife's name is Sarah", "my manager is
/// Dana" → (subject, "sister lives in" / "wife's name" / "manager is", …).
fn relation(subject: &str, sentence: &str, lower: &str, turn: usize) -> Option<ExtractedFact> {
    let start = find_word_start(lower, "my ")? + 3;
    if hedged(lower, start) {
        return None;
    }
    let rest = lower.get(start..)?;
    let who = RELATIONS
        .iter()
        .filter(|r| rest.starts_with(*r))
        .max_by_key(|r| r.len())?;
    let after = start + who.len();
    let (verb, suffix, exclusive) = RELATION_VERBS
        .iter()
        .find(|(v, _, _)| lower.get(after..).is_some_and(|l| l.starts_with(v)))?;
    let mut object_text = sentence.get(after + verb.len()..)?;
    // A date is "on March 3rd": the preposition is not the value.
    if let Some(r) = object_text.strip_prefix("on ") {
        object_text = r;
    }
    let object = object_after(object_text, &[])?;
    let predicate = format!("{who}{suffix}");
    Some(ExtractedFact {
        content: format!("{subject}'s {predicate} {object}"),
        kind: Kind::Semantic,
        importance: None,
        triple: Some((subject.to_string(), predicate, object)),
        exclusive: *exclusive,
        turns: vec![turn],
    })
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
    let object = object_after(sentence.get(cue + is + 4..)?, &[])?;
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
mod quality;

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
