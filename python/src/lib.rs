//! `mnemo._native`: the engine `mnemo serve` runs, in the Python process.
//!
//! One class, `Engine`, opens the engines (the core component in wasmtime,
//! the SQLite file or Postgres, the embedding model, the scheduler's
//! threads) with the same settings as the CLI, and answers requests through
//! the server's own router, in memory, with no socket: the routes, their
//! validation and their typed errors are the HTTP API's, so the package's
//! in-process mode and its client mode cannot disagree. The GIL is released
//! while a request runs; the background work runs on the engine's threads.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use mnemo_host::server::Embedded;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tower::ServiceExt;

/// The largest answer read back (an export of a large store fits).
const ANSWER_LIMIT: usize = 1 << 31;
/// How long `close` waits for the engines to finish their work and close
/// the database (a consolidation cycle in flight finishes first).
const CLOSE_WAIT: Duration = Duration::from_secs(60);

/// An open engine. Closing it stops the engines once the requests in
/// flight have their answers, and closes the database.
#[pyclass(frozen, module = "mnemo._native")]
struct Engine {
    engines: Mutex<Option<Embedded>>,
    runtime: tokio::runtime::Runtime,
}

#[pymethods]
impl Engine {
    /// Opens the engines. `db` is the database (a SQLite file, or a
    /// `postgres://` URL); `config` a TOML file; `settings` pairs of a
    /// setting's name (as in docs/reference/configuration.md) and its text
    /// value, over the environment's `MNEMO_*` and the file.
    #[new]
    #[pyo3(signature = (db=None, config=None, settings=Vec::new()))]
    fn new(
        py: Python<'_>,
        db: Option<PathBuf>,
        config: Option<PathBuf>,
        settings: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let engines = py
            .detach(|| -> anyhow::Result<Embedded> {
                let settings =
                    mnemo_host::config::Settings::load_over(config.as_deref(), &settings)?;
                let config = mnemo_host::Config::from_settings(db, &settings)?;
                Embedded::open(config)
            })
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(Self {
            engines: Mutex::new(Some(engines)),
            runtime,
        })
    }

    /// One request of the HTTP API: `path` with its query, `headers` as
    /// pairs, `body` the JSON (or JSON lines) sent. Returns the status and
    /// the answer's bytes.
    #[pyo3(signature = (method, path, headers=Vec::new(), body=None))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> PyResult<(u16, Bound<'py, PyBytes>)> {
        let router = self
            .engines
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the engine failed"))?
            .as_ref()
            .map(Embedded::router)
            .ok_or_else(|| PyRuntimeError::new_err("the memory is closed"))?;
        let mut request = axum::http::Request::builder().method(method).uri(path);
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Body::from(body.unwrap_or_default()))
            .map_err(|e| PyValueError::new_err(format!("not a request: {e}")))?;
        let (status, bytes) = py
            .detach(|| {
                self.runtime.block_on(async move {
                    let answer = router.oneshot(request).await?;
                    let status = answer.status().as_u16();
                    let bytes = axum::body::to_bytes(answer.into_body(), ANSWER_LIMIT).await?;
                    anyhow::Ok((status, bytes))
                })
            })
            .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))?;
        Ok((status, PyBytes::new(py, &bytes)))
    }

    /// Stops the engines and closes the database (waiting for the work in
    /// flight); later requests are refused. False if the database was not
    /// closed within `CLOSE_WAIT`.
    fn close(&self, py: Python<'_>) -> bool {
        let engines = self.engines.lock().ok().and_then(|mut e| e.take());
        match engines {
            Some(engines) => py.detach(move || engines.close(CLOSE_WAIT)),
            None => true,
        }
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    Ok(())
}
