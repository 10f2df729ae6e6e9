//! Precision and recall of the rule extractor on the labelled turns of
//! `tests/fixtures/extraction/turns.jsonl` (written before the rules were
//! tuned): a fact counts when its predicate and object match a label, case
//! aside. `EXTRACT_DIAG=1 cargo test -p mnemo-core extraction_quality --
//! --nocapture` lists every miss.

use super::facts_in_turn;
/// The turns the rules were tuned on (labelled before tuning).
const TUNING: &str = include_str!("../../../../tests/fixtures/extraction/turns.jsonl");
/// Turns written after tuning and never tuned on.
const HELD_OUT: &str = include_str!("../../../../tests/fixtures/extraction/held-out.jsonl");

/// (true positives, false positives, false negatives, turns).
fn score(labelled: &str) -> (usize, usize, usize, usize) {
    let (mut tp, mut fp, mut fneg, mut turns) = (0, 0, 0, 0);
    for line in labelled.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        let norm = |s: &str| s.trim().to_lowercase();
        let mut expected: Vec<(String, String)> = v["facts"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        (
                            norm(f[0].as_str().unwrap_or("")),
                            norm(f[1].as_str().unwrap_or("")),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        turns += 1;
        let got = facts_in_turn(
            v["role"].as_str().unwrap_or("user"),
            v["text"].as_str().unwrap_or(""),
            0,
        );
        for f in got {
            let Some((_, p, o)) = f.triple else {
                fp += 1;
                continue;
            };
            match expected.iter().position(|e| *e == (norm(&p), norm(&o))) {
                Some(i) => {
                    tp += 1;
                    expected.remove(i);
                }
                None => {
                    fp += 1;
                    if std::env::var("EXTRACT_DIAG").is_ok() {
                        println!("FP {p:?} {o:?} <- {}", v["text"]);
                    }
                }
            }
        }
        if std::env::var("EXTRACT_DIAG").is_ok() {
            for e in &expected {
                println!("FN {e:?} <- {}", v["text"]);
            }
        }
        fneg += expected.len();
    }
    (tp, fp, fneg, turns)
}

/// (precision, recall, turns) on a labelled file, printed.
fn measure(name: &str, labelled: &str) -> (f32, f32, usize) {
    let (tp, fp, fneg, turns) = score(labelled);
    let precision = tp as f32 / (tp + fp).max(1) as f32;
    let recall = tp as f32 / (tp + fneg).max(1) as f32;
    println!(
        "extraction on {turns} {name} turns: precision {precision:.3} recall {recall:.3} \
         (tp {tp}, fp {fp}, fn {fneg})"
    );
    (precision, recall, turns)
}

/// Round 1's rules measured 0.667 / 0.356 on the tuning turns.
#[test]
fn extraction_quality_on_the_labelled_turns() {
    let (precision, recall, turns) = measure("tuning", TUNING);
    assert!(turns >= 100);
    assert!(precision >= 0.90 && recall >= 0.85, "{precision} {recall}");
    let (precision, recall, turns) = measure("held-out", HELD_OUT);
    assert!(turns >= 40);
    assert!(precision >= 0.80 && recall >= 0.60, "{precision} {recall}");
}
