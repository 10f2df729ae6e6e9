//! Configuration: where the data lives and which providers run, from the
//! environment (documented in the README's table) with defaults that work
//! offline — a SQLite file in the data directory, the local embedding model,
//! LLM off. Validated at start with messages that say what to change.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use mnemo_core::model::LlmLevel;

use crate::http::HttpPolicy;
use crate::llm::{Endpoint, LlmConfig, Provider, TIERS};
use crate::plugins::PluginLimits;

/// Which embedding provider the host runs.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderChoice {
    /// all-MiniLM-L6-v2 in-process (candle) from a local folder.
    Local {
        dir: PathBuf,
        dimension: Option<usize>,
    },
    /// Hashed bag of words: no model, no synonyms. For tests and tiny machines.
    Hash { dimension: usize },
    /// An OpenAI-compatible `/embeddings` endpoint.
    Http {
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
    /// Where `serve` listens.
    pub host: String,
    pub port: u16,
    pub ner: NerConfig,
    /// Maintenance tasks `serve` runs on a schedule.
    pub schedule: crate::scheduler::Schedule,
    /// Smallest vector partition the in-memory HNSW graph serves (`None`:
    /// always exact sqlite-vec search).
    pub ann_min_rows: Option<usize>,
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

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Dimension of the default embedder (all-MiniLM-L6-v2's).
pub const DEFAULT_DIMENSION: usize = 384;

/// Every `MNEMO_*` setting, for validating the config file.
pub const SETTINGS: &[&str] = &[
    "MNEMO_DB",
    "MNEMO_MODEL_DIR",
    "MNEMO_EMBEDDER",
    "MNEMO_EMBEDDING_DIM",
    "MNEMO_EMBEDDING_URL",
    "MNEMO_EMBEDDING_KEY",
    "MNEMO_EMBEDDING_MODEL",
    "MNEMO_EMBEDDING_SEND_DIM",
    "MNEMO_LLM_LEVEL",
    "MNEMO_LLM_PROVIDER",
    "MNEMO_LLM_URL",
    "MNEMO_LLM_KEY",
    "MNEMO_LLM_MODEL",
    "MNEMO_LLM_TIMEOUT_SECS",
    "MNEMO_LLM_RETRIES",
    "MNEMO_LLM_BACKOFF_MS",
    "MNEMO_LLM_CONCURRENCY",
    "MNEMO_LLM_MAX_TOKENS",
    "MNEMO_API_KEY",
    "MNEMO_HOST",
    "MNEMO_PORT",
    "MNEMO_LOG",
    "MNEMO_PLUGIN_DIR",
    "MNEMO_PLUGIN_MEMORY_MB",
    "MNEMO_PLUGIN_DEADLINE_MS",
    "MNEMO_PLUGIN_FUEL",
    "MNEMO_NER_FAST",
    "MNEMO_NER_ACCURATE",
    "MNEMO_ANN_MIN_ROWS",
    "MNEMO_CRON_ENRICH",
    "MNEMO_CRON_CONSOLIDATE",
    "MNEMO_CRON_INTERVAL",
    "MNEMO_CRON_DECAY",
    "MNEMO_CRON_REFLECT",
];

/// Settings from the environment, falling back to the config file: a TOML
/// table whose keys are the variable names in lower case without `MNEMO_`
/// (`llm_url = "http://127.0.0.1:11434/v1"`, `gate_model = "..."`).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    file: HashMap<String, String>,
}

impl Settings {
    /// Reads `path` (or `$MNEMO_CONFIG`, or `<data dir>/config.toml` when it
    /// exists). Unknown keys are an error that names them.
    pub fn load(path: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let path = match path
            .map(PathBuf::from)
            .or_else(|| env("MNEMO_CONFIG").map(PathBuf::from))
        {
            Some(p) => p,
            None => {
                let p = Config::default_data_dir().join("config.toml");
                if !p.is_file() {
                    return Ok(Self::default());
                }
                p
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the config file {}", path.display()))?;
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("{} is not valid TOML", path.display()))?;
        let mut file = HashMap::new();
        for (key, value) in table {
            let name = format!("MNEMO_{}", key.to_uppercase());
            let known = SETTINGS.contains(&name.as_str())
                || TIERS.iter().any(|t| {
                    ["URL", "KEY", "MODEL", "PROVIDER"]
                        .iter()
                        .any(|f| name == format!("MNEMO_{}_{f}", t.as_str().to_uppercase()))
                });
            if !known {
                bail!("unknown setting `{key}` in {}", path.display());
            }
            let value = match value {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            file.insert(name, value);
        }
        Ok(Self { file })
    }

    /// The environment wins over the file.
    pub fn get(&self, name: &str) -> Option<String> {
        env(name).or_else(|| {
            self.file
                .get(name)
                .cloned()
                .filter(|v| !v.trim().is_empty())
        })
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Config {
    /// The data directory: `$MNEMO_DATA_DIR`, else `$XDG_DATA_HOME/mnemo`,
    /// else `~/.local/share/mnemo`, else `./.mnemo`.
    pub fn default_data_dir() -> PathBuf {
        if let Some(d) = env("MNEMO_DATA_DIR") {
            return PathBuf::from(d);
        }
        if let Some(d) = env("XDG_DATA_HOME") {
            return PathBuf::from(d).join("mnemo");
        }
        match env("HOME") {
            Some(h) => PathBuf::from(h).join(".local/share/mnemo"),
            None => PathBuf::from(".mnemo"),
        }
    }

    /// The folder the local model is read from: `$MNEMO_MODEL_DIR`, else
    /// `<data dir>/models/all-MiniLM-L6-v2` (where `scripts/fetch-model` puts it).
    pub fn default_model_dir(data_dir: &std::path::Path) -> PathBuf {
        env("MNEMO_MODEL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.join("models").join("all-MiniLM-L6-v2"))
    }

    /// Defaults, then the config file, then the environment.
    pub fn from_settings(db_path: Option<PathBuf>, settings: &Settings) -> anyhow::Result<Self> {
        let env = |name: &str| settings.get(name);
        let data_dir = Self::default_data_dir();
        let dimension = match env("MNEMO_EMBEDDING_DIM") {
            None => None,
            Some(d) => Some(
                d.parse::<usize>()
                    .ok()
                    .filter(|&d| d > 0)
                    .with_context(|| {
                        format!("MNEMO_EMBEDDING_DIM=`{d}` is not a positive whole number")
                    })?,
            ),
        };
        let embedder = match env("MNEMO_EMBEDDER").as_deref().unwrap_or("local") {
            "local" => EmbedderChoice::Local { dir: Self::default_model_dir(&data_dir), dimension },
            "hash" => EmbedderChoice::Hash { dimension: dimension.unwrap_or(DEFAULT_DIMENSION) },
            "http" => EmbedderChoice::Http {
                base_url: env("MNEMO_EMBEDDING_URL").context(
                    "MNEMO_EMBEDDER=http needs MNEMO_EMBEDDING_URL (e.g. https://api.openai.com/v1)",
                )?,
                api_key: env("MNEMO_EMBEDDING_KEY"),
                model: env("MNEMO_EMBEDDING_MODEL").unwrap_or_else(|| "text-embedding-3-small".into()),
                dimension: dimension.context(
                    "MNEMO_EMBEDDER=http needs MNEMO_EMBEDDING_DIM (e.g. 1536 for text-embedding-3-small)",
                )?,
                send_dimensions: env("MNEMO_EMBEDDING_SEND_DIM").is_some_and(|v| v == "1" || v == "true"),
            },
            other => bail!("MNEMO_EMBEDDER=`{other}` is not known; use `local` (default), `http` or `hash`"),
        };
        Ok(Self {
            db_path: db_path.unwrap_or_else(|| data_dir.join("memory.db")),
            cache_dir: Some(data_dir.join("cache")),
            data_dir,
            embedder,
            llm: llm_from_settings(settings)?,
            api_key: env("MNEMO_API_KEY"),
            host: env("MNEMO_HOST").unwrap_or_else(|| "127.0.0.1".into()),
            port: number(settings, "MNEMO_PORT", 7878u16)?,
            ner: ner_from_settings(settings)?,
            schedule: crate::scheduler::Schedule::new(|task| env(task.setting()))?,
            ann_min_rows: match settings.get("MNEMO_ANN_MIN_ROWS").as_deref() {
                Some("off") => None,
                _ => Some(number(
                    settings,
                    "MNEMO_ANN_MIN_ROWS",
                    crate::storage::ANN_MIN_ROWS,
                )?),
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
            host: "127.0.0.1".into(),
            port: 7878,
            ner: NerConfig::default(),
            schedule: crate::scheduler::Schedule::default(),
            ann_min_rows: Some(crate::storage::ANN_MIN_ROWS),
        }
    }
}

fn ner_from_settings(settings: &Settings) -> anyhow::Result<NerConfig> {
    let d = NerConfig::default();
    let limits = PluginLimits {
        memory_bytes: number(
            settings,
            "MNEMO_PLUGIN_MEMORY_MB",
            d.limits.memory_bytes >> 20,
        )? << 20,
        deadline: Duration::from_millis(number(
            settings,
            "MNEMO_PLUGIN_DEADLINE_MS",
            d.limits.deadline.as_millis() as u64,
        )?),
        fuel: settings
            .get("MNEMO_PLUGIN_FUEL")
            .map(|v| {
                v.parse()
                    .ok()
                    .with_context(|| format!("MNEMO_PLUGIN_FUEL=`{v}` is not a number"))
            })
            .transpose()?,
        ..d.limits
    };
    Ok(NerConfig {
        plugin_dir: settings.get("MNEMO_PLUGIN_DIR").map(PathBuf::from),
        limits,
        fast: settings
            .get("MNEMO_NER_FAST")
            .map(|v| list(&v))
            .unwrap_or(d.fast),
        accurate: settings
            .get("MNEMO_NER_ACCURATE")
            .map(|v| list(&v))
            .unwrap_or(d.accurate),
    })
}

fn number<T: std::str::FromStr>(settings: &Settings, name: &str, default: T) -> anyhow::Result<T> {
    match settings.get(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .ok()
            .with_context(|| format!("{name}=`{v}` is not a valid number")),
    }
}

fn provider(name: &str, value: &str) -> anyhow::Result<Provider> {
    match value {
        "openai" => Ok(Provider::OpenAi),
        "anthropic" => Ok(Provider::Anthropic),
        other => bail!(
            "{name}=`{other}` is not known; use `openai` (any OpenAI-compatible server) or `anthropic`"
        ),
    }
}

/// `MNEMO_LLM_*` for the global endpoint, `MNEMO_<TIER>_{URL,KEY,MODEL,PROVIDER}`
/// per model tier (seed 004 §7: gate, merge, audit, expand, extract, ...).
pub fn llm_from_settings(settings: &Settings) -> anyhow::Result<LlmConfig> {
    let env = |name: &str| settings.get(name);
    let level: LlmLevel = match env("MNEMO_LLM_LEVEL") {
        None => LlmLevel::Off,
        Some(v) => v.parse().map_err(|_| {
            anyhow::anyhow!("MNEMO_LLM_LEVEL=`{v}` is not known; use off, auto or full")
        })?,
    };
    let global_provider = provider(
        "MNEMO_LLM_PROVIDER",
        env("MNEMO_LLM_PROVIDER").as_deref().unwrap_or("openai"),
    )?;
    let global_url = env("MNEMO_LLM_URL");
    let global_key = env("MNEMO_LLM_KEY");
    let global_model = env("MNEMO_LLM_MODEL").unwrap_or_else(|| "gpt-4o-mini".into());
    let default = global_url.clone().map(|base_url| Endpoint {
        provider: global_provider,
        base_url,
        api_key: global_key.clone(),
        model: global_model.clone(),
    });
    let mut tiers = HashMap::new();
    for tier in TIERS {
        let var = |field: &str| env(&format!("MNEMO_{}_{field}", tier.as_str().to_uppercase()));
        let (url, key, model, prov) = (var("URL"), var("KEY"), var("MODEL"), var("PROVIDER"));
        if url.is_none() && key.is_none() && model.is_none() && prov.is_none() {
            continue;
        }
        let Some(base_url) = url.or_else(|| global_url.clone()) else {
            bail!(
                "MNEMO_{}_MODEL is set but no URL: set MNEMO_{}_URL or MNEMO_LLM_URL",
                tier.as_str().to_uppercase(),
                tier.as_str().to_uppercase()
            );
        };
        let provider = match prov {
            Some(p) => provider(
                &format!("MNEMO_{}_PROVIDER", tier.as_str().to_uppercase()),
                &p,
            )?,
            None => global_provider,
        };
        tiers.insert(
            *tier,
            Endpoint {
                provider,
                base_url,
                api_key: key.or_else(|| global_key.clone()),
                model: model.unwrap_or_else(|| global_model.clone()),
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
            timeout: Duration::from_secs(number(settings, "MNEMO_LLM_TIMEOUT_SECS", 60u64)?),
            retries: number(settings, "MNEMO_LLM_RETRIES", 3u32)?,
            backoff: Duration::from_millis(number(settings, "MNEMO_LLM_BACKOFF_MS", 250u64)?),
        },
        concurrency: number(settings, "MNEMO_LLM_CONCURRENCY", 2usize)?,
        max_tokens: number(settings, "MNEMO_LLM_MAX_TOKENS", 1024u32)?,
    })
}
