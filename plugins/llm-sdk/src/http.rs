//! Outbound HTTP through the host (`mnemo:llm/transport`). In a plugin,
//! [`send`] is the host's import; natively (in a provider's unit tests) it
//! calls the closure installed by [`with_transport`].

use serde_json::Value;

use crate::Error;

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `POST` or `GET`.
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why the host did not deliver an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// The URL is outside this plugin's allow-list.
    Denied(String),
    Timeout(String),
    Unreachable(String),
    /// The response body was over the host's cap (bytes).
    TooLarge(u64),
    /// The request itself is unusable.
    Invalid(String),
}

impl From<HttpError> for Error {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Denied(m) => Error::InvalidRequest(format!("denied by the host: {m}")),
            HttpError::Timeout(m) => Error::Unavailable(format!("timed out: {m}")),
            HttpError::Unreachable(m) => Error::Unavailable(m),
            HttpError::TooLarge(n) => {
                Error::MalformedResponse(format!("the answer was over the host's cap of {n} bytes"))
            }
            HttpError::Invalid(m) => Error::InvalidRequest(m),
        }
    }
}

/// Sends one request through the host.
#[cfg(target_arch = "wasm32")]
pub fn send(request: Request) -> Result<Response, HttpError> {
    use crate::bindings::mnemo::llm::transport as t;
    let request = t::HttpRequest {
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: request.body,
    };
    match t::send(&request) {
        Ok(r) => Ok(Response {
            status: r.status,
            headers: r.headers,
            body: r.body,
        }),
        Err(t::HttpError::Denied(m)) => Err(HttpError::Denied(m)),
        Err(t::HttpError::Timeout(m)) => Err(HttpError::Timeout(m)),
        Err(t::HttpError::Unreachable(m)) => Err(HttpError::Unreachable(m)),
        Err(t::HttpError::TooLarge(n)) => Err(HttpError::TooLarge(n)),
        Err(t::HttpError::Invalid(m)) => Err(HttpError::Invalid(m)),
    }
}

#[cfg(not(target_arch = "wasm32"))]
type Transport = Box<dyn Fn(&Request) -> Result<Response, HttpError>>;

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static TRANSPORT: std::cell::RefCell<Option<Transport>> = const { std::cell::RefCell::new(None) };
}

/// Sends one request through the transport [`with_transport`] installed.
#[cfg(not(target_arch = "wasm32"))]
pub fn send(request: Request) -> Result<Response, HttpError> {
    TRANSPORT.with(|t| match &*t.borrow() {
        Some(f) => f(&request),
        None => Err(HttpError::Unreachable(
            "no host: install a transport with mnemo_llm_sdk::http::with_transport".into(),
        )),
    })
}

/// Runs `body` with `transport` standing in for the host (native tests).
#[cfg(not(target_arch = "wasm32"))]
pub fn with_transport<R>(
    transport: impl Fn(&Request) -> Result<Response, HttpError> + 'static,
    body: impl FnOnce() -> R,
) -> R {
    TRANSPORT.with(|t| *t.borrow_mut() = Some(Box::new(transport)));
    let out = body();
    TRANSPORT.with(|t| *t.borrow_mut() = None);
    out
}

/// `base` and `path` joined with exactly one `/`.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Longest piece of an error body quoted in an error.
const QUOTED: usize = 300;

/// The typed error for a non-2xx status: 429 is rate limiting (with
/// `Retry-After` in seconds, if sent), 5xx unavailable, other 4xx a refusal.
pub fn status_error(response: &Response) -> Error {
    let body: String = String::from_utf8_lossy(&response.body)
        .chars()
        .take(QUOTED)
        .collect();
    match response.status {
        429 => Error::RateLimited(
            response
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u32>().ok())
                .map(|s| s.saturating_mul(1000)),
        ),
        s if s >= 500 => Error::Unavailable(format!("HTTP {s}: {body}")),
        s => Error::InvalidRequest(format!("HTTP {s}: {body}")),
    }
}

/// POSTs `body` as JSON with `headers` and reads a JSON answer; a non-2xx
/// status or an unreadable answer is a typed error.
pub fn post_json(url: &str, headers: &[(&str, &str)], body: &Value) -> Result<Value, Error> {
    let mut all = vec![("content-type".to_string(), "application/json".to_string())];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let response = send(Request {
        method: "POST".into(),
        url: url.into(),
        headers: all,
        body: body.to_string().into_bytes(),
    })?;
    if !(200..300).contains(&response.status) {
        return Err(status_error(&response));
    }
    serde_json::from_slice(&response.body)
        .map_err(|e| Error::MalformedResponse(format!("the answer from {url} is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn statuses_become_typed_errors() {
        assert_eq!(
            status_error(&reply(429, &[("retry-after", "2")], "")),
            Error::RateLimited(Some(2000))
        );
        assert!(
            matches!(status_error(&reply(503, &[], "busy")), Error::Unavailable(m) if m.contains("busy"))
        );
        assert!(matches!(
            status_error(&reply(400, &[], "bad")),
            Error::InvalidRequest(_)
        ));
    }

    #[test]
    fn post_json_goes_through_the_installed_transport() {
        let out = with_transport(
            |r| {
                assert_eq!(r.url, "http://h/v1/x");
                assert!(r.headers.iter().any(|(k, _)| k == "content-type"));
                Ok(reply(200, &[], r#"{"ok":true}"#))
            },
            || post_json(&join("http://h/v1/", "/x"), &[], &serde_json::json!({})),
        );
        assert_eq!(out.unwrap()["ok"], true);
        let garbage = with_transport(
            |_| Ok(reply(200, &[], "not json")),
            || post_json("http://h", &[], &serde_json::json!({})),
        );
        assert!(matches!(garbage, Err(Error::MalformedResponse(_))));
        assert!(matches!(
            post_json("http://h", &[], &serde_json::json!({})),
            Err(Error::Unavailable(_))
        ));
    }
}
