//! `mnemo-lab eval context --ceiling`: how far any gate over the embedder's
//! cosine can go on the context set, whatever recall's fusion does.
//!
//! Every memory of the set and every prompt is embedded with the configured
//! embedder (the prompts through its query path, as recall embeds them), and
//! each prompt's memories are ranked by a signal alone. For each signal
//! this prints:
//!
//! - the ranking's ceiling: the share of labelled (prompt, memory) pairs
//!   among the first 5 and the first 10 (a perfect gate over that many
//!   candidates reaches no higher recall);
//! - the best gate of the form "signal ≥ floor and ≥ share × the best
//!   candidate's" over the first 5: its F1, and the highest recall at
//!   precision ≥ 0.8 (issue 46's target: recall ≥ 0.85 there).
//!
//! The signals: the cosine; the cosine z-scored over the prompt's cosines
//! to the whole set (a prompt close to everything stands out less); and
//! the cosine less a memory's hubness (its mean cosine to its 10 nearest
//! memories, as cross-domain similarity local scaling discounts hubs).
//! They are what a gate could read without a model that reads the prompt
//! and the memory together. Two more rank by the prompt's content words
//! (its full-text terms, stop words and the question's frame left out)
//! embedded on their own, and by the better of the two cosines.

use mnemo_core::ports::Embedder;
use mnemo_host::Mnemo;

/// Candidates a gate judges (recall's `CONTEXT_LIMIT`) and the wider pool.
const SHOWN: usize = 5;
const POOL: usize = 10;
/// The hubness of a memory: its mean cosine to this many nearest memories.
const HUB_NEIGHBOURS: usize = 10;
/// The precision issue 46's target asks recall at.
const TARGET_PRECISION: f64 = 0.8;

/// One signal's scores: `scores[p][m]`, prompt by memory.
struct Signal {
    name: &'static str,
    scores: Vec<Vec<f64>>,
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Indices of `row`'s `n` largest, best first.
fn top(row: &[f64], n: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    idx.truncate(n);
    idx
}

fn cosines(prompts: &[Vec<f32>], memories: &[Vec<f32>]) -> Vec<Vec<f64>> {
    prompts
        .iter()
        .map(|p| memories.iter().map(|m| dot(p, m)).collect())
        .collect()
}

/// The signals of `prompts` × `memories` (vectors normalised).
fn signals(prompts: &[Vec<f32>], memories: &[Vec<f32>]) -> Vec<Signal> {
    let cosine = cosines(prompts, memories);
    let z = cosine
        .iter()
        .map(|row| {
            let n = row.len().max(1) as f64;
            let mean = row.iter().sum::<f64>() / n;
            let sd = (row.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n)
                .sqrt()
                .max(1e-9);
            row.iter().map(|x| (x - mean) / sd).collect()
        })
        .collect();
    let hub: Vec<f64> = memories
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut near: Vec<f64> = memories
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| dot(m, o))
                .collect();
            near.sort_by(|a, b| b.total_cmp(a));
            near.truncate(HUB_NEIGHBOURS);
            near.iter().sum::<f64>() / near.len().max(1) as f64
        })
        .collect();
    let csls = cosine
        .iter()
        .map(|row| row.iter().zip(&hub).map(|(c, h)| c - 0.5 * h).collect())
        .collect();
    vec![
        Signal {
            name: "cosine",
            scores: cosine,
        },
        Signal {
            name: "cosine, z-scored over the set",
            scores: z,
        },
        Signal {
            name: "cosine − 0.5 × hubness",
            scores: csls,
        },
    ]
}

/// (precision, recall) of the gate `floor`/`share` over each prompt's
/// first `SHOWN`.
fn gate(s: &Signal, expect: &[Vec<usize>], total: usize, floor: f64, share: f64) -> (f64, f64) {
    let (mut shown, mut right) = (0usize, 0usize);
    for (row, want) in s.scores.iter().zip(expect) {
        let first = top(row, SHOWN);
        let best = row[first[0]];
        for &m in &first {
            let near_best = best <= 0.0 || row[m] >= share * best;
            if row[m] >= floor && near_best {
                shown += 1;
                right += usize::from(want.contains(&m));
            }
        }
    }
    let precision = if shown == 0 {
        1.0
    } else {
        right as f64 / shown as f64
    };
    (precision, right as f64 / total.max(1) as f64)
}

