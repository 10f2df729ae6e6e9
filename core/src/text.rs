//! Text handling shared by dedup and recall: tokenisation, stop words,
//! Jaccard similarity, FTS term extraction (user text never becomes FTS5
//! syntax: only plain word terms leave this module) and token estimates.

use std::collections::BTreeSet;

/// English stop words: dropped from FTS queries and from the content-word
/// comparison of dedup, never from stored text.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "really",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "yeah",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Most terms an FTS query is built from.
pub const MAX_QUERY_TERMS: usize = 32;

pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

/// Chinese, Japanese and Korean scripts.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK ext A
        | 0x4E00..=0x9FFF    // CJK unified
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility
        | 0x20000..=0x2A6DF) // CJK ext B
}

pub fn contains_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// Lower-cased word tokens. Latin-script words are alphanumeric runs
/// (apostrophes split); CJK runs become overlapping bigrams (a lone
/// character stays a unigram).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_cjk = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
        match cjk.len() {
            0 => {}
            1 => out.push(cjk[0].to_string()),
            _ => out.extend(cjk.windows(2).map(|w| w.iter().collect::<String>())),
        }
        cjk.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            cjk.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk, &mut out);
            word.extend(c.to_lowercase());
        } else {
            flush_cjk(&mut cjk, &mut out);
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    flush_cjk(&mut cjk, &mut out);
    if !word.is_empty() {
        out.push(word);
    }
    out
}

pub fn token_set(text: &str) -> BTreeSet<String> {
    tokens(text).into_iter().collect()
}

/// Tokens that carry meaning: not stop words.
pub fn content_words(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !is_stop_word(t))
        .collect()
}

/// |A ∩ B| / |A ∪ B| over token sets; 0 when both are empty.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

/// Plain terms for an FTS query: distinct tokens without stop words (all
/// tokens if the query is nothing but stop words), at most [`MAX_QUERY_TERMS`].
pub fn fts_terms(query: &str) -> Vec<String> {
    let all = tokens(query);
    let mut seen = BTreeSet::new();
    let mut terms: Vec<String> = all
        .iter()
        .filter(|t| !is_stop_word(t))
        .filter(|t| seen.insert(t.to_string()))
        .cloned()
        .collect();
    if terms.is_empty() {
        terms = all.into_iter().filter(|t| seen.insert(t.clone())).collect();
    }
    terms.truncate(MAX_QUERY_TERMS);
    terms
}

/// Word n-grams (1..=3) of the query, lower-cased: the names the entity
/// channel looks up.
pub fn name_candidates(query: &str) -> Vec<String> {
    let words = tokens(query);
    let mut out = BTreeSet::new();
    for n in 1..=3 {
        for w in words.windows(n) {
            if n == 1 && is_stop_word(&w[0]) {
                continue;
            }
            out.insert(w.join(" "));
        }
    }
    out.into_iter().collect()
}

/// Rough token count for budgets.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars()
        .count()
        .div_ceil(crate::thresholds::CHARS_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn tokens_lowercase_and_split_punctuation() {
        assert_eq!(
            tokens("Hello, World! it's 2024"),
            ["hello", "world", "it", "s", "2024"]
        );
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        assert_eq!(tokens("记忆系统 ok"), ["记忆", "忆系", "系统", "ok"]);
        assert_eq!(tokens("猫"), ["猫"]);
    }

    #[test]
    fn fts_terms_never_carry_syntax() {
        let terms = fts_terms("\"title\": NEAR(a b) OR col:* -x ^y");
        for t in &terms {
            assert!(t.chars().all(char::is_alphanumeric), "{t}");
        }
        assert!(terms.contains(&"title".to_string()));
        assert!(terms.contains(&"near".to_string()));
    }

    #[test]
    fn fts_terms_fall_back_to_stop_words() {
        assert_eq!(fts_terms("to be or not"), ["to", "be", "or", "not"]);
        assert!(fts_terms("  ...  ").is_empty());
    }

    #[test]
    fn jaccard_bounds() {
        let a = token_set("alice likes red");
        let b = token_set("alice likes blue");
        assert!((jaccard(&a, &b) - 0.5).abs() < 1e-6);
        assert_eq!(jaccard(&a, &a), 1.0);
        assert_eq!(jaccard(&BTreeSet::new(), &BTreeSet::new()), 0.0);
    }

    #[test]
    fn name_candidates_cover_multiword_names() {
        let c = name_candidates("Where does Caroline Smith live?");
        assert!(c.contains(&"caroline smith".to_string()));
        assert!(c.contains(&"caroline".to_string()));
        assert!(!c.contains(&"does".to_string()));
    }
}
