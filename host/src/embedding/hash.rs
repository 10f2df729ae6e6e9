//! A deterministic, model-free embedder: hashed word unigrams and bigrams
//! (signed feature hashing), L2-normalised. Texts that share words land close
//! together. It needs no weights, so it is the fallback when no model is
//! installed and the embedder of fast tests; it knows no synonyms.

use mnemo_core::model::EmbedderInfo;

use super::{EmbeddingProvider, normalize};

pub struct HashEmbedder {
    dimension: usize,
}

impl HashEmbedder {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(8),
        }
    }

    fn bucket(&self, feature: &str) -> (usize, f32) {
        // FNV-1a: stable across platforms and releases.
        let h = feature.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        (
            (h % self.dimension as u64) as usize,
            if h >> 63 == 0 { 1.0 } else { -1.0 },
        )
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        let words: Vec<String> = mnemo_core::search_text::tokens(text)
            .into_iter()
            .filter(|w| !mnemo_core::search_text::is_stop_word(w))
            .collect();
        for w in &words {
            let (i, s) = self.bucket(w);
            v[i] += s;
        }
        for pair in words.windows(2) {
            let (i, s) = self.bucket(&format!("{} {}", pair[0], pair[1]));
            v[i] += 0.5 * s;
        }
        normalize(&mut v);
        v
    }
}

impl EmbeddingProvider for HashEmbedder {
    fn info(&self) -> EmbedderInfo {
        EmbedderInfo {
            model: format!("hash-{}", self.dimension),
            dimension: self.dimension as u32,
        }
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_close_and_vectors_are_unit_length() {
        let e = HashEmbedder::new(384);
        let v = e
            .embed(&[
                "the cat sat on the mat".into(),
                "a cat sat on a mat".into(),
                "stock market report".into(),
            ])
            .unwrap_or_default();
        assert!((cos(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        assert!(cos(&v[0], &v[1]) > 0.9);
        assert!(cos(&v[0], &v[2]).abs() < 0.3);
    }
}
