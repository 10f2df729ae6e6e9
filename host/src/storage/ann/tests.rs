#![allow(clippy::unwrap_used, clippy::panic)]
use super::*;

/// A unit vector of `dim` from `seed` (also `tail.rs`'s tests).
pub(super) fn unit(seed: u64, dim: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

const NS: &str = "default";

fn approximate(ann: &mut AnnIndex, v: &[f32], k: usize) -> Vec<(i64, f32)> {
    match ann.search(Target::Memories, NS, v, k) {
        Answer::Approximate(got) => got,
        Answer::Exact => panic!("a graph exists"),
    }
}

/// Recall@10 of the index against brute force over `rows`, of 20 queries.
fn recall_at_10(ann: &mut AnnIndex, rows: &HashMap<i64, Vec<f32>>) -> usize {
    let mut found = 0;
    for q in 0..20u64 {
        let v = unit(10_000 + q, 32);
        let mut exact: Vec<(i64, f32)> = rows.iter().map(|(i, w)| (*i, dot(&v, w))).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = approximate(ann, &v, 10);
        found += exact[..10]
            .iter()
            .filter(|(i, _)| got.iter().any(|(g, _)| g == i))
            .count();
    }
    found
}

fn built(n: i64, flush_at: usize) -> (AnnIndex, HashMap<i64, Vec<f32>>) {
    built_in(AnnIndex::new(Some(100)).with_flush_at(flush_at), n)
}

fn built_in(mut ann: AnnIndex, n: i64) -> (AnnIndex, HashMap<i64, Vec<f32>>) {
    let rows: HashMap<i64, Vec<f32>> = (0..n).map(|i| (i, unit(i as u64, 32))).collect();
    let snapshot: Vec<(i64, Vec<f32>)> = rows.iter().map(|(i, v)| (*i, v.clone())).collect();
    ann.maybe_build(Target::Memories, NS, n as usize, move || Ok((snapshot, 0)))
        .unwrap();
    ann.wait();
    (ann, rows)
}

#[test]
fn the_graph_finds_the_exact_neighbours_and_follows_writes() {
    let (mut ann, rows) = built(500, 5_000);
    assert!(recall_at_10(&mut ann, &rows) >= 190);
    // A written vector is found at once, and its old point is ignored.
    let v = unit(77_777, 32);
    ann.put(Target::Memories, NS, 3, &v, 1);
    let got = approximate(&mut ann, &v, 3);
    assert_eq!(got[0].0, 3);
    assert!((got[0].1 - 1.0).abs() < 1e-5);
    assert_eq!(got.iter().filter(|(i, _)| *i == 3).count(), 1);
    // A removed vector is never returned.
    ann.remove(Target::Memories, NS, 3, 2);
    assert!(approximate(&mut ann, &v, 10).iter().all(|(i, _)| *i != 3));
    // Small or unknown partitions answer exactly.
    assert!(matches!(
        ann.search(Target::Episodes, NS, &v, 3),
        Answer::Exact
    ));
}

#[test]
fn writes_become_segments_that_merge_without_a_rebuild() {
    let (mut ann, mut rows) = built(400, 100);
    let mut seq = 0;
    // 1,000 new vectors and 150 replaced ones, in steps of 50.
    for i in 400..1_400i64 {
        seq += 1;
        let row = if i % 7 == 0 { i % 400 } else { i };
        let v = unit(1_000_000 + i as u64, 32);
        ann.put(Target::Memories, NS, row, &v, seq);
        rows.insert(row, v);
        if i % 50 == 0 {
            ann.wait();
        }
    }
    ann.wait();
    let status = ann.status();
    // No rebuild from the table: segments were added (and merged by tier).
    assert!(status.segments >= 2, "{status:?}");
    assert!(status.fresh < 100, "{status:?}");
    assert!(recall_at_10(&mut ann, &rows) >= 185);
    // Every replaced row is found by its new vector, once.
    for row in (0..400)
        .filter(|r| rows.contains_key(r) && r % 7 == 0)
        .take(20)
    {
        let got = approximate(&mut ann, &rows[&row], 5);
        assert_eq!(got[0].0, row);
        assert!((got[0].1 - 1.0).abs() < 1e-4);
        assert_eq!(got.iter().filter(|(i, _)| *i == row).count(), 1);
    }
}

#[test]
fn a_replayed_change_is_applied_once_whatever_the_order() {
    let (mut ann, _) = built(300, 5_000);
    let new = unit(5, 32);
    // The writer's change 7, then a replay of changes 6 and 7 (the log).
    ann.put(Target::Memories, NS, 5, &new, 7);
    assert!(!ann.settled(Target::Memories, NS, 5, 6));
    ann.put(Target::Memories, NS, 5, &unit(99, 32), 6);
    let got = approximate(&mut ann, &new, 1);
    assert_eq!(got[0].0, 5);
    assert!((got[0].1 - 1.0).abs() < 1e-5, "the older version won");
    // A change older than what a segment holds changes nothing.
    assert!(ann.settled(Target::Memories, NS, 9, 0));
}

#[test]
fn tiers_grow_by_the_fanout() {
    assert_eq!(tier(0, 100), 0);
    assert_eq!(tier(399, 100), 0);
    assert_eq!(tier(400, 100), 1);
    assert_eq!(tier(1_599, 100), 1);
    assert_eq!(tier(1_600, 100), 2);
}

#[test]
fn no_build_makes_a_segment_over_the_cap() {
    // A first build of 1,000 points under a cap of 300: four chunks of 250.
    let ann = AnnIndex::new(Some(100))
        .with_flush_at(100)
        .with_segment_max(300);
    let (mut ann, mut rows) = built_in(ann, 1_000);
    let sizes: Vec<usize> = ann.wait().into_iter().map(|(n, _)| n).collect();
    assert_eq!(sizes, vec![250; 4]);
    assert!(recall_at_10(&mut ann, &rows) >= 185);
    // 1,200 more vectors: flushed by 100s, merged by tier, never past 300.
    for (seq, i) in (1_000..2_200i64).enumerate() {
        let v = unit(2_000_000 + i as u64, 32);
        ann.put(Target::Memories, NS, i, &v, seq as i64 + 1);
        rows.insert(i, v);
        if i % 100 == 0 {
            ann.wait();
        }
    }
    let sizes: Vec<usize> = ann.wait().into_iter().map(|(n, _)| n).collect();
    assert!(sizes.iter().all(|n| *n <= 300), "{sizes:?}");
    assert!(sizes.iter().any(|n| *n > 100), "merges happened: {sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>() + ann.status().fresh, 2_200);
    assert!(recall_at_10(&mut ann, &rows) >= 185);
}

#[test]
fn chunks_are_even_and_under_the_cap() {
    let lens = |n: usize, max: usize| -> Vec<usize> {
        chunks((0..n).collect::<Vec<_>>(), max)
            .iter()
            .map(Vec::len)
            .collect()
    };
    assert_eq!(lens(10, 25), vec![10]);
    assert_eq!(lens(25, 25), vec![25]);
    assert_eq!(lens(26, 25), vec![13, 13]);
    assert_eq!(lens(1_000_000, 250_000), vec![250_000; 4]);
    assert_eq!(lens(0, 25), vec![0]);
}

/// The top 10 of brute force over `rows`: (row, cosine), best first.
fn exact_10(rows: &HashMap<i64, Vec<f32>>, v: &[f32]) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> = rows.iter().map(|(i, w)| (*i, dot(v, w))).collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(10);
    all
}

/// Waits (up to a minute) until the index holds `n` segments.
fn until_segments(ann: &mut AnnIndex, n: usize) {
    for _ in 0..6_000 {
        if ann.status().segments >= n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{n} segments not installed: {:?}", ann.status());
}

#[test]
fn a_first_build_is_searched_exactly_until_its_chunks_are_installed() {
    let (ann, tokens) = AnnIndex::new(Some(100))
        .with_flush_at(5_000)
        .with_segment_max(300)
        .gated();
    let mut ann = ann;
    let mut rows: HashMap<i64, Vec<f32>> = (0..1_000).map(|i| (i, unit(i as u64, 32))).collect();
    let snapshot: Vec<(i64, Vec<f32>)> = rows.iter().map(|(i, v)| (*i, v.clone())).collect();
    ann.maybe_build(Target::Memories, NS, 1_000, move || Ok((snapshot, 0)))
        .unwrap();
    // Nothing built yet: every answer is brute force's, bit for bit.
    for q in 0..20u64 {
        let v = unit(10_000 + q, 32);
        assert_eq!(approximate(&mut ann, &v, 10), exact_10(&rows, &v));
    }
    // Changes while it builds: row 3 replaced, row 4 removed.
    let new = unit(88_888, 32);
    ann.put(Target::Memories, NS, 3, &new, 1);
    rows.insert(3, new.clone());
    ann.remove(Target::Memories, NS, 4, 2);
    let old_4 = rows.remove(&4).unwrap();
    let check = |ann: &mut AnnIndex| {
        let got = approximate(ann, &new, 5);
        assert_eq!(got[0].0, 3);
        assert!((got[0].1 - 1.0).abs() < 1e-5);
        assert_eq!(got.iter().filter(|(i, _)| *i == 3).count(), 1);
        assert!(approximate(ann, &old_4, 10).iter().all(|(i, _)| *i != 4));
    };
    check(&mut ann);
    assert_eq!(
        approximate(&mut ann, &unit(10_000, 32), 10),
        exact_10(&rows, &unit(10_000, 32))
    );
    // One chunk of four built: it is walked, the other three still scanned.
    tokens.send(()).unwrap();
    until_segments(&mut ann, 1);
    assert_eq!(ann.status().building, 1);
    check(&mut ann);
    // The rest: four segments, the tail gone, the changes still applied.
    for _ in 0..3 {
        tokens.send(()).unwrap();
    }
    let sizes: Vec<usize> = ann.wait().into_iter().map(|(n, _)| n).collect();
    assert_eq!(sizes, vec![250; 4]);
    check(&mut ann);
    assert!(recall_at_10(&mut ann, &rows) >= 185);
}

#[test]
fn a_search_keeps_the_k_nearest_fresh_vectors_and_answers_as_brute_force() {
    // A graph of 100 points and 2,010 fresh ones, ten of them copies of
    // others (ties at the cut): only the `k` nearest fresh reach `admit`,
    // and the answer is still brute force's, ties by row.
    let (mut ann, mut rows) = built(100, 5_000);
    for i in 100..2_110i64 {
        let v = match i {
            ..2_100 => unit(i as u64, 32),
            _ => rows[&(i - 2_000)].clone(),
        };
        ann.put(Target::Memories, NS, i, &v, 1);
        rows.insert(i, v);
    }
    assert_eq!(ann.status().fresh, 2_010);
    for q in 0..30i64 {
        let v = match q % 2 {
            0 => unit(50_000 + q as u64, 32),
            _ => rows[&(q * 70)].clone(),
        };
        for k in [1, 5, 15, 40] {
            let mut exact: Vec<(i64, f32)> = rows.iter().map(|(i, w)| (*i, dot(&v, w))).collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            exact.truncate(k);
            let got = approximate(&mut ann, &v, k);
            // The graph's points score from its own copy of the vector,
            // an ulp or so from `dot` here; the fresh ones exactly.
            let ids = |a: &[(i64, f32)]| a.iter().map(|(i, _)| *i).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&exact), "query {q}, k {k}");
            for ((i, a), (_, b)) in got.iter().zip(&exact) {
                assert!(*i < 100 || a == b, "row {i}: {a} against {b}");
                assert!((a - b).abs() < 1e-6);
            }
        }
    }
}
