//! `Mnemo`: a core instance wired to its providers, plus the host-only jobs
//! that are pure I/O (embedding backfill). This is what the CLI, the server
//! and the tests hold.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use anyhow::Context;

use crate::config::{Config, EmbedderChoice};
use crate::embedding::{
    EmbeddingProvider, Embeddings, HashEmbedder, LocalEmbedder, RemoteEmbedder,
};
use crate::http::{HttpPolicy, Limiter};
use crate::ledger::Ledger;
use crate::llm::LlmClient;
use crate::llm::rehearsal::{Answers, Script, Wave};
use crate::ner::NerPipeline;
use crate::plugins::PluginHost;
use crate::plugins::llm::{Capability, LlmPlugin, LlmPlugins};
use crate::ports::HostPorts;
use crate::runtime::{CoreInstance, Runtime};
use crate::storage::{Store, VectorState};

/// Waves of parallel calls a rehearsal makes before it goes on one call at
/// a time: a cycle's chain of dependent calls (an extraction, its repair, a
/// session's next chunk, the triage of the facts, their pairs, the topic
/// names) is a handful of waves; a longer chain finishes call by call.
const MAX_WAVES: usize = 12;

pub struct Mnemo {
    core: CoreInstance,
    /// The layers nightly fading applies to (from the configuration).
    fade_layers: Vec<mnemo_core::model::Layer>,
    /// How long a session stays open without turns (from the configuration).
    session_idle_minutes: Option<u32>,
    /// The Buffer's cap and drop threshold (from the configuration).
    buffer_cap: Option<u32>,
    buffer_drop_below: Option<f32>,
    /// The server's topic watcher rebuilds the trees cycles change.
    topics_by_worker: bool,
    /// What each model's calls cost, for the usage report.
    prices: crate::ledger::Prices,
}

/// Builds the providers a configuration names and opens the database.
pub fn host_ports(config: &Config) -> anyhow::Result<HostPorts> {
    let store = Store::open(&config.db_path)?;
    store.set_ann(config.ann_min_rows, config.ann_flush_at);
    store.set_text_index(config.text_index);
    store.set_text_save_min_rows(config.text_save_min_rows);
    let ledger = Ledger::default();
    let plugins = llm_plugins(config)?;
    let provider: Box<dyn EmbeddingProvider> = match &config.embedder {
        EmbedderChoice::Hash { dimension } => Box::new(HashEmbedder::new(*dimension)),
        EmbedderChoice::Local {
            dir,
            dimension,
            precision,
        } => Box::new(LocalEmbedder::load_with(dir, *dimension, *precision)?),
        EmbedderChoice::Http {
            provider,
            base_url,
            api_key,
            model,
            dimension,
            send_dimensions,
        } => Box::new(RemoteEmbedder {
            plugin: embedding_plugin(&plugins, provider)?,
            base_url: base_url.clone(),
            api_key: api_key.clone(),
            model: model.clone(),
            dimension: *dimension,
            send_dimensions: *send_dimensions,
            policy: HttpPolicy {
                timeout: config.llm.policy.timeout,
                ..HttpPolicy::default()
            },
            limiter: Limiter::new(config.llm.concurrency),
            ledger: ledger.clone(),
        }),
    };
    let info = provider.info();
    if let VectorState::Disabled { reason } = store.lock_embedder(&info.model, info.dimension)? {
        tracing::warn!("vector search disabled: {reason}");
    }
    Ok(HostPorts {
        store,
        embeddings: Embeddings::new(provider, ledger.clone()),
        llm: llm_client(config, &ledger, plugins)?,
        ner: ner_pipeline(config)?,
        clock: config.clock.clone(),
        ledger,
        sharing: config.sharing.clone(),
    })
}

/// The bundled LLM provider plugins and the plugin folder's.
fn llm_plugins(config: &Config) -> anyhow::Result<LlmPlugins> {
    let host = PluginHost::new(config.ner.limits.clone(), config.cache_dir.clone())?;
    let added = match &config.ner.plugin_dir {
        Some(dir) => host.llm_plugins_in(dir),
        None => Vec::new(),
    };
    Ok(LlmPlugins::with(host, added))
}

/// The plugin `MNEMO_EMBEDDING_PROVIDER` names, if it can embed.
fn embedding_plugin(plugins: &LlmPlugins, name: &str) -> anyhow::Result<Arc<LlmPlugin>> {
    let plugin = plugins.get(name).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        plugin.capabilities.contains(&Capability::Embed),
        "MNEMO_EMBEDDING_PROVIDER=`{name}`: that provider has no embeddings"
    );
    Ok(plugin)
}

