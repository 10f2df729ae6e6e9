//! The `regex` NER provider (seed 003): @mentions, #hashtags, emails, URLs,
//! and dates — ISO and numeric forms, month names with a day or year, and
//! common relative forms ("yesterday", "last week", "3 days ago"). Always
//! available, no model; the `fast` strategy runs it on every write.

use std::sync::OnceLock;

use mnemo_ner_sdk::{Entity, EntityType, Error, Info, Provider};
use regex_lite::Regex;

pub struct RegexProvider;

const MONTH: &str = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
const WEEKDAY: &str = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)";

struct Pattern {
    regex: Regex,
    kind: EntityType,
    confidence: f32,
    /// Capture group holding the entity (0 = whole match).
    group: usize,
    /// What an ASCII text must hold for the pattern to match at all.
    needs: Needs,
}

/// A pattern's precondition, checked before its regex runs: regex-lite's
/// matcher walks every position of the text for every pattern, which made
/// this provider ~40% of a dialogue turn's ingest; most turns hold no `@`,
/// no `#`, no digit and no month name.
#[derive(Clone, Copy)]
enum Needs {
    /// One of these, in the text lowercased.
    Any(&'static [&'static str]),
    Digit,
}

const MONTH_STEMS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const RELATIVE_WORDS: &[&str] = &[
    "today",
    "tonight",
    "yesterday",
    "tomorrow",
    "last",
    "next",
    "this",
    "ago",
];

impl Needs {
    /// Whether the pattern may match `lower` (the text lowercased; `None`
    /// for a text that is not ASCII, where case folding reaches further and
    /// every pattern runs).
    fn met(self, lower: Option<&str>) -> bool {
        let Some(lower) = lower else {
            return true;
        };
        match self {
            Needs::Any(words) => words.iter().any(|w| lower.contains(w)),
            Needs::Digit => lower.bytes().any(|b| b.is_ascii_digit()),
        }
    }
}

