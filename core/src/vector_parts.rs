//! What an item's vector is made of. A memory is one statement and is
//! embedded whole. A dialogue turn often says several things ("Taking care
//! of ourselves is vital. I'm off to go swimming with the kids."), and one
//! embedding of the whole turn blurs the clause a question is about. So a
//! turn of two or more sentences is embedded whole *and* sentence by
//! sentence, each sentence carrying the turn's speaker label when the text
//! opens with one (`Melanie: …`: who said it is part of what it means), and
//! its vector is the whole turn's plus the mean of its sentences', with
//! `TURN_WHOLE_WEIGHT` on the whole (thresholds.rs says what set it).
//!
//! Both hosts embed through these two functions (the native one links them,
//! the JavaScript one calls the component's `analysis` exports), so a turn
//! has the same vector whichever host embedded it. Only background
//! embedding (the backfill) runs them: nothing here is on a request's path.

use crate::model::Target;
use crate::thresholds::{TURN_WHOLE_WEIGHT, VECTOR_PARTS_MAX};
use crate::vector::{centroid, normalize, normalized};

/// The texts whose embeddings make up the vector of `text` stored as
/// `target`: the text itself first, then — for an episode of two or more
/// sentences — each sentence (at most `VECTOR_PARTS_MAX`), prefixed with the
/// turn's speaker label when it opens with one.
pub fn vector_parts(target: Target, text: &str) -> Vec<String> {
    let mut parts = vec![text.to_string()];
    if target != Target::Episodes {
        return parts;
    }
    let (label, body) = speaker_label(text);
    let sentences = sentences(body);
    if sentences.len() < 2 {
        return parts;
    }
    parts.extend(
        sentences
            .into_iter()
            .take(VECTOR_PARTS_MAX)
            .map(|s| match label {
                Some(l) => format!("{l}: {s}"),
                None => s.to_string(),
            }),
    );
    parts
}

/// The item's vector from its parts' vectors, in `vector_parts`' order:
/// the first alone when there is one, else `TURN_WHOLE_WEIGHT ×` the whole
/// plus the rest × the normalised mean of the sentences, normalised.
pub fn combine_parts(parts: &[Vec<f32>]) -> Vec<f32> {
    let Some((whole, sentences)) = parts.split_first() else {
        return Vec::new();
    };
    if sentences.is_empty() {
        return whole.clone();
    }
    let mean = centroid(sentences.iter().map(Vec::as_slice), whole.len());
    let mut out: Vec<f32> = normalized(whole)
        .iter()
        .zip(&mean)
        .map(|(w, m)| TURN_WHOLE_WEIGHT * w + (1.0 - TURN_WHOLE_WEIGHT) * m)
        .collect();
    normalize(&mut out);
    out
}

/// A transcript line's speaker label: up to three words before a colon at
/// the very start (`Melanie: …`, `Dr Jane Doe: …`), and the text after it.
fn speaker_label(text: &str) -> (Option<&str>, &str) {
    let Some((label, rest)) = text.split_once(": ") else {
        return (None, text);
    };
    let words = label.split_whitespace().count();
    let plain = label
        .chars()
        .all(|c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '\'' || c == '.');
    if (1..=3).contains(&words) && label.len() <= 40 && plain && !label.ends_with('.') {
        (Some(label.trim()), rest)
    } else {
        (None, text)
    }
}

/// The sentences of `text`: split after `.`, `!` or `?` (and a closing
/// quote or bracket) followed by whitespace, and before an attached
/// `[shares …]`-style bracket; empty pieces dropped.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let next_space = chars.get(k + 1).is_some_and(|&(_, n)| n.is_whitespace());
        let ends = matches!(c, '.' | '!' | '?') && next_space;
        let quote_ends = matches!(c, '"' | '\'' | ')' | '”')
            && next_space
            && k > 0
            && matches!(chars[k - 1].1, '.' | '!' | '?');
        let bracket = c == '[' && k > 0 && chars[k - 1].1.is_whitespace();
        if ends || quote_ends {
            push(&mut out, text.get(start..i + c.len_utf8()));
            start = i + c.len_utf8();
        } else if bracket {
            push(&mut out, text.get(start..i));
            start = i;
        }
    }
    push(&mut out, text.get(start..));
    out
}

/// Adds a piece, trimmed, unless empty. The cut points are char boundaries
/// (from `char_indices`), so `piece` is always there.
fn push<'a>(out: &mut Vec<&'a str>, piece: Option<&'a str>) {
    let piece = piece.unwrap_or_default().trim();
    if !piece.is_empty() {
        out.push(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_of_several_sentences_is_embedded_whole_and_by_sentence() {
        let turn = "Melanie: Yep, Caroline. Taking care of ourselves is vital! \
                    I'm off to go swimming? [shares a photo of a pool]";
        assert_eq!(
            vector_parts(Target::Episodes, turn),
            vec![
                turn.to_string(),
                "Melanie: Yep, Caroline.".into(),
                "Melanie: Taking care of ourselves is vital!".into(),
                "Melanie: I'm off to go swimming?".into(),
                "Melanie: [shares a photo of a pool]".into(),
            ]
        );
        let quoted = "I loved \"Charlotte's Web.\" It was so cool.";
        assert_eq!(
            vector_parts(Target::Episodes, quoted)[1..],
            ["I loved \"Charlotte's Web.\"", "It was so cool."]
        );
    }

    #[test]
    fn memories_and_single_sentences_are_embedded_whole() {
        let memory = "Melanie swims. She paints.";
        assert_eq!(vector_parts(Target::Memories, memory), vec![memory]);
        assert_eq!(
            vector_parts(Target::Episodes, "Jon: Hi there!"),
            vec!["Jon: Hi there!"]
        );
        assert_eq!(
            vector_parts(Target::Episodes, "Note that 3.5 is fine: yes"),
            vec!["Note that 3.5 is fine: yes"],
            "a colon after a sentence is not a speaker label"
        );
    }

    #[test]
    fn the_label_is_a_short_name_at_the_start() {
        assert_eq!(
            speaker_label("Dr Jane Doe: hi"),
            (Some("Dr Jane Doe"), "hi")
        );
        assert_eq!(
            speaker_label("the plan was simple: go"),
            (None, "the plan was simple: go")
        );
        assert_eq!(speaker_label("no label here"), (None, "no label here"));
    }

    #[test]
    fn the_vector_weighs_the_whole_against_the_sentences_mean() {
        assert_eq!(combine_parts(&[vec![0.6, 0.8]]), vec![0.6, 0.8]);
        assert!(combine_parts(&[]).is_empty());
        let v = combine_parts(&[vec![1.0, 0.0], vec![0.0, 1.0], vec![0.0, 1.0]]);
        let expect = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            (v[0] - expect).abs() < 1e-6 && (v[1] - expect).abs() < 1e-6,
            "{v:?}"
        );
        let n: f32 = combine_parts(&[vec![0.3, 0.4], vec![1.0, 0.0], vec![0.0, -1.0]])
            .iter()
            .map(|x| x * x)
            .sum();
        assert!((n - 1.0).abs() < 1e-5, "unit length");
    }
}