/// The LLM client over `plugins`; an endpoint naming an unknown provider
/// is a start-up error.
fn llm_client(config: &Config, ledger: &Ledger, plugins: LlmPlugins) -> anyhow::Result<LlmClient> {
    let llm = LlmClient::with_plugins(config.llm.clone(), ledger.clone(), Some(plugins));
    llm.check_providers()?;
    Ok(llm)
}

/// Loads the bundled NER plugins, then the user folder's, and builds the strategies.
pub fn ner_pipeline(config: &Config) -> anyhow::Result<NerPipeline> {
    let host = PluginHost::new(config.ner.limits.clone(), config.cache_dir.clone())?;
    let mut providers: Vec<Box<dyn crate::ner::NerProvider>> = Vec::new();
    for (name, bytes) in crate::plugins::BUNDLED {
        match host.load(&format!("bundled plugin `{name}`"), bytes) {
            Ok(p) => providers.push(Box::new(p)),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    if let Some(dir) = &config.ner.plugin_dir {
        for loaded in host.load_dir(dir, Some(crate::plugins::Kind::Ner)) {
            match loaded {
                Ok(crate::plugins::Loaded::Ner(p)) => providers.push(Box::new(p)),
                // `load_dir` passes LLM plugins over; none arrive here.
                Ok(crate::plugins::Loaded::Llm(_)) => {}
                Err(e) => tracing::warn!("plugin skipped: {e}"),
            }
        }
    }
    let (pipeline, warnings) = NerPipeline::new(providers, &config.ner.fast, &config.ner.accurate);
    for w in warnings {
        tracing::info!("{w}");
    }
    Ok(pipeline)
}

impl Mnemo {
    pub fn open(config: &Config) -> anyhow::Result<Self> {
        let runtime = Runtime::new(config.cache_dir.as_deref())?;
        Self::open_with(&runtime, config)
    }

    /// Opens with an already loaded runtime (many instances share one).
    pub fn open_with(runtime: &Arc<Runtime>, config: &Config) -> anyhow::Result<Self> {
        let ports = host_ports(config).context("opening mnemo")?;
        Ok(Self {
            core: runtime.instantiate(ports)?,
            fade_layers: config.fade_layers.clone(),
            session_idle_minutes: config.session_idle_minutes,
            buffer_cap: config.buffer_cap,
            buffer_drop_below: config.buffer_drop_below,
            topics_by_worker: config.topics_by_worker,
            prices: config.prices.clone(),
        })
    }

    /// A reader beside this instance: the same database through a
    /// read-only connection (sharing the vector state and HNSW graphs), the
    /// same embedding model, LLM limit and ledger, NER plugins of its own.
    /// Readers run on other threads, in parallel with this writer.
    pub fn reader(&self, config: &Config) -> anyhow::Result<Self> {
        self.beside(config, self.core.ports().store.reader()?)
    }

    /// Another writer beside this one, where the store locks per namespace
    /// (Postgres): a read-write connection of its own, the rest shared as
    /// a reader's is. `None` on a SQLite file, which has one writer.
    pub fn writer_beside(&self, config: &Config) -> anyhow::Result<Option<Self>> {
        match self.core.ports().store.writer_beside()? {
            Some(store) => Ok(Some(self.beside(config, store)?)),
            None => Ok(None),
        }
    }

    /// An instance for rehearsals (`llm/rehearsal.rs`): a reader whose
    /// writes succeed and are forgotten.
    pub fn rehearsal(&self, config: &Config) -> anyhow::Result<Self> {
        self.beside(config, self.core.ports().store.rehearsal()?)
    }

    fn beside(&self, config: &Config, store: Store) -> anyhow::Result<Self> {
        let base = self.core.ports();
        let runtime = self.core.runtime();
        let ports = HostPorts {
            store,
            embeddings: base.embeddings.share(),
            llm: base.llm.share(),
            ner: ner_pipeline(config)?,
            clock: base.clock.clone(),
            ledger: base.ledger.clone(),
            sharing: base.sharing.clone(),
        };
        Ok(Self {
            core: runtime.instantiate(ports)?,
            fade_layers: self.fade_layers.clone(),
            session_idle_minutes: self.session_idle_minutes,
            buffer_cap: self.buffer_cap,
            buffer_drop_below: self.buffer_drop_below,
            topics_by_worker: self.topics_by_worker,
            prices: self.prices.clone(),
        })
    }

    /// The usage ledger's totals per component and model, priced, and its
    /// latest `limit` calls: what every surface's `llm-usage` shows. Calls
    /// still queued are written first (on the writer; a reader cannot).
    pub fn usage_report(&self, limit: u32) -> anyhow::Result<crate::ledger::UsageReport> {
        self.core.ports().flush_ledger();
        let store = &self.core.ports().store;
        Ok(crate::ledger::UsageReport::new(
            store.usage_summary()?,
            store.usage(limit)?,
            &self.prices,
        ))
    }

    /// Whether LLM steps run at all (level other than `off`).
    pub fn llm_on(&self) -> bool {
        use mnemo_core::ports::Llm;
        self.core.ports().llm.level() != mnemo_core::model::LlmLevel::Off
    }

    /// Runs `f` with this instance's LLM calls answered as `answers` says
    /// and its clock stopped at `at` (a rehearsal, or the real run after
    /// one); then live again.
    pub fn scripted<R>(
        &mut self,
        answers: Answers,
        at: mnemo_core::model::Millis,
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let ports = self.core.ports_mut();
        ports.llm.answers = answers;
        ports.clock.pinned = Some(at);
        let out = f(self);
        let ports = self.core.ports_mut();
        ports.llm.answers = Answers::Live;
        ports.clock.pinned = None;
        out
    }

    /// The rehearsal of a planned write (`llm/rehearsal.rs`): in waves of
    /// parallel calls when the provider takes several at once, else one
    /// pass that calls as it goes. Either way `script` ends up with every
    /// answer the real run will ask for.
    pub fn rehearse<R>(
        &mut self,
        script: &Arc<Script>,
        at: mnemo_core::model::Millis,
        f: impl Fn(&mut Self) -> R,
    ) {
        let limit = self.core.ports().llm.concurrency();
        if limit > 1 {
            for _ in 0..MAX_WAVES {
                let wave = Arc::new(Wave::new(limit));
                self.scripted(Answers::Collect(script.clone(), wave.clone()), at, &f);
                let requests = wave.take();
                if requests.is_empty() {
                    return;
                }
                self.core.ports().llm.fetch(requests, script);
            }
        }
        // One call at a time, or what is left after the waves.
        self.scripted(Answers::Record(script.clone()), at, &f);
    }

    /// Seed 003's nightly fading, over the configured layers.
    pub fn fade_as_configured(
        &mut self,
    ) -> Result<mnemo_core::model::FadeReport, crate::runtime::CallError> {
        let req = mnemo_core::model::FadeRequest {
            layers: self.fade_layers.clone(),
        };
        self.core.fade(req)
    }

    /// One cycle, with the configured session idle time and Buffer limits
    /// unless the request names them.
    pub fn consolidate_as_configured(
        &mut self,
        mut req: mnemo_core::model::ConsolidateRequest,
    ) -> Result<mnemo_core::model::ConsolidateReport, crate::runtime::CallError> {
        req.session_idle_minutes = req.session_idle_minutes.or(self.session_idle_minutes);
        req.buffer_cap = req.buffer_cap.or(self.buffer_cap);
        req.buffer_drop_below = req.buffer_drop_below.or(self.buffer_drop_below);
        req.topics_by_worker |= self.topics_by_worker;
        self.core.consolidate(req)
    }

    pub fn vector_state(&self) -> VectorState {
        self.core.ports().store.vector_state()
    }

    /// Embeds up to `batch` rows that have no vector yet (episodes are
    /// ingested without one). Returns how many were embedded.
    pub fn backfill_vectors(&mut self, batch: usize) -> anyhow::Result<usize> {
        let rows = crate::backfill::pending(&self.core.ports().store, batch)?;
        let found = rows.len();
        let embedded = crate::backfill::embed(&self.core.ports().embeddings, rows);
        self.core.ports().flush_ledger();
        crate::backfill::store(self, &embedded?)?;
        Ok(found)
    }

    /// Backfills until no row lacks a vector; `progress` gets the running count.
    pub fn backfill_all(
        &mut self,
        batch: usize,
        mut progress: impl FnMut(usize),
    ) -> anyhow::Result<usize> {
        let mut total = 0;
        loop {
            let n = self.backfill_vectors(batch)?;
            if n == 0 {
                return Ok(total);
            }
            total += n;
            progress(total);
        }
    }
}

impl Deref for Mnemo {
    type Target = CoreInstance;
    fn deref(&self) -> &CoreInstance {
        &self.core
    }
}

impl DerefMut for Mnemo {
    fn deref_mut(&mut self) -> &mut CoreInstance {
        &mut self.core
    }
}
