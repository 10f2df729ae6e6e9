//! LLM rerank of a page of hits (seed 004 §4.5).

use serde_json::json;

use super::*;
use crate::error::CoreResult;
use crate::model::*;

/// The system text (`rerank.txt`).
pub const SYSTEM: &str = include_str!("rerank.txt");

/// `candidates` are the texts to order, numbered from 0.
pub fn request(query: &str, candidates: &[&str]) -> ChatRequest {
    let mut user = format!("Query: {query}\n\nCandidates:\n");
    for (i, c) in candidates.iter().enumerate() {
        user.push_str(&format!(
            "{i}. {}\n",
            c.chars().take(500).collect::<String>()
        ));
    }
    chat(
        LlmComponent::Rerank,
        SYSTEM,
        user,
        tool(
            "rank_candidates",
            "The candidate numbers, most relevant first.",
            json!({
                "type": "object",
                "properties": { "order": { "type": "array", "items": { "type": "integer" } } },
                "required": ["order"]
            }),
        ),
        256,
    )
}

/// A permutation of `0..n`: the model's order, then anything it left out in
/// the original order; out-of-range and repeated numbers are ignored.
pub fn parse(arguments: &str, n: usize) -> CoreResult<Vec<usize>> {
    let v = parse_json("rerank", arguments)?;
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for i in list("rerank", &v, "order")? {
        if let Some(i) = i.as_u64().map(|i| i as usize)
            && i < n
            && !order.contains(&i)
        {
            order.push(i);
        }
    }
    for i in 0..n {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    Ok(order)
}
