//! Background embedding, in three steps that hold different things: find
//! the rows without a vector (a read), embed them (no database at all),
//! store the vectors (a short write that skips a row whose text changed or
//! that got a vector meanwhile). The server runs the first two on the
//! embedding worker and the last on the writer; the CLI runs all three in
//! a row (`Mnemo::backfill_vectors`).

use mnemo_core::model::Target;
use mnemo_core::ports::Storage as _;

use crate::Mnemo;
use crate::embedding::Embeddings;
use crate::storage::Locks;
use crate::storage::Store;

/// A row that has no vector yet, with the text to embed.
#[derive(Debug, Clone)]
pub struct Pending {
    pub target: Target,
    pub id: String,
    pub text: String,
}

/// Up to `batch` active rows without a vector: memories first, then episodes.
pub fn pending(store: &Store, batch: usize) -> anyhow::Result<Vec<Pending>> {
    let mut out = Vec::new();
    for target in [Target::Memories, Target::Episodes] {
        let left = batch.saturating_sub(out.len());
        if left == 0 {
            break;
        }
        for (id, text) in store.missing_vectors(target, left as u32)? {
            out.push(Pending { target, id, text });
        }
    }
    Ok(out)
}

/// The vectors of `rows`, in one provider call: every row's parts (the
/// core's `vector_parts`: the text, and a dialogue turn's sentences)
/// embedded together, then each row's combined (`combine_parts`).
pub fn embed(
    embeddings: &Embeddings,
    rows: Vec<Pending>,
) -> anyhow::Result<Vec<(Pending, Vec<f32>)>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<Vec<String>> = rows
        .iter()
        .map(|r| mnemo_core::vector_parts(r.target, &r.text))
        .collect();
    let texts: Vec<String> = parts.iter().flatten().cloned().collect();
    let mut vectors = embeddings.embed_batch(&texts)?.into_iter();
    anyhow::ensure!(
        vectors.len() == texts.len(),
        "asked for {} vectors, got {}",
        texts.len(),
        vectors.len()
    );
    Ok(rows
        .into_iter()
        .zip(&parts)
        .map(|(row, p)| {
            let own: Vec<Vec<f32>> = vectors.by_ref().take(p.len()).collect();
            (row, mnemo_core::combine_parts(&own))
        })
        .collect())
}

/// Stores the vectors whose row still has the same text and no vector, in
/// one transaction. Returns how many were stored.
pub fn store(m: &mut Mnemo, embedded: &[(Pending, Vec<f32>)]) -> anyhow::Result<usize> {
    // Each row is checked and locked (`vector_still_missing`), not its namespace.
    m.atomically(Locks::each([]), |m| -> anyhow::Result<usize> {
        let store = &m.ports().store;
        let mut stored = 0;
        for (row, vector) in embedded {
            if store.vector_still_missing(row.target, &row.id, &row.text)? {
                store.put_vector(row.target, &row.id, vector)?;
                stored += 1;
            }
        }
        Ok(stored)
    })
}
