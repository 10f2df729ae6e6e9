//! The SDK for mnemo NER plugins: implement [`Provider`] for a type, then
//! `mnemo_ner_sdk::export_provider!(MyType);`, and build with
//! `cargo build --target wasm32-wasip2 --release`. The plugin ABI is
//! `wit/ner/since_v0.1.0/provider.wit` (`mnemo:ner@0.1.0`).
//!
//! The types here are plain Rust, so a provider's logic unit-tests natively;
//! only the export glue is compiled for `wasm32`.

/// What a provider can recognise (the ABI's `entity-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityType {
    Person,
    Project,
    Organization,
    Location,
    Email,
    Url,
    Date,
    Mention,
    Hashtag,
    Other,
}

/// One recognised entity: its text, type, byte span in the input, confidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    pub text: String,
    pub entity_type: EntityType,
    pub start: u32,
    pub end: u32,
    pub confidence: f32,
}

/// Who the provider is.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    pub name: String,
    pub version: String,
    pub entity_types: Vec<EntityType>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The input cannot be processed (too long, bad encoding).
    InvalidInput(String),
    /// The provider failed for another reason.
    Failed(String),
}

/// A NER provider. Both functions must be total: return an error, never panic
/// (a panic traps, and the host counts that against the plugin).
pub trait Provider {
    fn info() -> Info;
    fn extract(text: &str) -> Result<Vec<Entity>, Error>;
}

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/ner/since_v0.1.0",
        world: "ner-provider",
        pub_export_macro: true,
        export_macro_name: "__export_raw",
        default_bindings_module: "mnemo_ner_sdk::bindings",
    });
}

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod glue {
    //! Conversions between the SDK types and the generated bindings.
    use super::bindings::mnemo::ner::types as t;
    use super::*;

    fn kind(k: EntityType) -> t::EntityType {
        match k {
            EntityType::Person => t::EntityType::Person,
            EntityType::Project => t::EntityType::Project,
            EntityType::Organization => t::EntityType::Organization,
            EntityType::Location => t::EntityType::Location,
            EntityType::Email => t::EntityType::Email,
            EntityType::Url => t::EntityType::Url,
            EntityType::Date => t::EntityType::Date,
            EntityType::Mention => t::EntityType::Mention,
            EntityType::Hashtag => t::EntityType::Hashtag,
            EntityType::Other => t::EntityType::Other,
        }
    }

    pub fn info<P: Provider>() -> t::ProviderInfo {
        let i = P::info();
        t::ProviderInfo {
            name: i.name,
            version: i.version,
            entity_types: i.entity_types.into_iter().map(kind).collect(),
        }
    }

    pub fn extract<P: Provider>(text: &str) -> Result<Vec<t::Entity>, t::Error> {
        match P::extract(text) {
            Ok(v) => Ok(v
                .into_iter()
                .map(|e| t::Entity {
                    text: e.text,
                    entity_type: kind(e.entity_type),
                    start: e.start,
                    end: e.end,
                    confidence: e.confidence,
                })
                .collect()),
            Err(Error::InvalidInput(m)) => Err(t::Error::InvalidInput(m)),
            Err(Error::Failed(m)) => Err(t::Error::Failed(m)),
        }
    }
}

/// Exports `$provider` (a type implementing [`Provider`]) as the plugin.
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        #[cfg(target_arch = "wasm32")]
        mod __mnemo_ner_export {
            #[allow(unused_imports)]
            use super::*;
            use $crate::bindings::exports::mnemo::ner::provider::Guest;
            use $crate::bindings::mnemo::ner::types as t;

            pub struct Export;

            impl Guest for Export {
                fn info() -> t::ProviderInfo {
                    $crate::glue::info::<$provider>()
                }
                fn extract(text: String) -> Result<Vec<t::Entity>, t::Error> {
                    $crate::glue::extract::<$provider>(&text)
                }
            }

            $crate::bindings::__export_raw!(Export with_types_in $crate::bindings);
        }
    };
}
