//! The default embedder: all-MiniLM-L6-v2 in-process with candle, loaded
//! from a local folder (`model.safetensors`, `config.json`,
//! `tokenizer.json`) — never from a hub. Mean pooling over the attention
//! mask, then L2 normalisation, as sentence-transformers does; optional
//! Matryoshka truncation to a smaller dimension, renormalised.
//!
//! The folder's `config.json` names the architecture: `bert` (MiniLM, and
//! any BERT sentence encoder) runs `bert.rs`; `mpnet` (all-mpnet-base-v2,
//! `scripts/fetch-model --mpnet`) runs `mpnet.rs`. Both share one layer
//! (`layer.rs`), and either searches with an 8-bit copy of itself
//! (`Precision`).

use std::path::Path;

use anyhow::{Context, anyhow};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use mnemo_core::model::EmbedderInfo;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::bert::{Bert, BertConfig};
use super::mpnet::{MpNet, MpNetConfig};
use super::{EmbeddingProvider, normalize};

/// all-MiniLM-L6-v2's `max_seq_length` (sentence_bert_config.json): the
/// cut when a folder has no `sentence_bert_config.json` of its own.
pub const MAX_TOKENS: usize = 256;
/// The name a BERT folder's vectors carry (the default model's); a folder
/// of another architecture is named by the folder itself.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The number format of the local model's dense weights
/// (`MNEMO_MODEL_PRECISION`).
///
/// `auto` stores f32 vectors and searches with 8-bit ones: a recall's
/// query goes through a copy of the encoder whose dense weights are ggml
/// Q8_0 wherever candle's repacked 8-bit kernel takes their shape (all of
/// all-mpnet-base-v2's; of all-MiniLM-L6-v2's, the feed-forward's output
/// only: `layer.rs`, `repacked_in_eight_bits`)
/// ([`EmbeddingProvider::embed_queries`]). Measured on this
/// machine (2 cores; `mnemo-lab eval locomo --data
/// ../shared/data/locomo-dev.json`, all-mpnet-base-v2, docs/evaluation.md),
/// over the same stored f32 vectors: R@10 0.807 / Hit@1 0.554 against
/// 0.806 / 0.557 with f32 queries, recall p50 23.8 ms against 65.5 ms.
/// `q8` also stores 8-bit vectors (0.807 / 0.547; a third less embedding
/// time, no f32 copy of the weights in memory). An 8-bit vector's cosine
/// with sentence-transformers' own is 0.9987 or more over the reference
/// sentences (`tests/it/embedding.rs` holds it above 0.995). all-MiniLM-L6-v2
/// the same way: R@10 0.781 either way, Hit@1 0.518 against 0.521, recall
/// p50 13.9 against 14.8 ms on LoCoMo's questions and `mnemo-lab bench`'s
/// 8–24-word texts embedded in 10.2 against 12.5 ms (three alternating
/// rounds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    /// f32 stored vectors; 8-bit queries.
    #[default]
    Auto,
    /// Every weight as the folder stores it (f32): vectors equal to
    /// sentence-transformers' to cosine 0.9999.
    F32,
    /// 8-bit dense weights for everything.
    Q8,
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "f32" => Ok(Self::F32),
            "q8" => Ok(Self::Q8),
            other => Err(format!(
                "MNEMO_MODEL_PRECISION=`{other}` is not known; use `auto` (default), `f32` or `q8`"
            )),
        }
    }
}

/// The encoder a model folder holds.
enum Encoder {
    Bert(Bert),
    MpNet(MpNet),
}

impl Encoder {
    fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Bert(m) => m.forward(ids, mask),
            Self::MpNet(m) => m.forward(ids, mask),
        }
    }

    /// The copy queries go through, in 8 bits where candle's repacked
    /// kernel takes a layer, sharing the rest.
    fn for_queries(&self) -> candle_core::Result<Self> {
        Ok(match self {
            Self::Bert(m) => Self::Bert(m.for_queries()?),
            Self::MpNet(m) => Self::MpNet(m.for_queries()?),
        })
    }
}

