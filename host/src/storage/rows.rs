//! Row ↔ model mapping for the SQLite store.

use mnemo_core::model::*;
use rusqlite::Row;

pub const MEMORY_COLUMNS: &str = "id, namespace, content, kind, layer, importance, confidence, decay_rate, \
     access_count, repetition_count, created_at, modified_at, last_accessed, event_time, created_epoch, \
     valid_until, invalid_reason, session_id, source, source_role, tags, attributes, source_ids, \
     supersedes, superseded_by";

pub const EPISODE_COLUMNS: &str = "id, namespace, session_id, source_role, content, event_time, created_at, valid_until, invalid_reason, attributes";

fn parse_enum<T: std::str::FromStr>(idx: usize, s: String) -> rusqlite::Result<T> {
    s.parse().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Text,
            format!("bad value `{s}`").into(),
        )
    })
}

fn json_list(idx: usize, s: String) -> rusqlite::Result<Vec<String>> {
    serde_json::from_str(&s).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

pub fn to_json(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

pub fn memory(r: &Row<'_>) -> rusqlite::Result<Memory> {
    Ok(Memory {
        id: r.get(0)?,
        namespace: r.get(1)?,
        content: r.get(2)?,
        kind: parse_enum(3, r.get(3)?)?,
        layer: parse_enum(4, r.get(4)?)?,
        importance: r.get(5)?,
        confidence: r.get(6)?,
        decay_rate: r.get(7)?,
        access_count: r.get(8)?,
        repetition_count: r.get(9)?,
        created_at: r.get(10)?,
        modified_at: r.get(11)?,
        last_accessed: r.get(12)?,
        event_time: r.get(13)?,
        created_epoch: r.get::<_, i64>(14)? as u64,
        valid_until: r.get(15)?,
        invalid_reason: r.get(16)?,
        session_id: r.get(17)?,
        source: r.get(18)?,
        source_role: r.get(19)?,
        tags: json_list(20, r.get(20)?)?,
        attributes: r.get(21)?,
        source_ids: json_list(22, r.get(22)?)?,
        supersedes: r.get(23)?,
        superseded_by: r.get(24)?,
    })
}

pub fn episode(r: &Row<'_>) -> rusqlite::Result<Episode> {
    Ok(Episode {
        id: r.get(0)?,
        namespace: r.get(1)?,
        session_id: r.get(2)?,
        source_role: r.get(3)?,
        content: r.get(4)?,
        event_time: r.get(5)?,
        created_at: r.get(6)?,
        valid_until: r.get(7)?,
        invalid_reason: r.get(8)?,
        attributes: r.get(9)?,
    })
}

/// The columns [`session`] reads, in its order.
pub const SESSION_COLUMNS: &str =
    "namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns";

pub fn session(r: &Row<'_>) -> rusqlite::Result<Session> {
    Ok(Session {
        namespace: r.get(0)?,
        id: r.get(1)?,
        first_seen_at: r.get(2)?,
        last_seen_at: r.get(3)?,
        turn_count: r.get(4)?,
        consolidated_at: r.get(5)?,
        consolidated_turns: r.get(6)?,
    })
}

pub fn fact(r: &Row<'_>) -> rusqlite::Result<Fact> {
    Ok(Fact {
        id: r.get(0)?,
        namespace: r.get(1)?,
        subject: r.get(2)?,
        predicate: r.get(3)?,
        object: r.get(4)?,
        confidence: r.get(5)?,
        valid_from: r.get(6)?,
        valid_until: r.get(7)?,
        superseded_by: r.get(8)?,
        memory_id: r.get(9)?,
    })
}

pub fn entity(r: &Row<'_>) -> rusqlite::Result<Entity> {
    Ok(Entity {
        id: r.get(0)?,
        namespace: r.get(1)?,
        canonical_name: r.get(2)?,
        entity_type: parse_enum(3, r.get(3)?)?,
        aliases: json_list(4, r.get(4)?)?,
        mention_count: r.get(5)?,
        summary: r.get(6)?,
    })
}

/// Stable content fingerprint for exact-duplicate lookup.
pub fn content_hash(content: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(content.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Little-endian f32 blob, the layout sqlite-vec reads.
pub fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn blob_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
