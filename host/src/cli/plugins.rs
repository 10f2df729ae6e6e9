//! `mnemo plugins`: every provider plugin this mnemo would load — the
//! bundled NER and LLM plugins and those of the plugin folder — with its
//! kind, name, version and plugin ABI, or why it did not load.

use crate::config::Config;
use crate::ner::NerProvider;
use crate::plugins::{BUNDLED, BUNDLED_LLM, Kind, Loaded, PluginError, PluginHost};
use serde::Serialize;

use super::output::{Out, print_json};

#[derive(clap::Args)]
pub(super) struct PluginsArgs {
    /// One JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

/// One plugin as listed.
#[derive(Serialize)]
struct Listed {
    /// `bundled` or the file it was loaded from.
    origin: String,
    /// `ner` or `llm`; absent when the file did not load.
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// The plugin ABI it was linked for (`mnemo:<kind>@<abi>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    abi: Option<String>,
    /// NER: the entity types it can find.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    entity_types: Vec<String>,
    /// LLM: what it can do (`chat`, `embed`) and how the host sends its key.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    capabilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
    /// Why it did not load.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct Listing {
    plugins: Vec<Listed>,
    /// The plugin ABI versions this mnemo runs, per kind.
    supported: Supported,
}

#[derive(Serialize)]
struct Supported {
    ner: &'static [&'static str],
    llm: &'static [&'static str],
}

fn listed(origin: String, loaded: Result<Loaded, PluginError>) -> Listed {
    let mut l = Listed {
        origin,
        kind: None,
        name: None,
        version: None,
        abi: None,
        entity_types: Vec::new(),
        capabilities: Vec::new(),
        auth: None,
        error: None,
    };
    match loaded {
        Ok(Loaded::Ner(p)) => {
            l.kind = Some(Kind::Ner.as_str());
            l.name = Some(p.name().to_string());
            l.version = Some(p.version.clone());
            l.abi = Some(p.abi.clone());
            l.entity_types = p
                .entity_types
                .iter()
                .map(|t| t.as_str().to_string())
                .collect();
        }
        Ok(Loaded::Llm(p)) => {
            l.kind = Some(Kind::Llm.as_str());
            l.name = Some(p.name.clone());
            l.version = Some(p.version.clone());
            l.abi = Some(p.abi.clone());
            l.capabilities = p
                .capabilities
                .iter()
                .map(|c| c.as_str().to_string())
                .collect();
            l.auth = Some(p.auth.to_string());
        }
        Err(e) => l.error = Some(e.to_string()),
    }
    l
}

pub(super) fn plugins(config: &Config, a: &PluginsArgs) -> Out {
    let host = PluginHost::new(config.ner.limits.clone(), config.cache_dir.clone())?;
    let mut plugins: Vec<Listed> = BUNDLED
        .iter()
        .chain(BUNDLED_LLM)
        .map(|(name, bytes)| {
            let origin = format!("bundled plugin `{name}`");
            listed("bundled".into(), host.load_any(&origin, bytes))
        })
        .collect();
    if let Some(dir) = &config.ner.plugin_dir {
        match PluginHost::wasm_files(dir) {
            Ok(paths) => plugins.extend(
                paths
                    .iter()
                    .map(|p| listed(p.display().to_string(), host.load_path(p))),
            ),
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    let listing = Listing {
        plugins,
        supported: Supported {
            ner: Kind::Ner.supported(),
            llm: Kind::Llm.supported(),
        },
    };
    if a.json {
        return print_json(&listing);
    }
    println!(
        "{:<4} {:<12} {:<8} {:<6} {:<40} origin",
        "kind", "name", "version", "abi", "provides"
    );
    for p in &listing.plugins {
        if let Some(e) = &p.error {
            println!("{:<4} {:<12} {:<8} {:<6} {e}", "-", "-", "-", "-");
            continue;
        }
        let provides = if p.entity_types.is_empty() {
            format!(
                "{} (key: {})",
                p.capabilities.join(", "),
                p.auth.as_deref().unwrap_or("none")
            )
        } else {
            p.entity_types.join(", ")
        };
        println!(
            "{:<4} {:<12} {:<8} {:<6} {:<40} {}",
            p.kind.unwrap_or("-"),
            p.name.as_deref().unwrap_or("-"),
            p.version.as_deref().unwrap_or("-"),
            p.abi.as_deref().unwrap_or("-"),
            super::output::one_line(&provides, 40),
            p.origin
        );
    }
    Ok(())
}
