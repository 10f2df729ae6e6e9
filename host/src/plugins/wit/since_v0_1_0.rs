//! ABI `mnemo:ner@0.1.0` (`wit/ner/since_v0.1.0/`, released and frozen):
//! its bindings and the conversions from them into the host's plugin types.

use mnemo_core::model::EntityType;
use wasmtime::Store;
use wasmtime::component::{Component, HasSelf, Linker};

use super::{PluginInfo, ProviderError, RawEntity};
use crate::plugins::state::PluginState;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/ner/since_v0.1.0",
        world: "ner-provider",
    });
}

pub use bindings::NerProvider as Instance;
pub use bindings::NerProviderPre;
use bindings::mnemo::ner::types as t;

pub type Pre = NerProviderPre<PluginState>;

impl t::Host for PluginState {}

/// Links the WASI that grants nothing and this ABI's (empty) imports.
pub fn pre(engine: &wasmtime::Engine, component: &Component) -> anyhow::Result<Pre> {
    let mut linker: Linker<PluginState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    Instance::add_to_linker::<PluginState, HasSelf<PluginState>>(&mut linker, |s| s)?;
    Ok(NerProviderPre::new(linker.instantiate_pre(component)?)?)
}

fn entity_type(k: t::EntityType) -> EntityType {
    match k {
        t::EntityType::Person => EntityType::Person,
        t::EntityType::Project => EntityType::Project,
        t::EntityType::Organization => EntityType::Organization,
        t::EntityType::Location => EntityType::Location,
        t::EntityType::Email => EntityType::Email,
        t::EntityType::Url => EntityType::Url,
        t::EntityType::Date => EntityType::Date,
        t::EntityType::Mention => EntityType::Mention,
        t::EntityType::Hashtag => EntityType::Hashtag,
        t::EntityType::Other => EntityType::Other,
    }
}

pub fn info(p: &Instance, store: &mut Store<PluginState>) -> wasmtime::Result<PluginInfo> {
    let info = p.mnemo_ner_provider().call_info(store)?;
    Ok(PluginInfo {
        name: info.name,
        version: info.version,
        entity_types: info.entity_types.into_iter().map(entity_type).collect(),
    })
}

pub fn extract(
    p: &Instance,
    store: &mut Store<PluginState>,
    text: &str,
) -> wasmtime::Result<Result<Vec<RawEntity>, ProviderError>> {
    Ok(match p.mnemo_ner_provider().call_extract(store, text)? {
        Ok(entities) => Ok(entities
            .into_iter()
            .map(|e| RawEntity {
                text: e.text,
                entity_type: entity_type(e.entity_type),
                start: e.start,
                end: e.end,
                confidence: e.confidence,
            })
            .collect()),
        Err(t::Error::InvalidInput(m)) => Err(ProviderError::InvalidInput(m)),
        Err(t::Error::Failed(m)) => Err(ProviderError::Failed(m)),
    })
}