/// How many times one of candle's pool workers spins, once its share of a
/// matrix product is done, before it parks (candle's
/// `CANDLE_BARRIER_POOL_SPIN_LIMIT`; its own default is 25,000: 0.6 ms
/// here, timing 25,000 `spin_loop` hints alone). A recall embeds its query
/// and then spends several milliseconds in SQLite and the core: at 25,000
/// the worker spends the first of them spinning on the second of two
/// cores. 1,000 still spans the gaps between one layer's products. Measured with `mnemo-lab eval locomo --reuse`
/// on kept stores, each run in turn with candle's default: all-mpnet-base-v2
/// p50 19.0 against 20.1 ms (mean of eight pairs, seven of them lower), MiniLM
/// 12.7 against 13.5 ms (three pairs); embedding a conversation's 419 turns
/// took the same 9.2–9.5 s either way.
const WORKER_SPIN_LIMIT: u32 = 1_000;

/// Sets candle's thread pool up for the process, through the environment
/// variables it reads (each only when the user has not set it):
///
/// - `RAYON_NUM_THREADS`, the thread count: without it, candle works its
///   default out again on every matrix product (reading `/proc/cpuinfo`),
///   some 40 times per embedded query; `perf` on `mnemo-lab eval locomo --reuse`
///   found the kernel formatting `/proc/cpuinfo` in about 4% of its samples.
///   With the count pinned, recall p50 there measured 15.6–18.1 ms against
///   18.3–19.0 ms for the build before, run in turn on the same store
///   (docs/evaluation.md).
/// - `CANDLE_BARRIER_POOL_SPIN_LIMIT`, to [`WORKER_SPIN_LIMIT`].
///
/// Call it first thing in `main`, while the process has one thread: it sets
/// environment variables.
pub fn configure_threads() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let n = candle_core::utils::get_num_threads();
        // SAFETY: called before any other thread exists (`main`'s first
        // statement), so nothing reads the environment concurrently.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    }
    if std::env::var_os("CANDLE_BARRIER_POOL_SPIN_LIMIT").is_none() {
        // SAFETY: as above.
        unsafe {
            std::env::set_var(
                "CANDLE_BARRIER_POOL_SPIN_LIMIT",
                WORKER_SPIN_LIMIT.to_string(),
            )
        };
    }
}

pub struct LocalEmbedder {
    model: Encoder,
    /// The encoder queries go through, when not `model` (its 8-bit copy,
    /// at `Precision::Auto`).
    queries: Option<Encoder>,
    name: String,
    tokenizer: Tokenizer,
    device: Device,
    hidden: usize,
    /// Output dimension (≤ hidden): Matryoshka truncation when smaller.
    dimension: usize,
}

impl LocalEmbedder {
    /// Loads the model from `dir` at `Precision::Auto`; `dimension`
    /// truncates (None = the model's full width).
    pub fn load(dir: &Path, dimension: Option<usize>) -> anyhow::Result<Self> {
        Self::load_with(dir, dimension, Precision::Auto)
    }

