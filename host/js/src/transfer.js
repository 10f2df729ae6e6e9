// Export and import in the native `mnemo export` format (host/src/transfer.rs):
// JSON lines, a header naming the embedding model, then sessions, memories
// (the trash too), episodes, entities with their links, facts (superseded
// ones too) and earlier versions — records with snake_case fields, as serde
// writes them. A file either host writes, the other imports.

import * as rows from './storage/rows.js';
import { MnemoError } from './requests.js';

export const FORMAT = 'mnemo-export';
export const VERSION = 1;

/// Fields the core reads as 64-bit integers (BigInt in jco's records).
const BIG = new Set([
  'createdAt', 'modifiedAt', 'lastAccessed', 'eventTime', 'createdEpoch', 'validUntil', 'firstSeenAt',
  'lastSeenAt', 'consolidatedAt', 'validFrom', 'replacedAt',
]);

const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (k) => k.replace(/_([a-z])/g, (_m, c) => c.toUpperCase());

/// An f32 as serde writes it: the shortest decimal that reads back as the
/// same f32 (jco hands an f32 over as the double it widens to, which
/// prints as 0.10000000149011612 where serde prints 0.1). A double that is
/// no f32 is left alone.
export function f32(x) {
  if (!Number.isFinite(x) || Number.isInteger(x) || Math.fround(x) !== x) return x;
  for (let digits = 1; digits < 17; digits++) {
    const shortest = Number(x.toPrecision(digits));
    if (Math.fround(shortest) === x) return shortest;
  }
  return x;
}

/// A jco record as serde's JSON: snake_case keys, numbers (f32s as serde
/// writes them), null for none.
export function toWire(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return f32(v);
  if (v instanceof Float32Array) return Array.from(v, f32);
  if (Array.isArray(v)) return v.map(toWire);
  if (typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[snake(k)] = k === 'attributes' ? attributesOut(x) : toWire(x);
    return out;
  }
  return v;
}

/// Attributes are a JSON object kept as text: written as the object it
/// holds (`core/src/model/json_text.rs`), text that is not JSON as text.
function attributesOut(text) {
  if (typeof text !== 'string') return toWire(text);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/// serde's JSON as a jco record (the inverse of `toWire`).
export function fromWire(v, key = '') {
  if (v === null || v === undefined) return undefined;
  if (key === 'vector') return Float32Array.from(v);
  // Attributes are read from an object or from a string holding one.
  if (key === 'attributes' && typeof v !== 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return v.map((x) => fromWire(x));
  if (typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[camel(k)] = fromWire(x, camel(k));
    return out;
  }
  if (BIG.has(key)) {
    if (!Number.isInteger(v)) throw new MnemoError('invalid-input', `\`${snake(key)}\` must be a whole number`);
    return BigInt(v);
  }
  return v;
}

/// The `kind` of each line after the header (the engine's `import-item`).
const ITEM_KINDS = ['memory', 'episode', 'session', 'entity', 'fact', 'version'];

const line = (kind, body) => JSON.stringify({ kind, ...toWire(body) });
/// A line's vector, only when there is one (the native host leaves the
/// field out otherwise).
const withVector = (body, vector) => (vector === undefined ? body : { ...body, vector });

/// Every item of the store (or of one namespace) as JSON lines.
export function exportLines(storage, { namespace, vectors }) {
  const db = storage.db;
  const [clause, p] = namespace === undefined ? ['1', []] : ['namespace = ?1', [namespace]];
  const state = storage.vectorState;
  const withVectors = vectors && state.state === 'enabled';
  const out = [
    JSON.stringify({
      kind: FORMAT,
      version: VERSION,
      embedding_model: state.state === 'enabled' ? state.model : null,
      dimension: state.state === 'enabled' ? state.dimension : null,
    }),
  ];
  const vectorOf = (target, id) => (withVectors ? storage.getVectors(target, [id])[0]?.[1] : undefined);
  for (const r of db.all(`SELECT ${rows.SESSION_COLUMNS} FROM sessions WHERE ${clause} ORDER BY first_seen_at, id`, p)) {
    out.push(line('session', { session: rows.session(r) }));
  }
  for (const r of db.all(`SELECT ${rows.MEMORY_COLUMNS} FROM memories WHERE ${clause} ORDER BY rowid`, p)) {
    const memory = rows.memory(r);
    out.push(line('memory', withVector({ memory }, vectorOf('memories', memory.id))));
  }
  for (const r of db.all(`SELECT ${rows.EPISODE_COLUMNS} FROM episodes WHERE ${clause} ORDER BY rowid`, p)) {
    const episode = rows.episode(r);
    out.push(line('episode', withVector({ episode }, vectorOf('episodes', episode.id))));
  }
  for (const r of db.all(`SELECT ${rows.ENTITY_COLUMNS} FROM entities WHERE ${clause} ORDER BY rowid`, p)) {
    const entity = rows.entity(r);
    const ids = (sql) => db.all(sql, [entity.id]).map((x) => x[0]);
    out.push(
      line('entity', {
        entity,
        memories: ids('SELECT memory_id FROM memory_entities WHERE entity_id = ?1 ORDER BY memory_id'),
        episodes: ids('SELECT episode_id FROM episode_entities WHERE entity_id = ?1 ORDER BY episode_id'),
      }),
    );
  }
  for (const r of db.all(`SELECT ${rows.FACT_COLUMNS} FROM facts WHERE ${clause} ORDER BY rowid`, p)) {
    out.push(line('fact', { fact: rows.fact(r) }));
  }
  const versioned = db
    .all(`SELECT DISTINCT memory_id FROM memory_versions WHERE ${clause} ORDER BY memory_id`, p)
    .map((r) => r[0]);
  for (const id of versioned) {
    for (const version of storage.memoryVersions(id)) out.push(line('version', { version }));
  }
  return out;
}

/// Imports JSON lines through the core, all in one transaction: a line
/// that is not an export item, or that the core refuses, writes nothing.
export async function importLines(mnemo, input) {
  const lines = (typeof input === 'string' ? input.split('\n') : input).filter((l) => l.trim() !== '');
  const locked = mnemo.storage.vectorState.state === 'enabled' ? mnemo.storage.vectorState.model : undefined;
  let keepVectors = false;
  const items = [];
  lines.forEach((text, i) => {
    let v;
    try {
      v = JSON.parse(text);
    } catch {
      throw new MnemoError('invalid-input', `line ${i + 1}: not JSON`);
    }
    if (i === 0 && v.kind === FORMAT) {
      if (v.version > VERSION) throw new MnemoError('invalid-input', `line 1: not a ${FORMAT} version ≤ ${VERSION} file`);
      // Vectors from another model would poison search: re-embed those instead.
      keepVectors = Boolean(v.embedding_model) && v.embedding_model === locked;
      return;
    }
    if (!v || !ITEM_KINDS.includes(v.kind)) throw new MnemoError('invalid-input', `line ${i + 1}: not an export item`);
    const { kind, ...body } = v;
    const val = fromWire(body);
    if ((kind === 'memory' || kind === 'episode') && !keepVectors) val.vector = undefined;
    items.push({ n: i + 1, item: { tag: kind, val } });
  });
  return mnemo.operate((engine) => {
    const counts = { created: 0, exists: 0, merged: 0, lines: items.length };
    for (const { n, item } of items) {
      try {
        counts[engine.import(item)] += 1;
      } catch (e) {
        if (!e || !e.payload) throw e;
        throw new MnemoError(e.payload.tag, `line ${n}: ${e.payload.tag}: ${e.payload.val}`);
      }
    }
    return counts;
  });
}
