//! `Settings`: every setting mnemo reads, as one typed struct, from the
//! config file (TOML; keys are the names below) and the environment
//! (`MNEMO_` + the name in upper case), the environment winning. Read with
//! figment. A key of the file that is not a setting is refused with its
//! name, never ignored; in the environment only `MNEMO_*` variables named
//! after a setting are read (cargo and other tools set their own
//! `MNEMO_*_WASM`). An empty variable counts as unset. Every value is parsed from its text form, so
//! `MNEMO_PORT=7878` and `port = 7878` mean the same.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context;
use figment::Figment;
use figment::providers::{Env, Format, Toml};
use mnemo_core::model::LlmLevel;
use serde::{Deserialize, Deserializer};

/// Which embedding provider runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    Local,
    Hash,
    Http,
}

impl FromStr for EmbedderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Self::Local),
            "hash" => Ok(Self::Hash),
            "http" => Ok(Self::Http),
            other => Err(format!(
                "MNEMO_EMBEDDER=`{other}` is not known; use `local` (default), `http` or `hash`"
            )),
        }
    }
}

/// A yes/no setting: `1`, `true`, `yes` or `on` is yes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl FromStr for Flag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Self(true)),
            "0" | "false" | "no" | "off" => Ok(Self(false)),
            other => Err(format!("`{other}` is not yes or no (1/0, true/false)")),
        }
    }
}

/// A number, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Off,
    At(usize),
}

impl FromStr for Limit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "off" => Ok(Self::Off),
            n => n
                .parse()
                .map(Self::At)
                .map_err(|_| format!("`{n}` is not a whole number or `off`")),
        }
    }
}

/// Deserializes any scalar through its text and `FromStr`, so a value reads
/// the same from TOML (typed) and from the environment (text).
fn text<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Text(String),
        Int(i64),
        Uint(u64),
        Float(f64),
        Bool(bool),
    }
    let raw = match Option::<Scalar>::deserialize(d)? {
        None => return Ok(None),
        Some(Scalar::Text(s)) => s,
        Some(Scalar::Int(n)) => n.to_string(),
        Some(Scalar::Uint(n)) => n.to_string(),
        Some(Scalar::Float(n)) => n.to_string(),
        Some(Scalar::Bool(b)) => b.to_string(),
    };
    if raw.trim().is_empty() {
        return Ok(None);
    }
    raw.parse::<T>()
        .map(Some)
        .map_err(|e| serde::de::Error::custom(format!("`{raw}`: {e}")))
}

