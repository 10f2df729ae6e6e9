//! The text paths: `tokens` (the tokeniser and CJK segmentation the index
//! and queries share), `fts_query` (any query, and any terms a caller could
//! send across the boundary, through the host's FTS5 quoting and filter
//! SQL) and `llm_answers` (every parser of an LLM answer, on any text).

use std::collections::HashSet;

use arbitrary::{Arbitrary, Unstructured};
use mnemo_core::fuzzing::*;
use mnemo_core::model::{Memory, RememberRequest, SearchFilter, Target};
use mnemo_core::ports::Storage as _;
use mnemo_core::search_text::{estimate_tokens, fts_terms, index_text, tokens as words};

use crate::engine::{typed, with_mnemo};

/// Tokens are non-empty, lower-case, free of whitespace; query terms are
/// distinct tokens, at most 32, made of letters and digits only (no FTS5
/// syntax can reach a query); the indexed text tokenises to the same words.
pub fn tokens(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let all = words(&text);
    for t in &all {
        assert!(!t.is_empty(), "an empty token from {text:?}");
        assert!(!t.chars().any(char::is_whitespace), "whitespace in {t:?}");
        assert_eq!(t, &t.to_lowercase(), "not lower-case: {t:?}");
    }
    let terms = fts_terms(&text);
    assert!(terms.len() <= MAX_QUERY_TERMS, "{} terms", terms.len());
    let distinct: HashSet<&String> = terms.iter().collect();
    assert_eq!(distinct.len(), terms.len(), "repeated terms: {terms:?}");
    for t in &terms {
        // FTS5's syntax is ASCII; lower-casing may add combining marks.
        let plain = |c: char| c.is_alphanumeric() || !(c.is_ascii() || c.is_whitespace());
        assert!(t.chars().all(plain), "syntax in a term: {t:?}");
        assert!(all.contains(t), "a term that is not a token: {t:?}");
    }
    // The index's own tokenizer (FTS5 unicode61) splits the indexed text
    // at the spaces put around CJK tokens: each must stand there as a word.
    let indexed = index_text(&text);
    let set: HashSet<&str> = indexed.split_whitespace().collect();
    for t in all.iter().filter(|t| contains_cjk(t)) {
        assert!(
            set.contains(t.as_str()),
            "{t:?} is not a word of the indexed text of {text:?}"
        );
    }
    let _ = (
        name_candidates(&text),
        token_set(&text),
        estimate_tokens(&text),
    );
}

/// A letter or digit both tokenizers read alike: ASCII, Latin, Greek,
/// Cyrillic, CJK. (Elsewhere they may not: a word of combining marks alone
/// is nothing to FTS5's unicode61 with diacritics removed, and an
/// unassigned code point joins a word there but splits it here — both
/// found by this target.)
fn plain_letter(c: char) -> bool {
    c.is_alphanumeric()
        && (c.is_ascii()
            || ('\u{C0}'..='\u{24F}').contains(&c)
            || ('\u{370}'..='\u{4FF}').contains(&c)
            || contains_cjk(c.encode_utf8(&mut [0; 4])))
}

#[derive(Arbitrary, Debug)]
struct FtsInput {
    query: String,
    /// Terms as any caller of the storage port could send them.
    raw_terms: Vec<String>,
    filter: SearchFilter,
    limit: u8,
    context_weight: f32,
    episodes: bool,
}