    /// Loads the model from `dir` with its dense weights at `precision`.
    pub fn load_with(
        dir: &Path,
        dimension: Option<usize>,
        precision: Precision,
    ) -> anyhow::Result<Self> {
        let missing = |f: &str| {
            anyhow!(
                "the embedding model is not installed: {} is missing; run `scripts/fetch-model {}` (or set MNEMO_EMBEDDER=hash)",
                dir.join(f).display(),
                dir.display()
            )
        };
        for f in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(f).is_file() {
                return Err(missing(f));
            }
        }
        let raw =
            std::fs::read_to_string(dir.join("config.json")).context("reading config.json")?;
        let config: serde_json::Value =
            serde_json::from_str(&raw).context("parsing config.json")?;
        let kind = config["model_type"].as_str().unwrap_or("bert").to_string();
        let pad = config["pad_token_id"].as_u64().unwrap_or(0) as u32;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow!("loading tokenizer.json: {e}"))?;
        let pad_token = tokenizer.id_to_token(pad).unwrap_or_else(|| "[PAD]".into());
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id: pad,
            pad_token,
            ..Default::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens(dir),
                ..Default::default()
            }))
            .map_err(|e| anyhow!("configuring truncation: {e}"))?;
        let device = Device::Cpu;
        // SAFETY: the safetensors file is memory-mapped read-only; mnemo does
        // not modify model files while running.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(
                &[dir.join("model.safetensors")],
                DType::F32,
                &device,
            )?
        };
        let q8 = precision == Precision::Q8;
        let (model, hidden, name) = match kind.as_str() {
            "bert" => {
                let c: BertConfig = serde_json::from_str(&raw).context("parsing config.json")?;
                let model = Bert::load(vb, &c, q8).context("loading the BERT weights")?;
                (
                    Encoder::Bert(model),
                    c.layers.hidden_size,
                    MODEL_NAME.to_string(),
                )
            }
            "mpnet" => {
                let c: MpNetConfig = serde_json::from_str(&raw).context("parsing config.json")?;
                let model = MpNet::load(vb, &c, q8).context("loading the MPNet weights")?;
                let name = dir
                    .file_name()
                    .map_or("mpnet".into(), |n| n.to_string_lossy().into_owned());
                (Encoder::MpNet(model), c.layers.hidden_size, name)
            }
            other => anyhow::bail!(
                "{}: model_type `{other}` is not one mnemo runs (bert, mpnet)",
                dir.join("config.json").display()
            ),
        };
        let queries = match precision {
            Precision::Auto => Some(model.for_queries().context("quantizing the weights")?),
            Precision::F32 | Precision::Q8 => None,
        };
        let dimension = dimension.unwrap_or(hidden);
        anyhow::ensure!(
            (1..=hidden).contains(&dimension),
            "embedding dimension {dimension} must be between 1 and the model's {hidden}"
        );
        Ok(Self {
            model,
            queries,
            name,
            tokenizer,
            device,
            hidden,
            dimension,
        })
    }

    /// One batch through the encoder (the query one when `query`).
    fn forward(&self, texts: &[String], query: bool) -> anyhow::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow!("tokenizing: {e}"))?;
        let n = encodings.len();
        let len = encodings.first().map(|e| e.get_ids().len()).unwrap_or(0);
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for e in &encodings {
            ids.extend(e.get_ids().iter().map(|&x| x as i64));
            mask.extend(e.get_attention_mask().iter().map(|&x| x as i64));
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let encoder = match &self.queries {
            Some(q8) if query => q8,
            _ => &self.model,
        };
        let hidden = encoder.forward(&ids, &mask)?;
        // Mean over real tokens only.
        let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&m)?.sum(1)?;
        let counts = m.sum(1)?.clamp(1e-9, f64::MAX)?;
        let pooled = summed.broadcast_div(&counts)?;
        let rows: Vec<Vec<f32>> = pooled.to_vec2()?;
        Ok(rows
            .into_iter()
            .map(|mut v| {
                debug_assert_eq!(v.len(), self.hidden);
                normalize(&mut v);
                if self.dimension < v.len() {
                    v.truncate(self.dimension);
                    normalize(&mut v);
                }
                v
            })
            .collect())
    }
}

/// The folder's `max_seq_length` (sentence_bert_config.json), else
/// `MAX_TOKENS`: all-mpnet-base-v2 reads 384 tokens, MiniLM 256.
fn max_tokens(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["max_seq_length"].as_u64())
        .map_or(MAX_TOKENS, |n| n as usize)
}

/// Texts per forward pass: padding to the longest in a batch wastes less
/// on small batches. The texts go in order of length, so a batch holds
/// texts of about one length (a turn's short sentences are not padded to
/// the long turns: `mnemo-lab eval locomo`'s 2,760 turns and their 8,750
/// sentences embed in 86.1 s so, in 178.6 s in the caller's order).
const BATCH: usize = 32;

impl EmbeddingProvider for LocalEmbedder {
    fn info(&self) -> EmbedderInfo {
        let model = if self.dimension == self.hidden {
            self.name.clone()
        } else {
            format!("{}@{}", self.name, self.dimension)
        };
        EmbedderInfo {
            model,
            dimension: self.dimension as u32,
        }
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        self.embed_with(texts, false)
    }

    fn embed_queries(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        self.embed_with(texts, true)
    }
}

impl LocalEmbedder {
    /// `texts` in batches of about one length, back in the caller's order.
    fn embed_with(&self, texts: &[String], query: bool) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            for (&i, v) in chunk.iter().zip(self.forward(&batch, query)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
