//! The `names` NER provider: people, organisations, places and projects
//! without a model. Capitalised phrases (joined by "of", "van", ...) are
//! candidates; sentence-initial words count only when a list knows them;
//! honorifics, organisation and place suffixes, a small gazetteer and
//! context words ("in", "project") decide the type.

mod gazetteer;

use gazetteer::*;
use mnemo_ner_sdk::{Entity, EntityType, Error, Info, Provider};

pub struct NamesProvider;

/// Longest input this provider reads (the host caps it lower by default).
const MAX_INPUT: usize = 1 << 20;

#[derive(Debug, Clone)]
struct Word<'a> {
    text: &'a str,
    lower: String,
    start: usize,
    end: usize,
    sentence_start: bool,
    /// Only spaces lie between this word and the one before: a name
    /// grows over a space, never over a comma ("Definitely, Maria").
    after_space: bool,
}

impl Word<'_> {
    fn capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }

    /// Whether this word can carry on the name before it: capitalised,
    /// inside a sentence, and only a space away.
    fn continues_name(&self) -> bool {
        self.capitalised() && !self.sentence_start && self.after_space
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '\'' || c == '-' || c == '’'
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    let mut start: Option<usize> = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if i < text.len() && is_word_char(c) {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            // Both ends come from `char_indices`: always on a boundary.
            let raw = text.get(s..i).unwrap_or_default();
            let w = raw.trim_matches(['\'', '-', '’']);
            if !w.is_empty() {
                let s2 = s + raw.find(w).unwrap_or(0);
                let after_space = out
                    .last()
                    .and_then(|before: &Word<'_>| text.get(before.end..s2))
                    .is_some_and(|gap| !gap.is_empty() && gap.chars().all(char::is_whitespace));
                out.push(Word {
                    text: w,
                    lower: w.to_lowercase().replace('’', "'"),
                    start: s2,
                    end: s2 + w.len(),
                    sentence_start,
                    after_space,
                });
                sentence_start = false;
            }
        }
        if matches!(c, '.' | '!' | '?' | '\n' | ':' | '"' | '“') {
            sentence_start = true;
        }
    }
    out
}

fn classify(
    phrase: &[Word<'_>],
    before: Option<&Word<'_>>,
    after: Option<&Word<'_>>,
    honorific: bool,
) -> (EntityType, f32) {
    let joined: String = phrase
        .iter()
        .map(|w| w.lower.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let first = phrase[0].lower.as_str();
    let last = phrase[phrase.len() - 1].lower.as_str();
    let prev = before.map(|w| w.lower.as_str()).unwrap_or("");
    let next = after.map(|w| w.lower.as_str()).unwrap_or("");
    if honorific {
        return (EntityType::Person, 0.9);
    }
    if contains(ORG_SUFFIXES, last) || (first == "university" && phrase.len() > 1) {
        return (EntityType::Organization, 0.85);
    }
    if contains(PLACE_SUFFIXES, last) && phrase.len() > 1 {
        return (EntityType::Location, 0.8);
    }
    if contains(PLACES, &joined) {
        return (EntityType::Location, 0.85);
    }
    if contains(ORGS, &joined) {
        return (EntityType::Organization, 0.85);
    }
    if contains(PROJECT_CUES, prev) || contains(PROJECT_CUES, next) {
        return (EntityType::Project, 0.75);
    }
    if contains(FIRST_NAMES, first) {
        return (EntityType::Person, 0.85);
    }
    if phrase.len() == 1 && contains(DEMONYMS, first) {
        return (EntityType::Other, 0.7);
    }
    if phrase.len() == 1 && first.len() > 1 && phrase[0].text.chars().all(|c| c.is_uppercase()) {
        // An acronym no list knows ("LGBTQ", "DIY"): something, rarely a person.
        return (EntityType::Other, 0.5);
    }
    if matches!(
        prev,
        "in" | "at" | "from" | "to" | "near" | "visited" | "visit" | "around" | "across"
    ) {
        return (EntityType::Location, 0.6);
    }
    if phrase.len() <= 3 {
        return (EntityType::Person, 0.5);
    }
    (EntityType::Other, 0.4)
}

/// Whether `left and right` names two things, not one ("Maria and John",
/// "German and Spanish"; "Procter and Gamble" stays one).
fn lists_two(left: &Word<'_>, connector: &Word<'_>, right: &Word<'_>) -> bool {
    let apart = |w: &Word<'_>| contains(DEMONYMS, &w.lower) || contains(FIRST_NAMES, &w.lower);
    connector.lower == "and" && (apart(left) || apart(right))
}

/// Whether a lone word at a sentence start is known to be a name.
fn known(word: &str) -> bool {
    contains(FIRST_NAMES, word) || contains(PLACES, word) || contains(ORGS, word)
}

pub fn find(text: &str) -> Vec<Entity> {
    let ws = words(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let honorific = contains(HONORIFICS, ws[i].lower.trim_end_matches('.'))
            && ws.get(i + 1).is_some_and(|w| w.capitalised());
        if honorific {
            i += 1;
        }
        if !ws[i].capitalised() {
            i += 1;
            continue;
        }
        // Grow the phrase over capitalised words and inner connectors.
        let mut j = i + 1;
        while j < ws.len() {
            if ws[j].continues_name() {
                j += 1;
            } else if contains(CONNECTORS, &ws[j].lower)
                && ws[j].after_space
                && ws.get(j + 1).is_some_and(Word::continues_name)
                && !lists_two(&ws[j - 1], &ws[j], &ws[j + 1])
            {
                // "University of Oxford", not "German and Spanish".
                j += 2;
            } else {
                break;
            }
        }
        let mut phrase = &ws[i..j];
        // Drop leading non-names ("The", "Hey", "Thanks").
        while let Some(w) = phrase.first() {
            if contains(NOT_NAMES, &w.lower) || contains(CONNECTORS, &w.lower) {
                phrase = &phrase[1..];
            } else {
                break;
            }
        }
        while let Some(w) = phrase.last() {
            if contains(CONNECTORS, &w.lower) || contains(NOT_NAMES, &w.lower) {
                phrase = &phrase[..phrase.len() - 1];
            } else {
                break;
            }
        }
        let keep = match phrase {
            [] => false,
            [one] if one.sentence_start && !honorific => known(&one.lower),
            [one] => !contains(NOT_NAMES, &one.lower) && one.text != "I",
            _ => true,
        };
        if keep {
            let start = phrase[0].start;
            let end = phrase[phrase.len() - 1].end;
            let before = ws[..i].last();
            let after = ws.get(j);
            let (entity_type, confidence) = classify(phrase, before, after, honorific);
            out.push(Entity {
                text: text.get(start..end).unwrap_or_default().to_string(),
                entity_type,
                start: start as u32,
                end: end as u32,
                confidence,
            });
        }
        i = j.max(i + 1);
    }
    out
}

impl Provider for NamesProvider {
    fn info() -> Info {
        Info {
            name: "names".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            entity_types: vec![
                EntityType::Person,
                EntityType::Organization,
                EntityType::Location,
                EntityType::Project,
                EntityType::Other,
            ],
        }
    }

    fn extract(text: &str) -> Result<Vec<Entity>, Error> {
        if text.len() > MAX_INPUT {
            return Err(Error::InvalidInput(format!("input over {MAX_INPUT} bytes")));
        }
        Ok(find(text))
    }
}

mnemo_ner_sdk::export_provider!(NamesProvider);

#[cfg(test)]
mod tests;
