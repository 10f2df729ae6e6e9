//! The web console at `/ui` (issue 15): a page for a person looking after
//! an agent's memory. Its assets are compiled into the binary (no CDN, works
//! offline) and carry no data: every view reads the API with the user's
//! bearer token, so the page itself is served without one, and the API's
//! auth guards what it shows. The content security policy allows scripts,
//! styles and requests from this origin only.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// `(path, content type, body)` of every asset.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "/ui",
        "text/html; charset=utf-8",
        include_str!("console/index.html"),
    ),
    ("/ui/app.js", JS, include_str!("console/app.js")),
    ("/ui/lib.js", JS, include_str!("console/lib.js")),
    ("/ui/parts.js", JS, include_str!("console/parts.js")),
    ("/ui/views.js", JS, include_str!("console/views.js")),
    ("/ui/more.js", JS, include_str!("console/more.js")),
    (
        "/ui/app.css",
        "text/css; charset=utf-8",
        include_str!("console/app.css"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Same origin for everything; no inline script; no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The console's routes, outside the API's auth layer.
pub(super) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for &(path, content_type, body) in ASSETS {
        let serve = get(move || async move { asset(content_type, body) });
        router = router.route(path, serve.clone());
        if path == "/ui" {
            router = router.route("/ui/", serve);
        }
    }
    router
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}
