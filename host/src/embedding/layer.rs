//! The transformer layer both local encoders run (`mpnet.rs`, `bert.rs`):
//! BERT's post-norm layer — self-attention, then a GELU feed-forward, each
//! added back to its input and normalised — with dense weights in f32 or
//! in 8 bits. MPNet's layer is BERT's; only the names of the attention's
//! weights differ ([`Names`]), and MPNet adds a position bias to the
//! attention scores, which reaches the layer in `bias` with the mask.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Module, Result, Shape, Tensor};
use candle_nn::{LayerNorm, VarBuilder, layer_norm};
use serde::Deserialize;
use std::sync::{Mutex, PoisonError};

/// The feed-forward's activation (`hidden_act` in `config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Activation {
    /// `gelu`: the exact form (`GeluErf`), both released models' own.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    Relu,
}

impl Activation {
    pub(super) fn parse(name: &str) -> std::result::Result<Self, String> {
        match name {
            "gelu" => Ok(Self::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" => Ok(Self::GeluTanh),
            "relu" => Ok(Self::Relu),
            other => Err(format!(
                "hidden_act `{other}` is not one mnemo runs (gelu, gelu_new, relu)"
            )),
        }
    }

    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::Gelu => x.apply_op1_no_bwd(&GeluErf),
            Self::GeluTanh => x.gelu(),
            Self::Relu => x.relu(),
        }
    }
}

/// A layer's widths, its norms' epsilon and its activation.
#[derive(Debug, Clone, Copy)]
struct Dims {
    hidden: usize,
    intermediate: usize,
    eps: f64,
    act: Activation,
}

/// The fields of a `config.json` the layers read, named alike in BERT's
/// and MPNet's (flattened into `BertConfig` and `MpNetConfig`).
#[derive(Debug, Clone, Deserialize)]
pub struct LayerConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub layer_norm_eps: f64,
    /// `gelu` when the file leaves it out, as in transformers' own
    /// `BertConfig` and `MPNetConfig`.
    #[serde(default = "gelu_name")]
    pub hidden_act: String,
}

fn gelu_name() -> String {
    "gelu".into()
}

/// A checkpoint's layers (`encoder.layer.{i}`), dense weights in 8 bits
/// when `q8`; `hidden_act` is checked by name.
pub(super) fn load_layers(
    vb: &VarBuilder,
    names: &Names,
    c: &LayerConfig,
    q8: bool,
) -> Result<Vec<Layer>> {
    let dims = Dims {
        hidden: c.hidden_size,
        intermediate: c.intermediate_size,
        eps: c.layer_norm_eps,
        act: Activation::parse(&c.hidden_act).map_err(candle_core::Error::msg)?,
    };
    (0..c.num_hidden_layers)
        .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), names, dims, q8))
        .collect()
}

/// Where a layer's attention weights sit in a checkpoint (the
/// feed-forward's names are the same in both).
pub(super) struct Names {
    q: &'static str,
    k: &'static str,
    v: &'static str,
    o: &'static str,
    attention_norm: &'static str,
}

/// MPNet's (`modeling_mpnet.py`).
pub(super) const MPNET: Names = Names {
    q: "attention.attn.q",
    k: "attention.attn.k",
    v: "attention.attn.v",
    o: "attention.attn.o",
    attention_norm: "attention.LayerNorm",
};

/// BERT's (`modeling_bert.py`).
pub(super) const BERT: Names = Names {
    q: "attention.self.query",
    k: "attention.self.key",
    v: "attention.self.value",
    o: "attention.output.dense",
    attention_norm: "attention.output.LayerNorm",
};

/// A dense layer whose weight is f32, or 8-bit (ggml's Q8_0: blocks of
/// 32 weights, one f16 scale each), multiplied by candle's quantized
/// kernels: the weights are a quarter of the bytes to stream for each
/// token, and a query's embedding takes about a third of the time (see
/// `local::Precision`).
#[derive(Clone)]
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

    /// The layer a query goes through: in 8 bits where candle multiplies
    /// them with its repacked kernel ([`repacked_in_eight_bits`]), else
    /// this one (its weights shared).
    fn for_queries(&self) -> Result<Self> {
        if let QMatMul::Tensor(w) = &self.weight {
            let (output, input) = w.dims2()?;
            if repacked_in_eight_bits(output, input) {
                return self.quantized();
            }
        }
        Ok(self.clone())
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

/// The shapes candle 0.11 multiplies 8-bit weights with its repacked
/// kernel (`quantized::repack_x86::select`): inputs in whole super-blocks
/// of `QK_K` = 256, outputs in whole tiles of `TILE_N` = 16 rows. Any other
/// shape goes through its generic 8-bit dot products, which lose to f32
/// as a text gets longer: all-MiniLM-L6-v2's 384-wide layers, every one in
/// 8 bits, embedded `mnemo-lab bench`'s 8–24-word texts in 18.2–23.1 ms
/// against 10.4–14.0 ms in f32, and in 8.8–12.5 ms with only its one
/// eligible layer (the feed-forward's output, 1,536 → 384) in 8 bits
/// (docs/evaluation.md). All of all-mpnet-base-v2's layers are eligible.
const REPACK_INPUT_BLOCK: usize = 256;
/// The repacked kernel's tile of output rows (candle's `TILE_N`).
const REPACK_OUTPUT_TILE: usize = 16;

fn repacked_in_eight_bits(output: usize, input: usize) -> bool {
    output.is_multiple_of(REPACK_OUTPUT_TILE) && input.is_multiple_of(REPACK_INPUT_BLOCK)
}

impl Module for Dense {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.weight.forward(x)?.broadcast_add(&self.bias)
    }
}

