//! What an LLM plugin instance may touch: a store with a memory limit and
//! no WASI capabilities, and the one import `transport.send`, which
//! reaches only the base URL the host granted for the call in progress.
//! The host adds the API key there (the plugin never holds it), and owns
//! the timeout, the retries, the body cap and the concurrency limit
//! (`http.rs`). The deadline counts the plugin's own time: time spent in
//! `send`, waiting on the provider, is not the plugin's.

use std::time::{Duration, Instant};

use url::Url;
use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::Auth;
use crate::http::{HttpError, HttpPolicy, Inbound, Limiter, MAX_RESPONSE_BYTES, Outbound};
use crate::plugins::limits::TICK;

/// Why the host did not deliver an answer to the plugin.
pub enum Refusal {
    Denied(String),
    Timeout(String),
    Unreachable(String),
    TooLarge(u64),
    Invalid(String),
}

/// What one call may reach and with which key.
#[derive(Clone)]
pub struct Grant {
    pub base_url: String,
    pub key: Option<String>,
    pub policy: HttpPolicy,
    pub limiter: Limiter,
}

/// What happened on the wire during one call, for the ledger and errors.
#[derive(Debug, Default, Clone)]
pub struct Wire {
    /// A URL the plugin tried outside its grant (the call then fails).
    pub denied: Option<String>,
    /// The status of the last answer the plugin was handed.
    pub last_status: Option<u16>,
    /// The last failure the host saw instead of an answer.
    pub last_failure: Option<String>,
}

impl Wire {
    /// What went wrong on the wire, for the ledger: the transport failure,
    /// or the error status of the last answer (`http 500`).
    pub fn outcome(&self) -> Option<String> {
        self.last_failure.clone().or(self
            .last_status
            .filter(|s| *s >= 400)
            .map(|s| format!("http {s}")))
    }
}

pub struct LlmState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    /// The plugin's name and how its key is sent (from `info`), set with
    /// each call's grant.
    name: String,
    auth: Auth,
    grant: Option<Grant>,
    pub(super) wire: Wire,
    started: Instant,
    in_host: Duration,
    deadline: Duration,
}

impl WasiView for LlmState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Headers a plugin may not set: the host's own (the key, the framing).
const RESERVED: &[&str] = &[
    "authorization",
    "x-api-key",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
];

/// Whether `url` lies under `base`: the same scheme, host and port, no
/// credentials, and a path at or below the base path (after `..` is
/// resolved, which `Url` does while parsing).
pub fn within(url: &Url, base: &Url) -> bool {
    let base_path = base.path().trim_end_matches('/');
    let path = url.path();
    url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && url.username().is_empty()
        && url.password().is_none()
        && (path == base_path || path.starts_with(&format!("{base_path}/")))
}

