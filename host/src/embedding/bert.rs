//! BERT (all-MiniLM-L6-v2's architecture, and any BERT sentence encoder)
//! in candle, for the local embedder: the same layer as MPNet's
//! (`layer.rs`), so that it too can search with an 8-bit copy of itself
//! (`local::Precision`). It replaces candle-transformers' `BertModel`,
//! whose layers cannot take 8-bit weights: its f32 vectors are the same
//! (cosine 0.9999999 to sentence-transformers' over the fixture
//! sentences), and its exact GELU and stacked query/key/value make a
//! LoCoMo conversation's 419 turns embed in 12.0 s against 15.2 s.
//!
//! The embeddings are BERT's: word + absolute position + token type 0,
//! then a layer norm. `tests/it/embedding.rs` checks the vectors against
//! sentence-transformers' in f32 and in 8 bits.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder, embedding, layer_norm};
use serde::Deserialize;

use super::layer::{BERT, Layer, LayerConfig, load_layers, mask_bias};

/// The fields of a BERT `config.json` the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    #[serde(flatten)]
    pub layers: LayerConfig,
    pub num_attention_heads: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    /// Only `absolute` (BERT's own, and every sentence-transformers BERT's).
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".into()
}

/// The BERT encoder: token ids in, the last layer's hidden states out.
pub struct Bert {
    words: Embedding,
    positions: Embedding,
    types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

impl Bert {
    /// Loads a sentence-transformers BERT folder's weights (keys
    /// `embeddings.*`, `encoder.*`, or the same under `bert.` as a
    /// Hugging Face checkpoint has them); `quantized` turns every layer's
    /// dense weights to 8 bits.
    pub fn load(vb: VarBuilder, c: &BertConfig, quantized: bool) -> Result<Self> {
        if c.position_embedding_type != "absolute" {
            return Err(candle_core::Error::msg(format!(
                "position_embedding_type `{}` is not one mnemo runs (absolute)",
                c.position_embedding_type
            )));
        }
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        let e = vb.pp("embeddings");
        let h = c.layers.hidden_size;
        let layers = load_layers(&vb, &BERT, &c.layers, quantized)?;
        Ok(Self {
            words: embedding(c.vocab_size, h, e.pp("word_embeddings"))?,
            positions: embedding(c.max_position_embeddings, h, e.pp("position_embeddings"))?,
            types: embedding(c.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: layer_norm(h, c.layers.layer_norm_eps, e.pp("LayerNorm"))?,
            layers,
            heads: c.num_attention_heads,
        })
    }

    /// The encoder a query goes through: each dense layer in 8 bits where
    /// candle's repacked kernel takes it ([`Layer::for_queries`]; of
    /// all-MiniLM-L6-v2's, the feed-forward's output), the rest shared with
    /// `self` (tensors are reference-counted), so the copy costs the 8-bit
    /// weights only (3.8 MB for all-MiniLM-L6-v2).
    pub fn for_queries(&self) -> Result<Self> {
        Ok(Self {
            words: self.words.clone(),
            positions: self.positions.clone(),
            types: self.types.clone(),
            norm: self.norm.clone(),
            layers: self
                .layers
                .iter()
                .map(Layer::for_queries)
                .collect::<Result<_>>()?,
            heads: self.heads,
        })
    }

    /// `ids` and `mask`: (batch, len), the mask 1 for real tokens; every
    /// token of type 0, as the caller's one-segment texts are.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, len) = ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?.unsqueeze(0)?;
        let x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .broadcast_add(&self.types.forward(&ids.zeros_like()?)?)?;
        let x = self.norm.forward(&x)?;
        let bias = mask_bias(mask)?;
        self.layers
            .iter()
            .try_fold(x, |x, layer| layer.forward(&x, &bias, self.heads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use std::collections::HashMap;

    fn config() -> BertConfig {
        BertConfig {
            vocab_size: 10,
            layers: LayerConfig {
                hidden_size: 8,
                num_hidden_layers: 1,
                intermediate_size: 16,
                layer_norm_eps: 1e-12,
                hidden_act: "gelu".into(),
            },
            num_attention_heads: 2,
            max_position_embeddings: 16,
            type_vocab_size: 2,
            position_embedding_type: "absolute".into(),
        }
    }

    /// Every weight of `config()`'s one-layer BERT, the same values each
    /// time, under `prefix`.
    fn weights(prefix: &str) -> HashMap<String, Tensor> {
        let layer = "encoder.layer.0.";
        let mut shapes: Vec<(String, Vec<usize>)> = vec![
            ("embeddings.word_embeddings.weight".into(), vec![10, 8]),
            ("embeddings.position_embeddings.weight".into(), vec![16, 8]),
            ("embeddings.token_type_embeddings.weight".into(), vec![2, 8]),
        ];
        for (name, out, input) in [
            ("attention.self.query", 8, 8),
            ("attention.self.key", 8, 8),
            ("attention.self.value", 8, 8),
            ("attention.output.dense", 8, 8),
            ("intermediate.dense", 16, 8),
            ("output.dense", 8, 16),
        ] {
            shapes.push((format!("{layer}{name}.weight"), vec![out, input]));
            shapes.push((format!("{layer}{name}.bias"), vec![out]));
        }
        for norm in [
            "embeddings.LayerNorm".to_string(),
            format!("{layer}attention.output.LayerNorm"),
            format!("{layer}output.LayerNorm"),
        ] {
            shapes.push((format!("{norm}.weight"), vec![8]));
            shapes.push((format!("{norm}.bias"), vec![8]));
        }
        shapes
            .into_iter()
            .enumerate()
            .map(|(k, (name, shape))| {
                let n: usize = shape.iter().product();
                let values: Vec<f32> = (0..n)
                    .map(|i| ((i * 7 + k * 13) as f32 * 0.37).sin() * 0.5)
                    .collect();
                let t = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
                (format!("{prefix}{name}"), t)
            })
            .collect()
    }

    fn run(prefix: &str) -> Vec<Vec<f32>> {
        let vb = VarBuilder::from_tensors(weights(prefix), DType::F32, &Device::Cpu);
        let bert = Bert::load(vb, &config(), false).unwrap();
        let ids = Tensor::new(&[[1u32, 4, 2, 0]], &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[1u32, 1, 1, 0]], &Device::Cpu).unwrap();
        let out = bert.forward(&ids, &mask).unwrap();
        out.squeeze(0).unwrap().to_vec2().unwrap()
    }

    /// A Hugging Face checkpoint keeps BERT's weights under `bert.`; it
    /// loads as the same encoder as a sentence-transformers folder.
    #[test]
    fn a_checkpoint_under_bert_loads_the_same_encoder() {
        let plain = run("");
        assert_eq!(plain.len(), 4);
        assert!(plain.iter().flatten().all(|x| x.is_finite()));
        assert_eq!(plain, run("bert."));
    }

    #[test]
    fn only_absolute_positions_are_run() {
        let mut c = config();
        c.position_embedding_type = "relative_key".into();
        let vb = VarBuilder::from_tensors(weights(""), DType::F32, &Device::Cpu);
        let err = Bert::load(vb, &c, false).err().unwrap().to_string();
        assert!(err.contains("relative_key"), "{err}");
    }
}