/// GELU in its exact form, `x · Φ(x) = x/2 · (1 + erf(x/√2))`, the one
/// both all-mpnet-base-v2 and all-MiniLM-L6-v2 were trained with (`hidden_act: gelu`). candle's
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

pub(super) struct Layer {
    /// The query, key and value projections, stacked (`Dense::stacked`).
    qkv: Dense,
    o: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
    act: Activation,
}

impl Layer {
    /// `q8`: dense weights in 8 bits.
    fn load(vb: VarBuilder, names: &Names, d: Dims, q8: bool) -> Result<Self> {
        let (h, i, eps) = (d.hidden, d.intermediate, d.eps);
        let qkv = [vb.pp(names.q), vb.pp(names.k), vb.pp(names.v)];
        Ok(Self {
            qkv: Dense::stacked(h, h, &qkv, q8)?,
            o: Dense::load(h, h, vb.pp(names.o), q8)?,
            attention_norm: layer_norm(h, eps, vb.pp(names.attention_norm))?,
            intermediate: Dense::load(h, i, vb.pp("intermediate.dense"), q8)?,
            output: Dense::load(i, h, vb.pp("output.dense"), q8)?,
            output_norm: layer_norm(h, eps, vb.pp("output.LayerNorm"))?,
            act: d.act,
        })
    }

    /// The layer a query goes through: each dense weight in 8 bits where
    /// candle multiplies it with its repacked kernel
    /// ([`repacked_in_eight_bits`]), the rest shared with `self`.
    pub(super) fn for_queries(&self) -> Result<Self> {
        Ok(Self {
            qkv: self.qkv.for_queries()?,
            o: self.o.for_queries()?,
            attention_norm: self.attention_norm.clone(),
            intermediate: self.intermediate.for_queries()?,
            output: self.output.for_queries()?,
            output_norm: self.output_norm.clone(),
            act: self.act,
        })
    }

    /// `bias`: (batch, heads, len, len), the position bias plus the mask.
    pub(super) fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
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
        let h = self.act.apply(&self.intermediate.forward(&x)?)?;
        self.output_norm.forward(&(self.output.forward(&h)? + x)?)
    }
}

/// (batch, 1, 1, len): 0 where the mask is 1, the lowest f32 where it is 0.
pub(super) fn mask_bias(mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(DType::F32)?;
    let off = (m.ones_like()? - &m)?;
    (off * f64::from(f32::MIN))?.unsqueeze(1)?.unsqueeze(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

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

    fn dense(output: usize, input: usize) -> Dense {
        let d = &Device::Cpu;
        let w = Tensor::randn(0f32, 0.05, (output, input), d).unwrap();
        Dense::new(w, Tensor::zeros(output, DType::F32, d).unwrap(), false).unwrap()
    }

    /// A query's copy of a layer is 8-bit only in the shapes candle's
    /// repacked kernel takes: MiniLM's 384-wide inputs stay f32, its
    /// 1,536-wide one and all of MPNet's go to 8 bits, and an 8-bit copy
    /// multiplies to within the quantization's error of the f32 one.
    #[test]
    fn queries_take_eight_bits_where_the_repacked_kernel_does() {
        let is_8_bit = |d: &Dense| !matches!(d.for_queries().unwrap().weight, QMatMul::Tensor(_));
        for (output, input) in [(3 * 384, 384), (384, 384), (1536, 384)] {
            assert!(!is_8_bit(&dense(output, input)), "{output} × {input}");
        }
        for (output, input) in [
            (384, 1536),
            (3 * 768, 768),
            (768, 768),
            (3072, 768),
            (768, 3072),
        ] {
            assert!(is_8_bit(&dense(output, input)), "{output} × {input}");
        }
        let f32 = dense(384, 1536);
        let x = Tensor::randn(0f32, 1.0, (1, 7, 1536), &Device::Cpu).unwrap();
        let out = |d: &Dense| -> Vec<f32> {
            d.forward(&x)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap()
        };
        let (want, got) = (out(&f32), out(&f32.for_queries().unwrap()));
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let cosine = dot(&want, &got) / (dot(&want, &want) * dot(&got, &got)).sqrt();
        assert!(cosine > 0.999, "cosine {cosine}");
    }
}
