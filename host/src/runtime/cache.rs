//! Compile once: the core component is precompiled with Cranelift and cached
//! on disk, keyed by the wasm's hash and the engine's compatibility hash, so
//! a different wasmtime or `Config` never loads a stale artifact. Only files
//! this host wrote (in its own cache folder, under that key) are loaded.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How a component came to be loaded, for the benchmark and the logs.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub from_cache: bool,
    pub duration: Duration,
    pub artifact: Option<PathBuf>,
}

pub fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
    engine
        .precompile_compatibility_hash()
        .hash(&mut engine_hash);
    let mut h = Sha256::new();
    h.update(wasm);
    h.update(engine_hash.finish().to_le_bytes());
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Loads `wasm` from the cache in `dir` (compiling and caching it on a miss
/// or a stale artifact). Without a directory it always compiles.
pub fn load(
    engine: &Engine,
    name: &str,
    wasm: &[u8],
    dir: Option<&Path>,
) -> anyhow::Result<(Component, LoadReport)> {
    let start = Instant::now();
    let Some(dir) = dir else {
        let c = Component::new(engine, wasm)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("compiling {name}"))?;
        return Ok((
            c,
            LoadReport {
                from_cache: false,
                duration: start.elapsed(),
                artifact: None,
            },
        ));
    };
    let path = dir.join(format!("{name}-{}.cwasm", cache_key(engine, wasm)));
    if path.exists() {
        // SAFETY: the file is in mnemo's own cache folder, named by the hash of
        // the wasm and of the engine configuration; this host wrote it.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(c) => {
                return Ok((
                    c,
                    LoadReport {
                        from_cache: true,
                        duration: start.elapsed(),
                        artifact: Some(path),
                    },
                ));
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "stale component cache; recompiling")
            }
        }
    }
    let c = Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("compiling {name}"))?;
    let bytes = c.serialize()?;
    if let Err(e) = write_atomic(dir, &path, &bytes) {
        tracing::warn!(path = %path.display(), error = %e, "could not write the component cache");
    }
    Ok((
        c,
        LoadReport {
            from_cache: false,
            duration: start.elapsed(),
            artifact: Some(path),
        },
    ))
}

fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
