//! `http_bodies`: any body, query string, path id and namespace header to
//! every route of the real router (in process, on a real store): the
//! answer is a 2xx, or a typed JSON error — a 4xx, or a 503 for what is
//! unavailable (no LLM here) — never a 500.

use std::cell::RefCell;

use arbitrary::{Arbitrary, Unstructured};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::engine::config;

/// (method, path; `{id}` stands for the input's id).
const ROUTES: [(&str, &str); 42] = [
    ("GET", "/health"),
    ("GET", "/stats"),
    ("POST", "/memories"),
    ("GET", "/memories"),
    ("GET", "/memories/{id}"),
    ("PATCH", "/memories/{id}"),
    ("DELETE", "/memories/{id}"),
    ("POST", "/memories/{id}/restore"),
    ("GET", "/memories/{id}/history"),
    ("POST", "/memories/{id}/confirm"),
    ("POST", "/memories/{id}/correct"),
    ("POST", "/memories/{id}/revert"),
    ("GET", "/trash"),
    ("POST", "/recall"),
    ("POST", "/episodes"),
    ("GET", "/sessions"),
    ("GET", "/sessions/{id}"),
    ("POST", "/sessions/{id}/consolidate"),
    ("GET", "/llm-usage"),
    ("GET", "/decisions"),
    ("POST", "/review"),
    ("POST", "/memories/batch"),
    ("GET", "/entities/{id}"),
    ("GET", "/search"),
    ("GET", "/recent"),
    ("GET", "/resume"),
    ("GET", "/topics"),
    ("POST", "/topic"),
    ("GET", "/triggers"),
    ("GET", "/triggers/{id}"),
    ("POST", "/context"),
    ("POST", "/consolidate"),
    ("POST", "/reflect"),
    ("POST", "/facts"),
    ("GET", "/facts"),
    ("GET", "/facts/graph"),
    ("GET", "/facts/conflicts"),
    ("GET", "/facts/history"),
    ("GET", "/export"),
    ("POST", "/import"),
    ("GET", "/openapi.json"),
    ("POST", "/audit"),
];

#[derive(Arbitrary, Debug)]
struct Call {
    route: u8,
    id: String,
    namespace: Option<String>,
    query: Vec<(String, String)>,
    json_type: bool,
    body: Vec<u8>,
}

struct App {
    router: Router,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

thread_local! {
    static APP: RefCell<Option<App>> = const { RefCell::new(None) };
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn http_bodies(data: &[u8]) {
    let Ok(call) = Unstructured::new(data).arbitrary::<Call>() else {
        return;
    };
    let (method, path) = ROUTES[usize::from(call.route) % ROUTES.len()];
    let mut uri = path.replace("{id}", &encode(&call.id));
    if !call.query.is_empty() {
        let pairs: Vec<String> = call
            .query
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        uri = format!("{uri}?{}", pairs.join("&"));
    }
    let mut req = Request::builder().method(method).uri(&uri);
    if call.json_type {
        req = req.header("content-type", "application/json");
    }
    if let Some(ns) = &call.namespace {
        req = req.header("x-namespace", ns.as_str());
    }
    // A header value the HTTP layer itself would refuse never reaches us.
    let Ok(req) = req.body(Body::from(call.body.clone())) else {
        return;
    };
    APP.with(|cell| {
        let mut slot = cell.borrow_mut();
        let app = slot.get_or_insert_with(|| {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let router = mnemo_host::server::router(config(dir.path()), None).expect("the router");
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            App {
                router,
                rt,
                _dir: dir,
            }
        });
        let (status, body) = app.rt.block_on(async {
            let res = app.router.clone().oneshot(req).await.expect("infallible");
            let status = res.status();
            let body = res.into_body().collect().await.map(|b| b.to_bytes());
            (status, body)
        });
        let body = body.expect("the body is read");
        let text = String::from_utf8_lossy(&body);
        // A 503 is an answer (no LLM configured, a provider down, a
        // read-only database); any other 5xx is a bug the input found.
        assert!(
            !status.is_server_error() || status == StatusCode::SERVICE_UNAVAILABLE,
            "{method} {uri}: {status} {text}"
        );
        if status.is_client_error() && status != StatusCode::METHOD_NOT_ALLOWED
            || status.is_server_error()
        {
            let v: serde_json::Value = serde_json::from_slice(&body)
                .unwrap_or_else(|e| panic!("{method} {uri}: {status} not JSON ({e}): {text}"));
            assert!(
                v["error"]["code"].is_string(),
                "{method} {uri}: {status} {text}"
            );
        }
    });
}
