//! `GET /metrics`: what an operator's Prometheus scrapes (issue 43), in
//! the text exposition format 0.0.4.
//!
//! - HTTP requests by method, route (the route's template, `/memories/{id}`,
//!   never the id: bounded label values) and status, and their latency as a
//!   histogram — counted by a layer on every route, `/mcp` included;
//! - LLM and embedding calls, failures and tokens by component, from the
//!   usage ledger every server of the store writes;
//! - Postgres write-lock waits by namespace (count, seconds, longest);
//! - background work pending: rows without a vector, LLM items waiting or
//!   parked by step, open circuits;
//! - the HNSW index: graphs, segments, points, vectors not yet in a
//!   segment, builds running (on Postgres: the namespaces in the graph and
//!   the vectors still moving in, `storage/postgres/graph.rs`).
//!
//! The endpoint sits behind the API key like every route but `/health`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;

/// Latency buckets, in seconds: from a cached read to a cycle that waits
/// on a model.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// One route's latency histogram.
#[derive(Default, Clone)]
struct Histogram {
    /// Requests at or under each bucket's bound.
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The request counts and latencies since the server started.
#[derive(Default, Clone)]
pub(super) struct Requests {
    inner: Arc<Mutex<RequestsInner>>,
}

#[derive(Default)]
struct RequestsInner {
    /// (method, route, status) → requests.
    totals: BTreeMap<(String, String, u16), u64>,
    /// (method, route) → latency.
    latency: BTreeMap<(String, String), Histogram>,
}

impl Requests {
    fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let Ok(mut m) = self.inner.lock() else { return };
        let key = (method.to_string(), route.to_string());
        *m.totals
            .entry((key.0.clone(), key.1.clone(), status))
            .or_default() += 1;
        let h = m.latency.entry(key).or_default();
        h.count += 1;
        h.sum += seconds;
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                h.counts[i] += 1;
            }
        }
    }
}

/// The layer that counts every request by its route's template.
pub(super) async fn count(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| unmatched(req.uri().path()), |p| p.as_str().to_string());
    let started = Instant::now();
    let res = next.run(req).await;
    s.requests.record(
        &method,
        &route,
        res.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    res
}

