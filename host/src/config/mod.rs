//! Configuration: where the data lives and which providers run. `Settings`
//! (`settings.rs`) reads every setting, typed, from the config file and the
//! environment; `Config` is what the host runs with, built from them with
//! defaults that work offline — a SQLite file in the data directory, the
//! local embedding model, LLM off. Validated at start with messages that
//! say what to change.

mod settings;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use mnemo_core::model::LlmLevel;

pub use settings::{EmbedderKind, Flag, Limit, SettingDoc, Settings};

use crate::http::HttpPolicy;
use crate::llm::{Endpoint, LlmConfig, TIERS};
use crate::plugins::PluginLimits;

/// Which embedding provider the host runs.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderChoice {
    /// all-MiniLM-L6-v2 in-process (candle) from a local folder.
    Local {
        dir: PathBuf,
        dimension: Option<usize>,
        /// The dense weights' number format (`MNEMO_MODEL_PRECISION`).
        precision: crate::embedding::Precision,
    },
    /// Hashed bag of words: no model, no synonyms. For tests and tiny machines.
    Hash { dimension: usize },
    /// A remote endpoint through an LLM provider plugin's `embed`
    /// (`openai`: any OpenAI-compatible `/embeddings`; `ollama`: `/api/embed`).
    Http {
        /// The provider plugin's name.
        provider: String,
        base_url: String,
        api_key: Option<String>,
        model: String,
        dimension: usize,
        send_dimensions: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub db_path: PathBuf,
    /// Where compiled components are cached; `None` compiles every start.
    pub cache_dir: Option<PathBuf>,
    pub embedder: EmbedderChoice,
    pub llm: LlmConfig,
    /// Bearer token the HTTP API demands (none: no auth).
    pub api_key: Option<String>,
    /// Log filter and format (`text` or `json`).
    pub log: Option<String>,
    pub log_format: Option<String>,
    /// OTLP/HTTP collector the request spans go to (none: no traces).
    pub otlp_endpoint: Option<String>,
    /// Where `serve` listens.
    pub host: String,
    pub port: u16,
    pub ner: NerConfig,
    /// Maintenance tasks `serve` runs on a schedule.
    pub schedule: crate::scheduler::Schedule,
    /// Smallest vector partition the in-memory HNSW graph serves (`None`:
    /// always exact sqlite-vec search).
    pub ann_min_rows: Option<usize>,
    /// Fresh vectors at which the HNSW index builds a segment (`None`: the
    /// index's default, `ANN_FLUSH_AT`).
    pub ann_flush_at: Option<usize>,
    /// The derived full-text index (`storage/text/`, `storage/postgres/
    /// text.rs`); off, FTS5 or SQL ranks.
    pub text_index: bool,
    /// The smallest full-text partition saved beside a SQLite database
    /// (`None`: none is; each is built from its table after a restart).
    pub text_save_min_rows: Option<usize>,
    /// The layers nightly fading applies to (empty: the core's default,
    /// Buffer and Working).
    pub fade_layers: Vec<mnemo_core::model::Layer>,
    /// A pending session is consolidated once idle this long (`None`: the
    /// core's default, 30 minutes).
    pub session_idle_minutes: Option<u32>,
    /// Buffer memories a namespace keeps before the weakest go to the trash
    /// (`None`: the core's default, 200).
    pub buffer_cap: Option<u32>,
    /// Importance under which a Buffer memory goes to the trash (`None`:
    /// the core's default, 0.01).
    pub buffer_drop_below: Option<f32>,
    /// A topic worker rebuilds the trees the cycles change (set by the
    /// server, whose watcher does; a CLI cycle rebuilds them itself).
    pub topics_by_worker: bool,
    /// The core's clock: the wall clock, or one a simulation drives.
    pub clock: crate::clock::HostClock,
    /// Reader instances `serve` runs beside its writer.
    pub readers: usize,
    /// Writer instances `serve` runs on Postgres (a SQLite file has one).
    pub writers: usize,
    /// What each model's calls cost (`MNEMO_PRICES`).
    pub prices: crate::ledger::Prices,
    /// Who reads whose memories (`MNEMO_SHARING`, `MNEMO_SHARING_GROUPS`).
    pub sharing: mnemo_core::model::Sharing,
}

/// Writers `serve` runs on Postgres when `MNEMO_WRITERS` is unset: a
/// namespace's writes go to one by its hash, so with 16 tenants (issue 43's
/// load) a tenant shares its writer's queue with about 3 others, not 15;
/// each is one more connection and core instance per server.
pub const DEFAULT_PG_WRITERS: usize = 4;