/// Declares the settings struct: each field an optional value parsed by
/// [`text`], with its documentation (which the README's table mirrors).
macro_rules! settings {
    ($( $(#[$doc:meta])* $name:ident: $ty:ty, )*) => {
        /// Every setting; `None` leaves the default.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Settings {
            $( $(#[$doc])* #[serde(default, deserialize_with = "text")] pub $name: Option<$ty>, )*
        }

        impl Settings {
            /// Every setting's name, as the config file spells it.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];
        }
    };
}

settings! {
    /// The database: a SQLite file, or a `postgres://` URL.
    db: PathBuf,
    /// A Postgres database (`postgres://user:password@host:port/name`):
    /// many servers on one store. Wins over `db`.
    database_url: String,
    /// The data directory (database, component cache, model).
    data_dir: PathBuf,
    /// The config file itself (environment only).
    config: PathBuf,
    /// Where the local embedding model lives.
    model_dir: PathBuf,
    /// The local model's dense weights: `auto` (default: 8-bit MPNet,
    /// f32 BERT), `f32` or `q8`.
    model_precision: crate::embedding::Precision,
    /// `local` (default), `http` or `hash`.
    embedder: EmbedderKind,
    embedding_dim: usize,
    /// The provider plugin that serves `http` embeddings: `openai`
    /// (default; any OpenAI-compatible `/embeddings`), `ollama`
    /// (`/api/embed`), or an LLM plugin's name that can `embed`.
    embedding_provider: String,
    embedding_url: String,
    embedding_key: String,
    embedding_model: String,
    /// Send `dimensions` to the embedding endpoint (Matryoshka models).
    embedding_send_dim: Flag,
    /// `off` (default), `auto` or `full`.
    llm_level: LlmLevel,
    /// The provider plugin: `openai` (any OpenAI-compatible server,
    /// default), `anthropic`, `ollama` (native API), or an LLM plugin's name.
    llm_provider: String,
    llm_url: String,
    llm_key: String,
    llm_model: String,
    llm_timeout_secs: u64,
    llm_retries: u32,
    llm_backoff_ms: u64,
    llm_concurrency: usize,
    llm_max_tokens: u32,
    /// Per-model prices in USD per million tokens, `model=input/output`,
    /// comma-separated (`gpt-4o-mini=0.15/0.60`): the usage ledger's cost.
    prices: crate::ledger::Prices,
    /// Bearer token the HTTP API demands.
    api_key: String,
    host: String,
    port: u16,
    /// Reader instances `serve` runs beside its one writer (default: the
    /// number of CPUs, at least 2).
    readers: usize,
    /// Log filter (`warn`, `info`, `mnemo=debug`, ...).
    log: String,
    /// `text` (default) or `json`.
    log_format: String,
    plugin_dir: PathBuf,
    plugin_memory_mb: usize,
    plugin_deadline_ms: u64,
    plugin_fuel: u64,
    /// Comma-separated provider names.
    ner_fast: String,
    ner_accurate: String,
    /// Minutes without a turn after which a pending session is consolidated
    /// (default 30; a newer session in its namespace closes it sooner).
    session_idle_minutes: u32,
    /// Buffer memories a namespace keeps before the weakest go to the trash
    /// (default 200, seed 004's `ENGRAM_BUFFER_CAP`).
    buffer_cap: u32,
    /// Importance under which a Buffer memory goes to the trash (default
    /// 0.01, seed 004's `decay_drop_threshold`).
    buffer_drop_below: f32,
    /// Which layers fade, comma-separated (default `buffer,working`; Core
    /// only if named: docs/design/forgetting.md).
    fade_layers: String,
    /// Smallest vector partition served by the HNSW graph, or `off`.
    ann_min_rows: Limit,
    /// Vectors written since the graph segments were built (searched
    /// exactly) at which they become a segment of their own (default 5,000).
    ann_flush_at: u32,
    cron_enrich: String,
    cron_consolidate: String,
    cron_interval: String,
    /// When fading runs (seed 003's 04:00 task; `cron_decay` in round 1 files).
    #[serde(alias = "cron_decay")]
    cron_fade: String,
    cron_reflect: String,
    // One endpoint per model tier (seed 004 §7); unset parts come from `llm_*`.
    gate_url: String, gate_key: String, gate_model: String, gate_provider: String,
    merge_url: String, merge_key: String, merge_model: String, merge_provider: String,
    review_url: String, review_key: String, review_model: String, review_provider: String,
    expand_url: String, expand_key: String, expand_model: String, expand_provider: String,
    extract_url: String, extract_key: String, extract_model: String, extract_provider: String,
    resume_url: String, resume_key: String, resume_model: String, resume_provider: String,
    rerank_url: String, rerank_key: String, rerank_model: String, rerank_provider: String,
    naming_url: String, naming_key: String, naming_model: String, naming_provider: String,
    ner_url: String, ner_key: String, ner_model: String, ner_provider: String,
    reflection_url: String, reflection_key: String, reflection_model: String, reflection_provider: String,
}

/// One model tier's endpoint settings.
pub struct TierSettings<'a> {
    pub url: Option<&'a String>,
    pub key: Option<&'a String>,
    pub model: Option<&'a String>,
    pub provider: Option<&'a String>,
}

impl Settings {
    /// Reads `path` (or `$MNEMO_CONFIG`, or `<data dir>/config.toml` when it
    /// exists), then the environment.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        let env = Env::prefixed("MNEMO_").filter(|key| {
            let key = key.as_str().to_ascii_lowercase();
            Self::NAMES.contains(&key.as_str())
                && std::env::var(format!("MNEMO_{}", key.to_ascii_uppercase()))
                    .is_ok_and(|v| !v.trim().is_empty())
        });
        let from_env: Self = Figment::from(env.clone())
            .extract()
            .map_err(|e| explain(e, "the environment"))?;
        let file = match path.map(PathBuf::from).or(from_env.config.clone()) {
            Some(p) => Some(p),
            None => {
                let p = super::Config::data_dir_of(&from_env).join("config.toml");
                p.is_file().then_some(p)
            }
        };
        let Some(file) = file else {
            return Ok(from_env);
        };
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading the config file {}", file.display()))?;
        // Parse first: a syntax error names the file, not a key.
        text.parse::<toml::Table>()
            .with_context(|| format!("{} is not valid TOML", file.display()))?;
        Figment::from(Toml::string(&text))
            .merge(env)
            .extract()
            .map_err(|e| explain(e, &file.display().to_string()))
    }

    /// The endpoint settings of a model tier (`gate`, `merge`, ...).
    pub fn tier(&self, tier: mnemo_core::model::LlmTier) -> TierSettings<'_> {
        use mnemo_core::model::LlmTier as T;
        let (url, key, model, provider) = match tier {
            T::Gate => (
                &self.gate_url,
                &self.gate_key,
                &self.gate_model,
                &self.gate_provider,
            ),
            T::Merge => (
                &self.merge_url,
                &self.merge_key,
                &self.merge_model,
                &self.merge_provider,
            ),
            T::Review => (
                &self.review_url,
                &self.review_key,
                &self.review_model,
                &self.review_provider,
            ),
            T::Expand => (
                &self.expand_url,
                &self.expand_key,
                &self.expand_model,
                &self.expand_provider,
            ),
            T::Extract => (
                &self.extract_url,
                &self.extract_key,
                &self.extract_model,
                &self.extract_provider,
            ),
            T::Resume => (
                &self.resume_url,
                &self.resume_key,
                &self.resume_model,
                &self.resume_provider,
            ),
            T::Rerank => (
                &self.rerank_url,
                &self.rerank_key,
                &self.rerank_model,
                &self.rerank_provider,
            ),
            T::Naming => (
                &self.naming_url,
                &self.naming_key,
                &self.naming_model,
                &self.naming_provider,
            ),
            T::Ner => (
                &self.ner_url,
                &self.ner_key,
                &self.ner_model,
                &self.ner_provider,
            ),
            T::Reflection => (
                &self.reflection_url,
                &self.reflection_key,
                &self.reflection_model,
                &self.reflection_provider,
            ),
        };
        TierSettings {
            url: url.as_ref(),
            key: key.as_ref(),
            model: model.as_ref(),
            provider: provider.as_ref(),
        }
    }
}

/// A figment error as one line that names the setting and where it came from.
fn explain(e: figment::Error, source: &str) -> anyhow::Error {
    let mut lines = Vec::new();
    for e in e {
        let key = e.path.last().cloned().unwrap_or_default();
        let line = match &e.kind {
            figment::error::Kind::UnknownField(field, _) => {
                format!("unknown setting `{field}` in {source}")
            }
            kind => format!(
                "setting `{key}` (MNEMO_{}) in {source}: {kind}",
                key.to_ascii_uppercase()
            ),
        };
        lines.push(line);
    }
    anyhow::anyhow!(lines.join("; "))
}