/// Prints the table for `memories` (their texts) and `prompts` (each with
/// the indices of the memories it should inject).
pub fn print(
    mnemo: &Mnemo,
    memories: &[String],
    prompts: &[(String, Vec<usize>)],
) -> anyhow::Result<()> {
    let embeddings = &mnemo.ports().embeddings;
    let memory_vectors = embeddings.embed_batch(memories)?;
    let texts: Vec<String> = prompts.iter().map(|(p, _)| p.clone()).collect();
    // One at a time, through the query path, as recall embeds a prompt.
    let as_queries = |texts: &[String]| -> anyhow::Result<Vec<Vec<f32>>> {
        let _queries = embeddings.searching();
        let mut out = Vec::with_capacity(texts.len());
        for t in texts {
            out.extend(embeddings.embed(std::slice::from_ref(t))?);
        }
        Ok(out)
    };
    let prompt_vectors = as_queries(&texts)?;
    let words: Vec<String> = texts
        .iter()
        .map(|t| mnemo_core::search_text::fts_terms(t).join(" "))
        .collect();
    let word_vectors = as_queries(&words)?;
    let expect: Vec<Vec<usize>> = prompts.iter().map(|(_, e)| e.clone()).collect();
    let total: usize = expect.iter().map(Vec::len).sum();
    let mut all = signals(&prompt_vectors, &memory_vectors);
    let by_words = cosines(&word_vectors, &memory_vectors);
    let better = all[0]
        .scores
        .iter()
        .zip(&by_words)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x.max(*y)).collect())
        .collect();
    all.push(Signal {
        name: "cosine of the prompt's content words",
        scores: by_words,
    });
    all.push(Signal {
        name: "the better of the two cosines",
        scores: better,
    });
    println!(
        "\n| signal ({}) | first {SHOWN} hold | first {POOL} hold | best F1 (P / R) | recall at precision ≥ {TARGET_PRECISION} |\n|---|---|---|---|---|",
        embeddings.info().model
    );
    for s in all {
        let held = |n: usize| {
            s.scores
                .iter()
                .zip(&expect)
                .map(|(row, want)| top(row, n).iter().filter(|m| want.contains(m)).count())
                .sum::<usize>() as f64
                / total.max(1) as f64
        };
        let (lo, hi) = s
            .scores
            .iter()
            .flatten()
            .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        let mut best_f1 = (0.0, 0.0, 0.0);
        let mut at_target = 0.0f64;
        for step in 0..=200 {
            let floor = lo + (hi - lo) * f64::from(step) / 200.0;
            for share in (0..20).map(|k| f64::from(k) * 0.05) {
                let (p, r) = gate(&s, &expect, total, floor, share);
                let f1 = if p + r > 0.0 {
                    2.0 * p * r / (p + r)
                } else {
                    0.0
                };
                if f1 > best_f1.0 {
                    best_f1 = (f1, p, r);
                }
                if p >= TARGET_PRECISION {
                    at_target = at_target.max(r);
                }
            }
        }
        println!(
            "| {} | {:.3} | {:.3} | {:.3} ({:.3} / {:.3}) | {:.3} |",
            s.name,
            held(SHOWN),
            held(POOL),
            best_f1.0,
            best_f1.1,
            best_f1.2,
            at_target
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn a_perfect_signal_has_a_perfect_gate_and_a_blind_one_does_not() {
        // Two memories on two axes; each prompt points at its own.
        let memories = vec![unit(&[1.0, 0.0]), unit(&[0.0, 1.0])];
        let prompts = vec![unit(&[1.0, 0.1]), unit(&[0.1, 1.0])];
        let expect = vec![vec![0], vec![1]];
        let s = &signals(&prompts, &memories)[0];
        assert_eq!(top(&s.scores[0], 1), vec![0]);
        assert_eq!(gate(s, &expect, 2, 0.5, 0.0), (1.0, 1.0));
        // With no floor every memory is shown: half are wrong.
        assert_eq!(gate(s, &expect, 2, -1.0, 0.0), (0.5, 1.0));
        // Labels the signal ranks last: nothing right at any floor.
        let wrong = vec![vec![1], vec![0]];
        assert_eq!(gate(s, &wrong, 2, 0.5, 0.0).1, 0.0);
    }
}