/// Readers when `MNEMO_READERS` is unset: one per CPU, at least two (so a
/// long read never holds up the others).
pub fn default_readers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2)
}

/// NER plugins: where they come from, what they may use, which strategies run them.
#[derive(Debug, Clone)]
pub struct NerConfig {
    /// A folder of extra plugins (`*.wasm`), loaded after the bundled ones.
    pub plugin_dir: Option<PathBuf>,
    pub limits: PluginLimits,
    pub fast: Vec<String>,
    pub accurate: Vec<String>,
}

impl Default for NerConfig {
    fn default() -> Self {
        Self {
            plugin_dir: None,
            limits: PluginLimits::default(),
            fast: vec!["regex".into()],
            accurate: vec!["regex".into(), "names".into()],
        }
    }
}

/// `MNEMO_SHARING` and its groups (`team-a,team-b;x,y`), each name checked
/// as a namespace.
fn sharing_from_settings(s: &Settings) -> anyhow::Result<mnemo_core::model::Sharing> {
    let mut groups = Vec::new();
    for group in s.sharing_groups.as_deref().unwrap_or("").split(';') {
        let members = list(group)
            .iter()
            .map(|n| {
                mnemo_core::valid_namespace(n)
                    .map_err(|e| anyhow::anyhow!("MNEMO_SHARING_GROUPS: `{n}`: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        match members.len() {
            0 => {}
            1 => bail!(
                "MNEMO_SHARING_GROUPS: the group `{group}` has one namespace; a group shares between two or more"
            ),
            _ => groups.push(members),
        }
    }
    Ok(mnemo_core::model::Sharing {
        mode: s.sharing.unwrap_or_default(),
        groups,
    })
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Dimension of the default embedder (all-MiniLM-L6-v2's).
pub const DEFAULT_DIMENSION: usize = 384;

impl Config {
    /// The data directory: `data_dir` (`$MNEMO_DATA_DIR`), else
    /// `$XDG_DATA_HOME/mnemo`, else `~/.local/share/mnemo`, else `./.mnemo`.
    pub fn data_dir_of(settings: &Settings) -> PathBuf {
        if let Some(d) = &settings.data_dir {
            return d.clone();
        }
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(d) = env("XDG_DATA_HOME") {
            return PathBuf::from(d).join("mnemo");
        }
        match env("HOME") {
            Some(h) => PathBuf::from(h).join(".local/share/mnemo"),
            None => PathBuf::from(".mnemo"),
        }
    }

    /// The folder the local model is read from: `model_dir`
    /// (`$MNEMO_MODEL_DIR`), else `<data dir>/models/all-MiniLM-L6-v2`
    /// (where `scripts/fetch-model` puts it).
    pub fn model_dir_of(settings: &Settings) -> PathBuf {
        settings.model_dir.clone().unwrap_or_else(|| {
            Self::data_dir_of(settings)
                .join("models")
                .join("all-MiniLM-L6-v2")
        })
    }

    /// Defaults, then the config file, then the environment; `db_path` (the
    /// `--db` flag) wins over them.
    pub fn from_settings(db_path: Option<PathBuf>, s: &Settings) -> anyhow::Result<Self> {
        let data_dir = Self::data_dir_of(s);
        let dimension = match s.embedding_dim {
            Some(0) => bail!("MNEMO_EMBEDDING_DIM must be a positive whole number"),
            d => d,
        };
        let embedder = match s.embedder.unwrap_or(EmbedderKind::Local) {
            EmbedderKind::Local => EmbedderChoice::Local {
                dir: Self::model_dir_of(s),
                dimension,
                precision: s.model_precision.unwrap_or_default(),
            },
            EmbedderKind::Hash => EmbedderChoice::Hash {
                dimension: dimension.unwrap_or(DEFAULT_DIMENSION),
            },
            EmbedderKind::Http => EmbedderChoice::Http {
                provider: provider(
                    "MNEMO_EMBEDDING_PROVIDER",
                    s.embedding_provider
                        .as_deref()
                        .unwrap_or(crate::llm::DEFAULT_PROVIDER),
                )?,
                base_url: s.embedding_url.clone().context(
                    "MNEMO_EMBEDDER=http needs MNEMO_EMBEDDING_URL (e.g. https://api.openai.com/v1)",
                )?,
                api_key: s.embedding_key.clone(),
                model: s
                    .embedding_model
                    .clone()
                    .unwrap_or_else(|| "text-embedding-3-small".into()),
                dimension: dimension.context(
                    "MNEMO_EMBEDDER=http needs MNEMO_EMBEDDING_DIM (e.g. 1536 for text-embedding-3-small)",
                )?,
                send_dimensions: s.embedding_send_dim.unwrap_or_default().0,
            },
        };
        Ok(Self {
            db_path: db_path
                .or_else(|| s.database_url.clone().map(PathBuf::from))
                .or_else(|| s.db.clone())
                .unwrap_or_else(|| data_dir.join("memory.db")),
            cache_dir: Some(
                s.cache_dir
                    .clone()
                    .unwrap_or_else(|| data_dir.join("cache")),
            ),
            data_dir,
            embedder,
            llm: llm_from_settings(s)?,
            api_key: s.api_key.clone(),
            log: s.log.clone(),
            log_format: s.log_format.clone(),
            otlp_endpoint: s.otlp_endpoint.clone(),
            host: s.host.clone().unwrap_or_else(|| "127.0.0.1".into()),
            port: s.port.unwrap_or(7878),
            ner: ner_from_settings(s),
            schedule: crate::scheduler::Schedule::new(|task| {
                use crate::scheduler::Task;
                match task {
                    Task::Enrich => s.cron_enrich.clone(),
                    Task::Consolidate => s.cron_consolidate.clone(),
                    Task::Interval => s.cron_interval.clone(),
                    Task::Fade => s.cron_fade.clone(),
                    Task::Reflect => s.cron_reflect.clone(),
                }
            })?,
            session_idle_minutes: s.session_idle_minutes,
            buffer_cap: s.buffer_cap,
            buffer_drop_below: s.buffer_drop_below,
            topics_by_worker: false,
            clock: Default::default(),
            readers: s.readers.unwrap_or_else(default_readers).max(1),
            writers: s.writers.unwrap_or(DEFAULT_PG_WRITERS).max(1),
            prices: s.prices.clone().unwrap_or_default(),
            sharing: sharing_from_settings(s)?,
            fade_layers: match s.fade_layers.as_deref() {
                None => Vec::new(),
                Some(v) => list(v)
                    .iter()
                    .map(|l| {
                        l.parse()
                            .map_err(|e| anyhow::anyhow!("MNEMO_FADE_LAYERS: {e}"))
                    })
                    .collect::<anyhow::Result<_>>()?,
            },
            ann_min_rows: match s.ann_min_rows {
                Some(Limit::Off) => None,
                Some(Limit::At(n)) => Some(n),
                None => Some(crate::storage::ANN_MIN_ROWS),
            },
            ann_flush_at: s.ann_flush_at.map(|n| n as usize),
            text_index: match s.text_index.as_deref() {
                None | Some("on") => true,
                Some("off") => false,
                Some(v) => anyhow::bail!("MNEMO_TEXT_INDEX must be `on` or `off`, not `{v}`"),
            },
            text_save_min_rows: match s.text_save_min_rows {
                Some(Limit::Off) => None,
                Some(Limit::At(n)) => Some(n),
                None => Some(crate::storage::text::TEXT_SAVE_MIN_ROWS),
            },
        })
    }

    /// A configuration with the hash embedder: no model files needed.
    pub fn with_hash_embedder(db_path: PathBuf, data_dir: PathBuf) -> Self {
        Self {
            cache_dir: Some(data_dir.join("cache")),
            data_dir,
            db_path,
            embedder: EmbedderChoice::Hash {
                dimension: DEFAULT_DIMENSION,
            },
            llm: LlmConfig::default(),
            api_key: None,
            log: None,
            log_format: None,
            otlp_endpoint: None,
            host: "127.0.0.1".into(),
            port: 7878,
            ner: NerConfig::default(),
            schedule: crate::scheduler::Schedule::default(),
            ann_min_rows: Some(crate::storage::ANN_MIN_ROWS),
            ann_flush_at: None,
            text_index: true,
            text_save_min_rows: Some(crate::storage::text::TEXT_SAVE_MIN_ROWS),
            fade_layers: Vec::new(),
            session_idle_minutes: None,
            buffer_cap: None,
            buffer_drop_below: None,
            topics_by_worker: false,
            clock: Default::default(),
            readers: default_readers(),
            writers: DEFAULT_PG_WRITERS,
            prices: Default::default(),
            sharing: Default::default(),
        }
    }
}

fn ner_from_settings(s: &Settings) -> NerConfig {
    let d = NerConfig::default();
    let limits = PluginLimits {
        memory_bytes: s
            .plugin_memory_mb
            .map_or(d.limits.memory_bytes, |mb| mb << 20),
        deadline: s
            .plugin_deadline_ms
            .map_or(d.limits.deadline, Duration::from_millis),
        fuel: s.plugin_fuel.or(d.limits.fuel),
        ..d.limits
    };
    NerConfig {
        plugin_dir: s.plugin_dir.clone(),
        limits,
        fast: s.ner_fast.as_deref().map_or(d.fast, list),
        accurate: s.ner_accurate.as_deref().map_or(d.accurate, list),
    }
}

/// A provider name: a bundled LLM plugin (`openai`, `anthropic`,
/// `ollama`) or the name a plugin in the plugin folder declares (checked
/// once the plugins are loaded).
fn provider(name: &str, value: &str) -> anyhow::Result<String> {
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "{name}=`{value}` is not a provider name; use `openai` (any OpenAI-compatible server), `anthropic`, `ollama`, or an LLM plugin's name"
        );
    }
    Ok(value.to_string())
}

/// `MNEMO_LLM_*` for the global endpoint, `MNEMO_<TIER>_{URL,KEY,MODEL,PROVIDER}`
/// per model tier (seed 004 §7: gate, merge, audit, expand, extract, ...).
pub fn llm_from_settings(s: &Settings) -> anyhow::Result<LlmConfig> {
    let global_provider = provider(
        "MNEMO_LLM_PROVIDER",
        s.llm_provider
            .as_deref()
            .unwrap_or(crate::llm::DEFAULT_PROVIDER),
    )?;
    // The MCP client's model (`sampling`) has no URL, and choosing it is
    // choosing to use an LLM: its level defaults to `auto`.
    let sampled = global_provider == crate::llm::sampling::PROVIDER;
    let level = s.llm_level.unwrap_or(if sampled {
        LlmLevel::Auto
    } else {
        LlmLevel::Off
    });
    let global_url = s
        .llm_url
        .clone()
        .or_else(|| sampled.then(|| crate::llm::sampling::URL.to_string()));
    let global_key = s.llm_key.clone();
    let global_model = s.llm_model.clone().unwrap_or_else(|| "gpt-4o-mini".into());
    let default = global_url.clone().map(|base_url| Endpoint {
        provider: global_provider.clone(),
        base_url,
        api_key: global_key.clone(),
        model: global_model.clone(),
    });
    let mut tiers = HashMap::new();
    for tier in TIERS {
        let t = s.tier(*tier);
        if t.url.is_none() && t.key.is_none() && t.model.is_none() && t.provider.is_none() {
            continue;
        }
        let name = tier.as_str().to_uppercase();
        let tier_sampled = t.provider.map(String::as_str) == Some(crate::llm::sampling::PROVIDER);
        let Some(base_url) = t
            .url
            .cloned()
            .or_else(|| global_url.clone())
            .or_else(|| tier_sampled.then(|| crate::llm::sampling::URL.to_string()))
        else {
            bail!("MNEMO_{name}_MODEL is set but no URL: set MNEMO_{name}_URL or MNEMO_LLM_URL");
        };
        let provider = match t.provider {
            Some(p) => provider(&format!("MNEMO_{name}_PROVIDER"), p)?,
            None => global_provider.clone(),
        };
        tiers.insert(
            *tier,
            Endpoint {
                provider,
                base_url,
                api_key: t.key.cloned().or_else(|| global_key.clone()),
                model: t.model.cloned().unwrap_or_else(|| global_model.clone()),
            },
        );
    }
    if level != LlmLevel::Off && default.is_none() && tiers.is_empty() {
        bail!(
            "MNEMO_LLM_LEVEL={level} needs an endpoint: set MNEMO_LLM_URL (and MNEMO_LLM_KEY, MNEMO_LLM_MODEL)"
        );
    }
    Ok(LlmConfig {
        level,
        default,
        tiers,
        policy: HttpPolicy {
            timeout: Duration::from_secs(s.llm_timeout_secs.unwrap_or(60)),
            retries: s.llm_retries.unwrap_or(3),
            backoff: Duration::from_millis(s.llm_backoff_ms.unwrap_or(250)),
        },
        concurrency: s.llm_concurrency.unwrap_or(2),
        max_tokens: s.llm_max_tokens.unwrap_or(1024),
        bounds: crate::llm::bounds::Bounds {
            circuit_failures: s.llm_circuit_failures,
            circuit_cooldown_secs: s.llm_circuit_cooldown_secs,
            retry_base_secs: s.llm_retry_base_secs,
            retry_limit: s.llm_retry_limit,
            cycle: s.llm_budget_cycle,
            hour: s.llm_budget_hour,
            namespace_cycle: s.llm_budget_namespace_cycle,
            namespace_hour: s.llm_budget_namespace_hour,
        }
        .policy(),
    })
}