fn patterns() -> Result<&'static [Pattern], Error> {
    static PATTERNS: OnceLock<Result<Vec<Pattern>, String>> = OnceLock::new();
    let built = PATTERNS.get_or_init(|| {
        let p = |re: &str, kind, confidence, group, needs| {
            Regex::new(re).map(|regex| Pattern { regex, kind, confidence, group, needs }).map_err(|e| e.to_string())
        };
        Ok(vec![
            p(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", EntityType::Email, 0.99, 0, Needs::Any(&["@"]))?,
            p(r#"https?://[^\s<>"'()\[\]]+"#, EntityType::Url, 0.99, 0, Needs::Any(&["http"]))?,
            p(r"(?:^|[^A-Za-z0-9_@])(@[A-Za-z0-9_][A-Za-z0-9_.-]{0,38}[A-Za-z0-9_]|@[A-Za-z0-9_])", EntityType::Mention, 0.95, 1, Needs::Any(&["@"]))?,
            p(r"(?:^|[^A-Za-z0-9_&#])(#[A-Za-z][A-Za-z0-9_-]{0,49})", EntityType::Hashtag, 0.95, 1, Needs::Any(&["#"]))?,
            p(r"\b\d{4}-\d{2}-\d{2}\b", EntityType::Date, 0.95, 0, Needs::Digit)?,
            p(r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b", EntityType::Date, 0.85, 0, Needs::Digit)?,
            // "7 May 2023", "May 7th, 2023", "May 2023", "7 May"
            p(&format!(r"(?i)\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}\.?(?:,?\s+\d{{4}})?|{MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|{MONTH}\.?\s+\d{{4}})\b"), EntityType::Date, 0.9, 0, Needs::Any(MONTH_STEMS))?,
            p(&format!(r"(?i)\b(?:today|tonight|yesterday|tomorrow|(?:last|next|this)\s+(?:week|weekend|month|year|{WEEKDAY})|\d+\s+(?:days?|weeks?|months?|years?)\s+ago|(?:a|one)\s+(?:day|week|month|year)\s+ago)\b"), EntityType::Date, 0.8, 0, Needs::Any(RELATIVE_WORDS))?,
        ])
    });
    built
        .as_deref()
        .map_err(|e| Error::Failed(format!("pattern failed to compile: {e}")))
}

/// Trailing punctuation that ends a sentence, not a URL.
fn trim_url(s: &str) -> &str {
    s.trim_end_matches(['.', ',', ';', ':', '!', '?'])
}

impl Provider for RegexProvider {
    fn info() -> Info {
        Info {
            name: "regex".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            entity_types: vec![
                EntityType::Mention,
                EntityType::Hashtag,
                EntityType::Email,
                EntityType::Url,
                EntityType::Date,
            ],
        }
    }

    fn extract(text: &str) -> Result<Vec<Entity>, Error> {
        scan(text, true)
    }
}

/// Every pattern's matches, emails first; `gated` skips the patterns whose
/// precondition the text fails (the same result, sooner).
fn scan(text: &str, gated: bool) -> Result<Vec<Entity>, Error> {
    let mut out: Vec<Entity> = Vec::new();
    let lower = text.is_ascii().then(|| text.to_ascii_lowercase());
    for p in patterns()? {
        if gated && !p.needs.met(lower.as_deref()) {
            continue;
        }
        for caps in p.regex.captures_iter(text) {
            let Some(m) = caps.get(p.group) else { continue };
            let mut found = m.as_str();
            if p.kind == EntityType::Url {
                found = trim_url(found);
            }
            let (start, end) = (m.start(), m.start() + found.len());
            // Emails win over the mentions and dates inside them.
            if out
                .iter()
                .any(|e| (start as u32) < e.end && e.start < end as u32)
            {
                continue;
            }
            out.push(Entity {
                text: found.to_string(),
                entity_type: p.kind,
                start: start as u32,
                end: end as u32,
                confidence: p.confidence,
            });
        }
    }
    out.sort_by_key(|e| e.start);
    Ok(out)
}

mnemo_ner_sdk::export_provider!(RegexProvider);

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, EntityType)> {
        RegexProvider::extract(text)
            .unwrap()
            .into_iter()
            .map(|e| (e.text, e.entity_type))
            .collect()
    }

    #[test]
    fn mentions_hashtags_emails_urls() {
        let got = found(
            "ping @alice_b about #launch-plan, mail bob.smith@example.com or see https://example.com/x?y=1.",
        );
        assert_eq!(
            got,
            [
                ("@alice_b".to_string(), EntityType::Mention),
                ("#launch-plan".to_string(), EntityType::Hashtag),
                ("bob.smith@example.com".to_string(), EntityType::Email),
                ("https://example.com/x?y=1".to_string(), EntityType::Url),
            ]
        );
    }

    #[test]
    fn dates_absolute_and_relative() {
        let got: Vec<String> = found("On 2023-05-07 and 7 May 2023, then May 8th, 2023; yesterday, last week and 3 days ago.")
            .into_iter()
            .filter(|(_, k)| *k == EntityType::Date)
            .map(|(t, _)| t)
            .collect();
        assert_eq!(
            got,
            [
                "2023-05-07",
                "7 May 2023",
                "May 8th, 2023",
                "yesterday",
                "last week",
                "3 days ago"
            ]
        );
    }

    #[test]
    fn the_preconditions_change_no_result() {
        for text in [
            "ping @alice_b about #launch-plan, mail bob.smith@example.com or see HTTPS://x.io and https://example.com/x?y=1.",
            "On 2023-05-07 and 7 MAY 2023, then Sept 8th, 2023; YESTERDAY, Last Friday and 3 days AGO.",
            "12/05/23 or 1.2.2024, a week ago, one year ago, this weekend, next month",
            "Café on 7 mai, naïve @bob, the 2nd of June, #tag",
            "no entity in this plain sentence at all",
            "We may march in june; dec. 2024; Jul 4",
        ] {
            let gated = scan(text, true).unwrap();
            let all = scan(text, false).unwrap();
            let key = |v: &[Entity]| -> Vec<(String, u32, u32)> {
                v.iter().map(|e| (e.text.clone(), e.start, e.end)).collect()
            };
            assert_eq!(key(&gated), key(&all), "{text}");
        }
    }

    #[test]
    fn ordinary_words_are_not_dates_and_spans_are_bytes() {
        assert!(found("You may go; we march on.").is_empty());
        let e = RegexProvider::extract("naïve @bob").unwrap();
        assert_eq!(
            "naïve @bob".get(e[0].start as usize..e[0].end as usize),
            Some("@bob")
        );
    }
}