/// The label of a request no route matched: `/mcp` (a nested service),
/// else one value for all of them (an unmatched path could be anything).
fn unmatched(path: &str) -> String {
    if path == "/mcp" || path.starts_with("/mcp/") {
        "/mcp".into()
    } else {
        "unmatched".into()
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

pub(super) async fn metrics(State(s): State<AppState>) -> Result<Response, ApiError> {
    let (usage, integrity, llm, ann) = s
        .engine
        .read(|m| {
            let llm = m.llm_status(None);
            let store = &m.ports().store;
            (
                store.usage_summary(),
                store.integrity(),
                llm,
                store.ann_status(),
            )
        })
        .await?;
    let usage = usage.map_err(ApiError::storage)?;
    let integrity = integrity.map_err(ApiError::storage)?;
    let llm = llm?;
    let mut out = String::new();

    family(
        &mut out,
        "mnemo_http_requests_total",
        "counter",
        "HTTP requests by method, route and status.",
    );
    let (totals, latency) = {
        let m = s
            .requests
            .inner
            .lock()
            .map_err(|_| ApiError::unavailable("metrics lock"))?;
        (m.totals.clone(), m.latency.clone())
    };
    for ((method, route, status), n) in &totals {
        let _ = writeln!(
            out,
            "mnemo_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
            label(method),
            label(route)
        );
    }
    family(
        &mut out,
        "mnemo_http_request_duration_seconds",
        "histogram",
        "HTTP request latency by method and route.",
    );
    for ((method, route), h) in &latency {
        let labels = format!("method=\"{}\",route=\"{}\"", label(method), label(route));
        for (bound, n) in BUCKETS.iter().zip(h.counts) {
            let _ = writeln!(
                out,
                "mnemo_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "mnemo_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(
            out,
            "mnemo_http_request_duration_seconds_sum{{{labels}}} {}",
            h.sum
        );
        let _ = writeln!(
            out,
            "mnemo_http_request_duration_seconds_count{{{labels}}} {}",
            h.count
        );
    }

    // Postgres writes wait for their namespaces' write locks (none are
    // taken on SQLite, whose one writer holds the file).
    let waits = crate::storage::lock_waits();
    for (name, kind, help) in [
        (
            "mnemo_write_lock_waits_total",
            "counter",
            "Postgres writes by namespace, each having waited for its write lock.",
        ),
        (
            "mnemo_write_lock_wait_seconds_sum",
            "counter",
            "Seconds Postgres writes waited for their namespace's write lock.",
        ),
        (
            "mnemo_write_lock_wait_seconds_max",
            "gauge",
            "The longest wait for a namespace's write lock since the server started.",
        ),
    ] {
        family(&mut out, name, kind, help);
        for (ns, w) in &waits {
            let value = match kind {
                "gauge" => w.max_seconds,
                _ if name.ends_with("_total") => w.count as f64,
                _ => w.seconds,
            };
            let _ = writeln!(out, "{name}{{namespace=\"{}\"}} {value}", label(ns));
        }
    }

    // The ledger's rows are per component and model; summed per component.
    let mut by_component: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for u in &usage {
        let e = by_component.entry(u.component.as_str()).or_default();
        e.0 += u.calls;
        e.1 += u.failures;
        e.2 += u.input_tokens + u.output_tokens;
    }
    for (name, help, pick) in [
        (
            "mnemo_provider_calls_total",
            "LLM and embedding calls by component (the usage ledger).",
            0,
        ),
        (
            "mnemo_provider_failures_total",
            "LLM and embedding calls that failed, by component.",
            1,
        ),
        (
            "mnemo_provider_tokens_total",
            "Input plus output tokens by component.",
            2,
        ),
    ] {
        family(&mut out, name, "counter", help);
        for (component, v) in &by_component {
            let n = [v.0, v.1, v.2][pick];
            let _ = writeln!(out, "{name}{{component=\"{}\"}} {n}", label(component));
        }
    }

    family(
        &mut out,
        "mnemo_vectors_missing",
        "gauge",
        "Active rows without a vector (the background embedding's queue).",
    );
    let _ = writeln!(out, "mnemo_vectors_missing {}", integrity.missing_vectors);
    let mut waiting: BTreeMap<(String, bool), u64> = BTreeMap::new();
    for w in &llm.waiting {
        *waiting
            .entry((w.step.to_string(), w.retry_at.is_none()))
            .or_default() += 1;
    }
    family(
        &mut out,
        "mnemo_llm_waiting_items",
        "gauge",
        "Items whose LLM step failed, by step; parked=\"true\" wait for a retry by hand.",
    );
    for ((step, parked), n) in &waiting {
        let _ = writeln!(
            out,
            "mnemo_llm_waiting_items{{step=\"{step}\",parked=\"{parked}\"}} {n}"
        );
    }
    family(
        &mut out,
        "mnemo_llm_circuit_open",
        "gauge",
        "1 while an LLM step's circuit is open (the step is skipped).",
    );
    for c in &llm.circuits {
        let _ = writeln!(
            out,
            "mnemo_llm_circuit_open{{step=\"{}\"}} {}",
            c.component,
            u8::from(c.open)
        );
    }
    if let Some(a) = ann {
        for (name, help, v) in [
            (
                "mnemo_ann_graphs",
                "Partitions searched through an HNSW graph.",
                a.graphs,
            ),
            ("mnemo_ann_segments", "HNSW graph segments.", a.segments),
            ("mnemo_ann_points", "Vectors in HNSW segments.", a.points),
            (
                "mnemo_ann_fresh",
                "Vectors written since their segment was built (searched exactly).",
                a.fresh,
            ),
            ("mnemo_ann_building", "HNSW builds in progress.", a.building),
        ] {
            family(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {v}");
        }
    }
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response())
}
