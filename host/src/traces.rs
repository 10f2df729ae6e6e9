//! Traces over OTLP (issue 43), opt in: with `MNEMO_OTLP_ENDPOINT` set, the
//! spans of `tracing` — one per HTTP request (`server/mod.rs`,
//! `access_log`), with its method, route, status and time — go through
//! `tracing-opentelemetry` to that collector as OTLP/HTTP JSON
//! (`/v1/traces`), in batches from a thread of their own, so a slow or
//! absent collector costs no request any time. The batches are sent with
//! ureq, the HTTP client the host has anyway.

use std::io::Read;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// Largest collector answer read.
const MAX_ANSWER_BYTES: u64 = 1 << 20;
/// How long one export may take.
const EXPORT_TIMEOUT_SECS: u64 = 10;

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The `tracing` layer that exports spans to `endpoint`.
pub fn layer<S>(endpoint: &str) -> anyhow::Result<impl tracing_subscriber::Layer<S>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Ureq(
            ureq::AgentBuilder::new()
                .timeout(std::time::Duration::from_secs(EXPORT_TIMEOUT_SECS))
                .build(),
        ))
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(url)
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name("mnemo").build())
        .build();
    let tracer = provider.tracer("mnemo");
    let _ = PROVIDER.set(provider);
    Ok(tracing_opentelemetry::layer().with_tracer(tracer))
}

/// Sends the spans still batched (at the end of the process).
pub fn flush() {
    if let Some(p) = PROVIDER.get() {
        let _ = p.force_flush();
    }
}

/// OTLP over ureq.
#[derive(Debug)]
struct Ureq(ureq::Agent);

#[async_trait::async_trait]
impl HttpClient for Ureq {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut req = self
            .0
            .request(parts.method.as_str(), &parts.uri.to_string());
        for (name, value) in &parts.headers {
            if let Ok(v) = value.to_str() {
                req = req.set(name.as_str(), v);
            }
        }
        let answer = match req.send_bytes(&body) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(Box::new(e)),
        };
        let status = answer.status();
        let mut text = Vec::new();
        answer
            .into_reader()
            .take(MAX_ANSWER_BYTES)
            .read_to_end(&mut text)?;
        Ok(Response::builder().status(status).body(Bytes::from(text))?)
    }
}
