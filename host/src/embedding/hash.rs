//! A deterministic, model-free embedder (the core's `hash_embedding`:
//! hashed word unigrams and bigrams, L2-normalised). It needs no weights, so
//! it is the fallback when no model is installed and the embedder of fast
//! tests; it knows no synonyms. The JavaScript host calls the same function
//! through the core's `analysis` export.

use mnemo_core::model::EmbedderInfo;

use super::EmbeddingProvider;

pub struct HashEmbedder {
    dimension: usize,
}

impl HashEmbedder {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(8),
        }
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
        Ok(texts
            .iter()
            .map(|t| mnemo_core::hash_embedding(t, self.dimension))
            .collect())
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
