//! The SDK for mnemo LLM provider plugins: implement [`Provider`] for a
//! type, then `mnemo_llm_sdk::export_provider!(MyType);`, and build with
//! `cargo build --target wasm32-wasip2 --release`. The plugin ABI is
//! `wit/llm/since_v0.1.0/provider.wit` (`mnemo:llm@0.1.0`).
//!
//! A provider only knows its wire format: it builds the request body, sends
//! it with [`http::post_json`] (through the host, which checks the URL
//! against the plugin's allow-list, adds the API key, and owns timeouts,
//! retries and the concurrency limit) and reads the answer. The types here
//! are plain Rust, and [`http::with_transport`] stands in for the host in
//! native tests, so a provider's logic unit-tests without wasm.

pub mod http;
mod types;

pub use serde_json;
pub use types::*;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/llm/since_v0.1.0",
        world: "llm-provider",
        pub_export_macro: true,
        export_macro_name: "__export_raw",
        default_bindings_module: "mnemo_llm_sdk::bindings",
    });
}

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod glue;

/// Exports `$provider` (a type implementing [`Provider`]) as the plugin.
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        #[cfg(target_arch = "wasm32")]
        mod __mnemo_llm_export {
            #[allow(unused_imports)]
            use super::*;
            use $crate::bindings::exports::mnemo::llm::provider::Guest;
            use $crate::bindings::mnemo::llm::types as t;

            pub struct Export;

            impl Guest for Export {
                fn info() -> t::ProviderInfo {
                    $crate::glue::info::<$provider>()
                }
                fn chat(
                    base_url: String,
                    request: t::ChatRequest,
                ) -> Result<t::ChatResponse, t::Error> {
                    $crate::glue::chat::<$provider>(&base_url, request)
                }
                fn embed(
                    base_url: String,
                    request: t::EmbedRequest,
                ) -> Result<t::EmbedResponse, t::Error> {
                    $crate::glue::embed::<$provider>(&base_url, request)
                }
            }

            $crate::bindings::__export_raw!(Export with_types_in $crate::bindings);
        }
    };
}