impl LlmState {
    pub fn new(limits: StoreLimits, deadline: Duration) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits,
            name: String::new(),
            auth: Auth::None,
            grant: None,
            wire: Wire::default(),
            started: Instant::now(),
            in_host: Duration::ZERO,
            deadline,
        }
    }

    /// Opens a call of plugin `name`, whose key goes as `auth` says: what
    /// it may reach, and a fresh clock.
    pub fn begin(&mut self, name: &str, auth: &Auth, grant: Option<Grant>) {
        name.clone_into(&mut self.name);
        self.auth.clone_from(auth);
        self.grant = grant;
        self.wire = Wire::default();
        self.started = Instant::now();
        self.in_host = Duration::ZERO;
    }

    /// Closes a call: the key leaves the instance with the grant.
    pub fn end(&mut self) -> Wire {
        self.grant = None;
        std::mem::take(&mut self.wire)
    }

    /// Epoch callback: trap once the plugin's own time is over the
    /// deadline; otherwise wait for the rest of it.
    pub fn on_epoch(&self) -> wasmtime::Result<UpdateDeadline> {
        let own = self.started.elapsed().saturating_sub(self.in_host);
        if own >= self.deadline {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        let left = (self.deadline - own).as_millis() / TICK.as_millis();
        Ok(UpdateDeadline::Continue((left as u64).max(1)))
    }

    pub(super) fn send(
        &mut self,
        method: &str,
        url: &str,
        headers: Vec<(String, String)>,
        body: &[u8],
    ) -> Result<Inbound, Refusal> {
        let Some(grant) = self.grant.clone() else {
            return Err(Refusal::Invalid("no call is in progress".into()));
        };
        if method != "POST" && method != "GET" {
            return Err(Refusal::Invalid(format!("method {method} is not allowed")));
        }
        let allowed = match (Url::parse(url), Url::parse(&grant.base_url)) {
            (Ok(u), Ok(base)) => within(&u, &base),
            _ => false,
        };
        if !allowed {
            tracing::warn!(plugin = %self.name, %url, allowed = %grant.base_url, "LLM plugin request refused: outside its allow-list");
            self.wire.denied = Some(url.to_string());
            return Err(Refusal::Denied(format!(
                "{url} is outside this plugin's allow-list"
            )));
        }
        let mut headers: Vec<(String, String)> = headers
            .into_iter()
            .filter(|(k, _)| {
                let k = k.to_ascii_lowercase();
                !RESERVED.contains(&k.as_str())
                    && !matches!(&self.auth, Auth::Header(h) if h.eq_ignore_ascii_case(&k))
            })
            .collect();
        if let Some(key) = &grant.key {
            match &self.auth {
                Auth::Bearer => headers.push(("authorization".into(), format!("Bearer {key}"))),
                Auth::Header(h) => headers.push((h.clone(), key.clone())),
                Auth::None => {}
            }
        }
        let started = Instant::now();
        let out = crate::http::send(
            &Outbound {
                method,
                url,
                headers: &headers,
                body,
            },
            &grant.policy,
            &grant.limiter,
            MAX_RESPONSE_BYTES,
        );
        self.in_host += started.elapsed();
        match out {
            Ok(answer) => {
                self.wire.last_status = Some(answer.status);
                Ok(answer)
            }
            Err(e) => {
                self.wire.last_failure = Some(e.outcome());
                Err(match e {
                    HttpError::Timeout { message, .. } => Refusal::Timeout(message),
                    HttpError::TooLarge { cap, .. } => Refusal::TooLarge(cap as u64),
                    other => Refusal::Unreachable(other.to_string()),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ok(url: &str, base: &str) -> bool {
        within(&Url::parse(url).unwrap(), &Url::parse(base).unwrap())
    }

    #[test]
    fn the_allow_list_is_the_base_url_and_what_lies_under_it() {
        assert!(ok(
            "http://127.0.0.1:9/v1/chat/completions",
            "http://127.0.0.1:9/v1"
        ));
        assert!(ok("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/"));
        assert!(ok("https://api.x.com/v1/messages", "https://api.x.com"));
        assert!(ok("https://api.x.com:443/v1", "https://api.x.com/"));
        assert!(!ok("http://127.0.0.1:9/v1evil", "http://127.0.0.1:9/v1"));
        assert!(!ok(
            "http://127.0.0.1:9/v1/../admin",
            "http://127.0.0.1:9/v1"
        ));
        assert!(!ok("http://127.0.0.1:10/v1/x", "http://127.0.0.1:9/v1"));
        assert!(!ok("https://127.0.0.1:9/v1/x", "http://127.0.0.1:9/v1"));
        assert!(!ok("http://evil.com/v1/x", "http://127.0.0.1:9/v1"));
        assert!(!ok("http://u:p@127.0.0.1:9/v1/x", "http://127.0.0.1:9/v1"));
        assert!(!ok(
            "http://127.0.0.1:9@evil.com/v1/x",
            "http://127.0.0.1:9/v1"
        ));
    }
}
