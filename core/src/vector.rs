//! Small vector arithmetic for clustering and dedup (vectors from the
//! embedding port are already L2-normalised).

/// Cosine similarity; 0 for mismatched or zero vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// A deterministic, model-free embedding of `text`: hashed word unigrams
/// and bigrams (signed feature hashing, FNV-1a), L2-normalised. Texts that
/// share words land close together; it knows no synonyms. The hosts' `hash`
/// embedder (the fallback without a model, and the embedder of fast tests)
/// is this function, so both hosts embed alike.
pub fn hash_embedding(text: &str, dimension: usize) -> Vec<f32> {
    let dimension = dimension.max(8);
    let bucket = |feature: &str| -> (usize, f32) {
        // FNV-1a: stable across platforms and releases.
        let h = feature.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        (
            (h % dimension as u64) as usize,
            if h >> 63 == 0 { 1.0 } else { -1.0 },
        )
    };
    let mut v = vec![0f32; dimension];
    let words: Vec<String> = crate::text::tokens(text)
        .into_iter()
        .filter(|w| !crate::text::is_stop_word(w))
        .collect();
    for w in &words {
        let (i, s) = bucket(w);
        v[i] += s;
    }
    for pair in words.windows(2) {
        let (i, s) = bucket(&format!("{} {}", pair[0], pair[1]));
        v[i] += 0.5 * s;
    }
    normalize(&mut v);
    v
}

/// The normalised mean of `vectors` (a spherical centroid).
pub fn centroid<'a>(vectors: impl IntoIterator<Item = &'a [f32]>, dim: usize) -> Vec<f32> {
    let mut sum = vec![0.0f32; dim];
    for v in vectors {
        add(&mut sum, v);
    }
    normalize(&mut sum);
    sum
}

/// `sum += v`, element by element.
pub fn add(sum: &mut [f32], v: &[f32]) {
    for (s, x) in sum.iter_mut().zip(v) {
        *s += x;
    }
}

/// A unit-length copy of `v` (a zero vector stays zero).
pub fn normalized(v: &[f32]) -> Vec<f32> {
    let mut out = v.to_vec();
    normalize(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_and_centroid() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        let c = centroid([&[1.0f32, 0.0][..], &[0.0, 1.0][..]], 2);
        assert!((c[0] - c[1]).abs() < 1e-6 && (c[0] * c[0] + c[1] * c[1] - 1.0).abs() < 1e-5);
    }
}
