//! Outbound HTTP for providers (LLM and embedding endpoints): JSON POST with
//! a timeout, retry with exponential backoff on 429/5xx and transport
//! errors (honouring `Retry-After`), and a process-wide concurrency limit so
//! a burst of work cannot storm a provider.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[derive(Debug, Clone)]
pub struct HttpPolicy {
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    pub backoff: Duration,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_millis(250),
        }
    }
}

/// Longest single wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("HTTP {status} from {url}: {body}")]
    Status {
        status: u16,
        url: String,
        body: String,
    },
    #[error("cannot reach {url}: {message}")]
    Transport { url: String, message: String },
    #[error("the response from {url} is not JSON: {message}")]
    Malformed { url: String, message: String },
}

impl HttpError {
    /// A short label for the ledger's `outcome`.
    pub fn outcome(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("http {status}"),
            Self::Transport { .. } => "unreachable".into(),
            Self::Malformed { .. } => "malformed".into(),
        }
    }
}

/// Counting semaphore shared by every provider of the process, with the
/// one HTTP agent (and so the one connection pool) they all use.
#[derive(Clone)]
pub struct Limiter {
    inner: Arc<(Mutex<usize>, Condvar)>,
    max: usize,
    agent: ureq::Agent,
}

impl Limiter {
    pub fn new(max: usize) -> Self {
        Self {
            inner: Arc::new((Mutex::new(0), Condvar::new())),
            max: max.max(1),
            agent: ureq::AgentBuilder::new().build(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
        let (lock, cv) = &*self.inner;
        let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= self.max {
            n = cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Permit(self)
    }
}

struct Permit<'a>(&'a Limiter);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let (lock, cv) = &*self.0.inner;
        let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        cv.notify_one();
    }
}

/// POSTs `body` as JSON and returns the JSON answer.
pub fn post_json(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    policy: &HttpPolicy,
    limiter: &Limiter,
) -> Result<Value, HttpError> {
    let _permit = limiter.acquire();
    let mut attempt = 0;
    loop {
        let mut req = limiter
            .agent
            .post(url)
            .timeout(policy.timeout)
            .set("Content-Type", "application/json");
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let started = Instant::now();
        let (err, retry_after) = match req.send_json(body.clone()) {
            Ok(resp) => {
                return resp.into_json::<Value>().map_err(|e| HttpError::Malformed {
                    url: url.into(),
                    message: e.to_string(),
                });
            }
            Err(ureq::Error::Status(status, resp)) => {
                let retry_after = resp
                    .header("retry-after")
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let body: String = resp
                    .into_string()
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect();
                let retryable = status == 429 || status >= 500;
                let e = HttpError::Status {
                    status,
                    url: url.into(),
                    body,
                };
                if !retryable {
                    return Err(e);
                }
                (e, retry_after.map(Duration::from_secs))
            }
            Err(e) => (
                HttpError::Transport {
                    url: url.into(),
                    message: e.to_string(),
                },
                None,
            ),
        };
        if attempt >= policy.retries {
            return Err(err);
        }
        let wait = retry_after
            .unwrap_or(policy.backoff * 2u32.pow(attempt))
            .min(MAX_BACKOFF);
        tracing::warn!(%url, attempt, error = %err, waited_ms = started.elapsed().as_millis() as u64, "retrying");
        std::thread::sleep(wait);
        attempt += 1;
    }
}
