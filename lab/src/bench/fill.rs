//! Filling a store for `mnemo-lab bench serve` through the HTTP API — the
//! first memories through `remember`, the rest through `POST /import` with
//! their vectors — and timing consolidation cycles on it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use super::Table;
use super::serve_args::ServeBenchArgs;

/// Memories per `POST /memories/batch`.
const FILL_BATCH: usize = 100;
/// Memories stored through `remember` (dedup, embedding, insert) and timed
/// as the ingest rate; a larger store gets the rest through `POST /import`
/// (vectors included), which is how a user moves a large store in.
const REMEMBERED: usize = 10_000;
/// Memories per `POST /import` body.
const IMPORT_CHUNK: usize = 20_000;

/// Two consolidation cycles (LLM off): the first caps the Buffer the fill
/// left (its evictions are what changed), the next finds nothing to do
/// (it reads its candidates and keeps the cached topic trees).
pub(super) fn cycle_rows(
    t: &mut Table,
    base: &str,
    label: &dyn Fn(&str) -> String,
) -> anyhow::Result<()> {
    for name in ["first cycle", "next cycle"] {
        let started = Instant::now();
        let report: Value = ureq::post(&format!("{base}/consolidate"))
            .timeout(Duration::from_secs(3600))
            .set("Content-Type", "application/json")
            .send_string("{}")?
            .into_json()?;
        let evicted = report["actions"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|x| x["action"] == "evict").count());
        t.row(
            &label(&format!("consolidation: {name}")),
            format!("{:.1}", started.elapsed().as_secs_f64()),
            "s",
            &format!(
                "POST /consolidate, LLM off: {} examined, {evicted} evicted, {} topics",
                report["examined"], report["topics"]
            ),
        );
    }
    Ok(())
}

/// Fills a fresh store: `REMEMBERED` memories through `remember`, the rest
/// through `POST /import`; prints both rates.
pub(super) fn ingest_rows(
    t: &mut Table,
    base: &str,
    args: &ServeBenchArgs,
    texts: &Arc<Vec<String>>,
    label: &dyn Fn(&str) -> String,
) -> anyhow::Result<()> {
    let n = texts.len();
    let remembered = n.min(REMEMBERED);
    let started = Instant::now();
    fill(
        base,
        &Arc::new(texts[..remembered].to_vec()),
        args.clients(),
    )?;
    let ingest = remembered as f64 / started.elapsed().as_secs_f64();
    t.row(
        &label("ingest (remember)"),
        format!("{ingest:.0}"),
        "mem/s",
        &format!(
            "the first {remembered}: POST /memories/batch of {FILL_BATCH}, {} clients; dedup + embed + insert",
            args.clients()
        ),
    );
    if n > remembered {
        let started = Instant::now();
        import(base, &texts[remembered..], remembered, args.dimension(), 1)?;
        let rate = (n - remembered) as f64 / started.elapsed().as_secs_f64();
        t.row(
            &label("ingest (import)"),
            format!("{rate:.0}"),
            "mem/s",
            &format!(
                "the other {}: POST /import with vectors, {IMPORT_CHUNK} per body",
                n - remembered
            ),
        );
    }
    Ok(())
}

/// The namespace of item `i` of a store spread over `namespaces`
/// (`tenant-0`…; one namespace is `default`).
pub(super) fn spread(i: usize, namespaces: usize) -> String {
    if namespaces <= 1 {
        "default".to_string()
    } else {
        format!("tenant-{}", i % namespaces)
    }
}

/// Each client posts its share of `texts` in batches.
pub(super) fn fill(base: &str, texts: &Arc<Vec<String>>, clients: usize) -> anyhow::Result<()> {
    fill_spread(base, texts, clients, 1)
}

/// [`fill`], batch `i` in namespace `spread(i, namespaces)`.
pub(super) fn fill_spread(
    base: &str,
    texts: &Arc<Vec<String>>,
    clients: usize,
    namespaces: usize,
) -> anyhow::Result<()> {
    let batches: Vec<(usize, usize)> = (0..texts.len())
        .step_by(FILL_BATCH)
        .map(|i| (i, (i + FILL_BATCH).min(texts.len())))
        .collect();
    let batches = Arc::new(batches);
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (base, texts, batches) = (base.to_string(), texts.clone(), batches.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                let agent = ureq::AgentBuilder::new().build();
                for &(a, b) in batches.iter().skip(c).step_by(clients) {
                    let ns = spread(a / FILL_BATCH, namespaces);
                    let body = json!({"memories": texts[a..b].iter().map(|t| json!({"content": t, "namespace": ns})).collect::<Vec<_>>()});
                    agent
                        .post(&format!("{base}/memories/batch"))
                        .set("Content-Type", "application/json")
                        .send_string(&body.to_string())
                        .with_context(|| format!("storing memories {a}..{b}"))?;
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join()
            .map_err(|_| anyhow::anyhow!("a fill client panicked"))??;
    }
    Ok(())
}

/// Stores `texts` through `POST /import`, as a dump with the stub's
/// vectors, memory `n` in namespace `spread(n, namespaces)`.
pub(super) fn import(
    base: &str,
    texts: &[String],
    first_id: usize,
    dimension: usize,
    namespaces: usize,
) -> anyhow::Result<()> {
    use mnemo_core::model::{ImportItem, Memory, MemoryLine};
    use mnemo_host::embedding::{EmbeddingProvider, HashEmbedder};
    let embedder = HashEmbedder::new(dimension);
    let now = mnemo_host::ledger::now_ms();
    for (c, chunk) in texts.chunks(IMPORT_CHUNK).enumerate() {
        let header = mnemo_host::transfer::Header {
            kind: mnemo_host::transfer::FORMAT.into(),
            version: mnemo_host::transfer::VERSION,
            // The HTTP embedder's id is `model@dimension`: a header naming
            // another model has its vectors dropped and re-embedded.
            embedding_model: Some(format!("bench-stub@{dimension}")),
            dimension: Some(dimension as u32),
        };
        let mut body = serde_json::to_string(&header)?;
        let vectors = embedder.embed(chunk)?;
        for (i, (text, vector)) in chunk.iter().zip(vectors).enumerate() {
            let n = first_id + c * IMPORT_CHUNK + i;
            // A large store is mostly Working: the Buffer is capped (200).
            let memory = Memory {
                layer: mnemo_core::model::Layer::Working,
                ..Memory::new(
                    format!("mem_bench{n:016x}"),
                    spread(n, namespaces),
                    text.clone(),
                    now,
                    0,
                )
            };
            body.push('\n');
            body.push_str(&serde_json::to_string(&ImportItem::Memory(MemoryLine {
                memory,
                vector: Some(vector),
            }))?);
        }
        let counts: Value = ureq::post(&format!("{base}/import"))
            .timeout(Duration::from_secs(3600))
            .send_string(&body)
            .with_context(|| format!("importing chunk {c}"))?
            .into_json()?;
        // Vectors the server did not keep would be embedded afterwards, in
        // the background: the rate would not be an import's.
        anyhow::ensure!(
            counts["vectors"].as_u64() == Some(chunk.len() as u64),
            "the server kept {} of {} vectors of chunk {c}: {counts}",
            counts["vectors"],
            chunk.len()
        );
    }
    Ok(())
}
