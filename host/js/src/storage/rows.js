// Row ↔ record mapping for the JavaScript host's store: the columns the
// native host's `storage/rows.rs` reads, in its order, into the records jco
// hands the core (camelCase fields, BigInt times, `undefined` for none).

import { big, opt } from './db.js';
import { sha256Hex } from './sha256.js';

export const MEMORY_COLUMNS =
  'id, namespace, content, kind, layer, importance, confidence, decay_rate, ' +
  'access_count, repetition_count, created_at, modified_at, last_accessed, event_time, created_epoch, ' +
  'valid_until, invalid_reason, session_id, source, source_role, tags, attributes, source_ids, ' +
  'supersedes, superseded_by';

export const EPISODE_COLUMNS =
  'id, namespace, session_id, source_role, content, event_time, created_at, valid_until, invalid_reason, attributes';

export const SESSION_COLUMNS =
  'namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns';

export const FACT_COLUMNS =
  'id, namespace, subject, predicate, object, confidence, valid_from, valid_until, superseded_by, memory_id';

export const ENTITY_COLUMNS = 'id, namespace, canonical_name, entity_type, aliases, mention_count, summary';

export function memory(r) {
  return {
    id: r[0],
    namespace: r[1],
    content: r[2],
    kind: r[3],
    layer: r[4],
    importance: r[5],
    confidence: r[6],
    decayRate: r[7],
    accessCount: Number(r[8]),
    repetitionCount: Number(r[9]),
    createdAt: big(r[10]),
    modifiedAt: big(r[11]),
    lastAccessed: big(r[12]),
    eventTime: big(r[13]),
    createdEpoch: big(r[14]),
    validUntil: big(r[15]),
    invalidReason: opt(r[16]),
    sessionId: opt(r[17]),
    source: opt(r[18]),
    sourceRole: opt(r[19]),
    tags: JSON.parse(r[20]),
    attributes: r[21],
    sourceIds: JSON.parse(r[22]),
    supersedes: opt(r[23]),
    supersededBy: opt(r[24]),
  };
}

export function episode(r) {
  return {
    id: r[0],
    namespace: r[1],
    sessionId: r[2],
    sourceRole: r[3],
    content: r[4],
    eventTime: big(r[5]),
    createdAt: big(r[6]),
    validUntil: big(r[7]),
    invalidReason: opt(r[8]),
    attributes: r[9],
  };
}

export function session(r) {
  return {
    namespace: r[0],
    id: r[1],
    firstSeenAt: big(r[2]),
    lastSeenAt: big(r[3]),
    turnCount: Number(r[4]),
    consolidatedAt: big(r[5]),
    consolidatedTurns: Number(r[6]),
  };
}

export function fact(r) {
  return {
    id: r[0],
    namespace: r[1],
    subject: r[2],
    predicate: r[3],
    object: r[4],
    confidence: r[5],
    validFrom: big(r[6]),
    validUntil: big(r[7]),
    supersededBy: opt(r[8]),
    memoryId: opt(r[9]),
  };
}

export function entity(r) {
  return {
    id: r[0],
    namespace: r[1],
    canonicalName: r[2],
    entityType: r[3],
    aliases: JSON.parse(r[4]),
    mentionCount: Number(r[5]),
    summary: opt(r[6]),
  };
}

/// The exact-duplicate fingerprint the native host stores: the first 16
/// bytes of the SHA-256 of the UTF-8 text, in hex.
export function contentHash(content) {
  return sha256Hex(new TextEncoder().encode(content)).slice(0, 32);
}

const MEMORY_KEYS = [
  ['id', 'id'],
  ['namespace', 'namespace'],
  ['content', 'content'],
  ['kind', 'kind'],
  ['layer', 'layer'],
  ['importance', 'importance'],
  ['confidence', 'confidence'],
  ['decay_rate', 'decayRate'],
  ['access_count', 'accessCount'],
  ['repetition_count', 'repetitionCount'],
  ['created_at', 'createdAt'],
  ['modified_at', 'modifiedAt'],
  ['last_accessed', 'lastAccessed'],
  ['event_time', 'eventTime'],
  ['created_epoch', 'createdEpoch'],
  ['valid_until', 'validUntil'],
  ['invalid_reason', 'invalidReason'],
  ['session_id', 'sessionId'],
  ['source', 'source'],
  ['source_role', 'sourceRole'],
  ['tags', 'tags'],
  ['attributes', 'attributes'],
  ['source_ids', 'sourceIds'],
  ['supersedes', 'supersedes'],
  ['superseded_by', 'supersededBy'],
];
const BIG_KEYS = new Set(['createdAt', 'modifiedAt', 'lastAccessed', 'eventTime', 'createdEpoch', 'validUntil']);

/// A memory as the native host serialises it into `memory_versions`
/// (serde: snake_case fields, null for none), so either host reads the
/// other's history.
export function memoryJson(m) {
  const out = {};
  for (const [snake, camel] of MEMORY_KEYS) {
    const v = m[camel];
    out[snake] = v === undefined ? null : typeof v === 'bigint' ? Number(v) : v;
  }
  return JSON.stringify(out);
}

/// The inverse of [`memoryJson`].
export function memoryFromJson(text) {
  const o = JSON.parse(text);
  const m = {};
  for (const [snake, camel] of MEMORY_KEYS) {
    const v = o[snake];
    m[camel] = v === null || v === undefined ? undefined : BIG_KEYS.has(camel) ? BigInt(v) : v;
  }
  return m;
}
