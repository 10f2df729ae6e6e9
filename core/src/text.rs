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

/// Kana or Hangul: a CJK run with either is Japanese or Korean.
fn is_kana_or_hangul(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0xAC00..=0xD7AF)
}

/// jieba's dictionary, trimmed to frequent words (see `core/data/README.md`).
/// Linked into a native build; the component asks its host for it instead
/// (the `resources` import), which keeps 1.2 MB out of `core.wasm`.
#[cfg(not(target_arch = "wasm32"))]
pub const JIEBA_DICTIONARY: &str = include_str!("../data/jieba-dict.txt");

#[cfg(not(target_arch = "wasm32"))]
fn dictionary() -> String {
    JIEBA_DICTIONARY.to_string()
}

#[cfg(target_arch = "wasm32")]
fn dictionary() -> String {
    crate::wasm::jieba_dictionary()
}

/// The jieba segmenter, built on first use (only Chinese text pays for it,
/// and only then is the dictionary read). A dictionary that does not parse
/// leaves an empty one: the HMM still segments, nothing fails.
fn jieba() -> &'static jieba_rs::Jieba {
    static JIEBA: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    JIEBA.get_or_init(|| {
        jieba_rs::Jieba::with_dict(&mut std::io::BufReader::new(dictionary().as_bytes()))
            .unwrap_or_else(|_| jieba_rs::Jieba::empty())
    })
}

/// Tokens of one CJK run (seed 004 §9): Chinese is segmented with jieba in
/// search mode (a compound and the words inside it, so the index and a
/// query meet on either); Japanese and Korean become overlapping bigrams (a lone character
/// stays a unigram).
fn cjk_tokens(run: &[char], out: &mut Vec<String>) {
    match run.len() {
        0 => {}
        1 => out.push(run[0].to_string()),
        _ if run.iter().any(|c| is_kana_or_hangul(*c)) => {
            out.extend(run.windows(2).map(|w| w.iter().collect::<String>()))
        }
        _ => {
            let text: String = run.iter().collect();
            out.extend(
                jieba()
                    .cut_for_search(&text, true)
                    .into_iter()
                    .map(|t| t.word.trim())
                    .filter(|w| !w.is_empty())
                    .map(String::from),
            );
        }
    }
}

/// Lower-cased word tokens. Latin-script words are alphanumeric runs
/// (apostrophes split); CJK runs are segmented by [`cjk_tokens`].
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_cjk = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
        cjk_tokens(cjk, out);
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

/// The text as the full-text index sees it (seed 004 §9): every CJK run is
/// replaced by its tokens separated by spaces, so the index's word tokenizer
/// finds the same terms [`fts_terms`] asks for; everything else is kept as
/// it is. The host's SQLite function `mnemo_index_text` is this function.
pub fn index_text(text: &str) -> String {
    if !contains_cjk(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.is_empty() {
            return;
        }
        out.push(' ');
        out.push_str(&tokens(run).join(" "));
        out.push(' ');
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
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

    #[test]
    fn the_index_sees_cjk_as_the_query_does() {
        assert_eq!(index_text("plain text, unchanged"), "plain text, unchanged");
        let indexed = index_text("我喜欢猫和狗 and Rust");
        assert!(
            indexed.split_whitespace().any(|t| t == "喜欢"),
            "Chinese is segmented into words: {indexed}"
        );
        for term in fts_terms("喜欢猫") {
            assert!(
                indexed.split_whitespace().any(|t| t == term),
                "{term} in {indexed}"
            );
        }
        assert!(indexed.contains("and Rust"));
        // Japanese and Korean: bigrams too.
        let ja = index_text("東京に住んでいます");
        assert!(ja.split_whitespace().any(|t| t == "東京"));
        let ko = index_text("서울에 살아요");
        assert!(ko.split_whitespace().any(|t| t == "서울"));
    }
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
    fn chinese_is_segmented_into_words_and_their_parts() {
        // Search mode: the compound and its words, so either finds it.
        assert_eq!(tokens("记忆系统 ok"), ["记忆", "系统", "ok"]);
        let country = tokens("中华人民共和国");
        assert!(country.contains(&"人民".to_string()), "{country:?}");
        assert!(
            country.contains(&"中华人民共和国".to_string()),
            "{country:?}"
        );
        assert_eq!(tokens("猫"), ["猫"]);
    }

    #[test]
    fn japanese_and_korean_runs_become_bigrams() {
        assert_eq!(tokens("すしが好き"), ["すし", "しが", "が好", "好き"]);
        assert_eq!(tokens("서울"), ["서울"]);
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