/// The store answers any query: the quoting lets no FTS5 syntax through
/// and the filter's SQL holds for any values. And a memory is found by its
/// own words: the index and the query tokenise alike.
pub fn fts_query(data: &[u8]) {
    let Ok(input) = Unstructured::new(data).arbitrary::<FtsInput>() else {
        return;
    };
    let target = if input.episodes {
        Target::Episodes
    } else {
        Target::Memories
    };
    with_mnemo(|h| {
        h.inputs_seen += 1;
        let namespace = format!("fts-{}", h.inputs_seen);
        let req = RememberRequest {
            namespace: namespace.clone(),
            content: input.query.clone(),
            skip_dedup: true,
            ..Default::default()
        };
        if let Some(out) = typed("remember", h.m.remember(req)) {
            let terms = fts_terms(&out.memory.content);
            let filter = SearchFilter {
                namespaces: vec![namespace],
                ..Default::default()
            };
            let hits =
                h.m.ports()
                    .store
                    .fts_search(Target::Memories, &terms, &filter, 10, 1.0);
            let hits = hits.unwrap_or_else(|e| panic!("the FTS query for {terms:?} failed: {e:#}"));
            // Text in the common scripts: letters, digits, spaces, ASCII
            // punctuation (other code points may join or split words
            // differently in FTS5's unicode61: unassigned ones, marks).
            let common = |c: char| plain_letter(c) || c.is_ascii() || c.is_whitespace();
            let text = &out.memory.content;
            assert!(
                terms.is_empty()
                    || !text.chars().all(common)
                    || hits.iter().any(|s| s.id == out.memory.id),
                "{:?} not found by its words {terms:?}",
                out.memory.content
            );
        }
        let store = &h.m.ports().store;
        for terms in [fts_terms(&input.query), input.raw_terms.clone()] {
            let out = store.fts_search(
                target,
                &terms,
                &input.filter,
                u32::from(input.limit),
                input.context_weight,
            );
            if let Err(e) = out {
                panic!("the FTS query for {terms:?} failed: {e:#}");
            }
        }
    });
}

/// The memories the parsers that resolve ids are given (an imported id may
/// hold any text, hence the CJK one).
const MEMORY_IDS: [&str; 4] = [
    "mem_0123456789abcdef",
    "mem_fedcba9876543210",
    "mem_記憶記憶記憶記憶記憶",
    "mem_a",
];

/// The text NER answers are located in, and expansions are of.
const TEXT: &str = "Caroline met Melanie in Berlin on Monday; 東京で会った";

/// Each parser takes any answer: a typed error or a result within its
/// bounds (a permutation for rerank, known ids for verdicts, spans that
/// are in the text for NER, the caps of compress and expand).
///
/// Input: the parser (byte 0), `n` (byte 1), `max` (bytes 2–3), then the
/// answer's text — so a seed is an answer as a model writes it
/// (`fuzz/regressions/llm_answers/`).
pub fn llm_answers(data: &[u8]) {
    let [which, n, hi, lo, rest @ ..] = data else {
        return;
    };
    let memories: Vec<Memory> = MEMORY_IDS
        .iter()
        .map(|id| Memory::new((*id).into(), "default".into(), format!("note {id}"), 0, 0))
        .collect();
    let a = (*which, String::from_utf8_lossy(rest).into_owned());
    let (args, n, max) = (
        a.1.as_str(),
        usize::from(*n),
        usize::from(u16::from_be_bytes([*hi, *lo])),
    );
    let ids: HashSet<&str> = memories.iter().map(|m| m.id.as_str()).collect();
    let known = |v: &[Verdict]| v.iter().all(|v| ids.contains(v.id.as_str()));
    match a.0 % 13 {
        0 => {
            if let Ok(s) = compress::parse(args, max) {
                assert!(s.chars().count() <= max);
            }
        }
        1 => {
            let names: Vec<String> = memories.iter().map(|m| m.id.clone()).collect();
            if let Ok(pairs) = naming::parse(args, &names) {
                assert!(
                    pairs.iter().all(|(id, _)| names.contains(id)),
                    "a name for an unknown topic"
                );
            }
        }
        2 => {
            if let Ok(order) = rerank::parse(args, n) {
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..n).collect::<Vec<_>>(),
                    "not a permutation: {order:?}"
                );
            }
        }
        3 => drop(reflection::parse(args)),
        4 => {
            if let Ok(mentions) = ner::parse(TEXT, args) {
                for m in mentions {
                    let span = TEXT.get(m.start as usize..m.end as usize);
                    assert_eq!(span, Some(m.text.as_str()), "a span not in the text");
                }
            }
        }
        5 => drop(distill::parse(args)),
        6 => drop(merge::parse(args)),
        7 => {
            if let Ok(v) = gate::parse(args, &memories) {
                assert!(known(&v), "a verdict on an unknown memory");
            }
        }
        8 => {
            if let Ok(q) = expand::parse(args, TEXT, max) {
                assert!(q.len() <= max, "{} expansions, at most {max}", q.len());
            }
        }
        9 => drop(extract::parse(args, n)),
        10 => {
            if let Ok(v) = triage::parse(args, &memories) {
                assert!(known(&v), "a verdict on an unknown memory");
            }
        }
        11 => drop(review::parse(args, &memories)),
        _ => {
            if let Some(newer) = memories.first() {
                drop(reconcile::parse(args, newer));
            }
        }
    }
}
