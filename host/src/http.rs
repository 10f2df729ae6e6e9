//! Outbound HTTP for providers (LLM plugins and embedding endpoints): a
//! timeout per attempt, retries with exponential backoff and jitter on
//! 429/5xx and transport errors (honouring `Retry-After`), a cap on the
//! answer's size, and a process-wide concurrency limit so a burst of work
//! cannot storm a provider. LLM plugins reach the network only through
//! [`send`] (`plugins/llm/sandbox.rs` checks their allow-list first).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
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
/// Largest answer body read from a provider: a chat answer is kilobytes,
/// a batch of 64 embeddings of 3,072 floats as JSON about 4 MB.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;
/// How much of an error body is quoted in an error.
const QUOTED: usize = 300;

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
    #[error("no answer from {url} within the timeout: {message}")]
    Timeout { url: String, message: String },
    #[error("the answer from {url} is over the {cap} byte cap")]
    TooLarge { url: String, cap: usize },
    #[error("the response from {url} is not JSON: {message}")]
    Malformed { url: String, message: String },
}

impl HttpError {
    /// A short label for the ledger's `outcome`.
    pub fn outcome(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("http {status}"),
            Self::Transport { .. } => "unreachable".into(),
            Self::Timeout { .. } => "timeout".into(),
            Self::TooLarge { .. } => "too large".into(),
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

/// One request as a provider (or a plugin, through the host) builds it.
#[derive(Debug, Clone)]
pub struct Outbound<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// The final answer: a 2xx, a 4xx that is not retried, or the last 429/5xx
/// once the retries are spent.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Inbound {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The start of the body, for an error message.
    pub fn excerpt(&self) -> String {
        String::from_utf8_lossy(&self.body)
            .chars()
            .take(QUOTED)
            .collect()
    }
}

/// A wait of `base` stretched by a random 50–150 %, so that clients
/// refused at once do not come back at once.
fn jittered(base: Duration) -> Duration {
    let r = RandomState::new().build_hasher().finish() % 1000;
    base.mul_f64(0.5 + r as f64 / 1000.0)
}

fn read_capped(resp: ureq::Response, url: &str, cap: usize) -> Result<Inbound, HttpError> {
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .filter_map(|name| {
            let value = resp.header(&name)?.to_string();
            Some((name.to_ascii_lowercase(), value))
        })
        .collect();
    let mut body = Vec::new();
    resp.into_reader()
        .take(cap as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| HttpError::Transport {
            url: url.into(),
            message: e.to_string(),
        })?;
    if body.len() > cap {
        return Err(HttpError::TooLarge {
            url: url.into(),
            cap,
        });
    }
    Ok(Inbound {
        status,
        headers,
        body,
    })
}

/// Sends `req` under the concurrency limit, retrying 429, 5xx and
/// transport failures as `policy` says; returns the final answer, whatever
/// its status, or the last transport error.
pub fn send(
    req: &Outbound<'_>,
    policy: &HttpPolicy,
    limiter: &Limiter,
    cap: usize,
) -> Result<Inbound, HttpError> {
    let _permit = limiter.acquire();
    let mut attempt = 0;
    loop {
        let mut r = limiter
            .agent
            .request(req.method, req.url)
            .timeout(policy.timeout);
        for (k, v) in req.headers {
            r = r.set(k, v);
        }
        let started = Instant::now();
        let (outcome, retry_after) = match r.send_bytes(req.body) {
            Ok(resp) => return read_capped(resp, req.url, cap),
            Err(ureq::Error::Status(status, resp)) => {
                let retry_after = resp
                    .header("retry-after")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let answer = read_capped(resp, req.url, cap)?;
                if status != 429 && status < 500 {
                    return Ok(answer);
                }
                (Ok(answer), retry_after)
            }
            Err(e) => {
                let message = e.to_string();
                let url = req.url.to_string();
                let err = if message.contains("timed out") {
                    HttpError::Timeout { url, message }
                } else {
                    HttpError::Transport { url, message }
                };
                (Err(err), None)
            }
        };
        if attempt >= policy.retries {
            return outcome;
        }
        let wait = retry_after
            .unwrap_or_else(|| jittered(policy.backoff * 2u32.pow(attempt)))
            .min(MAX_BACKOFF);
        let why = match &outcome {
            Ok(answer) => format!("HTTP {}", answer.status),
            Err(e) => e.to_string(),
        };
        tracing::warn!(url = %req.url, attempt, error = %why, waited_ms = started.elapsed().as_millis() as u64, "retrying");
        std::thread::sleep(wait);
        attempt += 1;
    }
}

/// POSTs `body` as JSON and returns the JSON answer; a non-2xx status
/// after the retries is an error.
pub fn post_json(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    policy: &HttpPolicy,
    limiter: &Limiter,
) -> Result<Value, HttpError> {
    let mut all = vec![("content-type".to_string(), "application/json".to_string())];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let bytes = body.to_string().into_bytes();
    let req = Outbound {
        method: "POST",
        url,
        headers: &all,
        body: &bytes,
    };
    let answer = send(&req, policy, limiter, MAX_RESPONSE_BYTES)?;
    if !answer.is_success() {
        return Err(HttpError::Status {
            status: answer.status,
            url: url.into(),
            body: answer.excerpt(),
        });
    }
    serde_json::from_slice(&answer.body).map_err(|e| HttpError::Malformed {
        url: url.into(),
        message: e.to_string(),
    })
}
