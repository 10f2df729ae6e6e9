// The storage import's search channels and vectors over SQLite: BM25 over
// FTS5 with the native host's weights, shortlist and common-term rule
// (`storage/search.rs`), the entity channel's SQL, and exact cosine search
// over Float32Arrays computed as sqlite-vec computes it (f32 sums, then
// `1 - dot / (sqrt(|a|²) · sqrt(|b|²))` in double, rounded to f32), so
// both hosts rank the same vectors the same.

import { HostFailure, IN_JSON, inList, table, whereClause } from './db.js';

/// Constants of the native host's `storage/sqlite.rs`, by the same names.
export const FTS_TERM_MAX_DOCS = 5000;
export const FTS_SHORTLIST = 4;
export const FTS_SHORTLIST_MIN = 200;
export const FTS_SCAN_CAP = 2 * FTS_TERM_MAX_DOCS;
export const VEC_MAX_K = 4096;
export const VEC_OVERFETCH = 3;

/// The FTS5 query for plain `terms`: each quoted, joined by OR, so user
/// text never reaches FTS5 as syntax.
export function ftsMatch(terms) {
  const quoted = terms
    .map((t) => t.replaceAll('\0', ' ').trim())
    .filter((t) => t.length > 0)
    .map((t) => `"${t.replaceAll('"', '""')}"`);
  return quoted.length ? quoted.join(' OR ') : undefined;
}

/// The terms of a BM25 query's two passes, from `[term, rows]` pairs and
/// the index's rows (the native host's `query_passes`, `storage/sqlite.rs`,
/// which says why): first the informative terms (those in at most
/// FTS_TERM_MAX_DOCS rows and fewer than half of them), when there are any;
/// then, if its terms differ and the first found too few, all but those
/// above FTS_TERM_MAX_DOCS.
export function queryPasses(counted, indexRows) {
  const keep = (common) =>
    counted.length < 2 || counted.every(([, n]) => common(n))
      ? counted.map(([t]) => t)
      : counted.filter(([, n]) => !common(n)).map(([t]) => t);
  const wide = keep((n) => n > FTS_TERM_MAX_DOCS);
  const first = keep((n) => n > FTS_TERM_MAX_DOCS || n * 2 >= indexRows);
  return [first, wide.length !== first.length ? wide : undefined];
}

/// SQLite's variable-length integer (big-endian groups of 7 bits, the high
/// bit set on all but the last; a ninth byte carries 8), as FTS5 writes
/// its records.
export function sqliteVarint(bytes) {
  let v = 0n;
  for (let i = 0; i < Math.min(bytes.length, 9); i++) {
    const b = BigInt(bytes[i]);
    if (i === 8) return Number((v << 8n) | b);
    v = (v << 7n) | (b & 0x7fn);
    if ((b & 0x80n) === 0n) return Number(v);
  }
  return Number(v);
}

/// sqlite-vec's `distance_cosine_float`: f32 accumulation (each product and
/// sum rounded to f32, as C does without fast-math), the rest in double,
/// the result rounded to f32.
export function cosineDistance(a, b) {
  const f = Math.fround;
  let dot = 0;
  let aMag = 0;
  let bMag = 0;
  for (let i = 0; i < a.length; i++) {
    dot = f(dot + f(a[i] * b[i]));
    aMag = f(aMag + f(a[i] * a[i]));
    bMag = f(bMag + f(b[i] * b[i]));
  }
  return f(1 - dot / (Math.sqrt(aMag) * Math.sqrt(bMag)));
}

const blob = (v) => new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
const vector = (b) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/// Search functions; `this.db` is a `Db`, `this.vectorState` the lock.
export const searchMethods = {
  ftsSearch(target, terms, f, limit, contextWeight) {
    const t = table(target);
    this.db.syncIndex();
    const [first, second] = this.queryPasses(t, terms);
    const hits = this.ftsRanked(target, first, f, limit, contextWeight);
    return second !== undefined && hits.length < limit
      ? this.ftsRanked(target, second, f, limit, contextWeight)
      : hits;
  },

  /// BM25 over the rows matching any of `terms`.
  ftsRanked(target, terms, f, limit, contextWeight) {
    const t = table(target);
    const query = ftsMatch(terms);
    if (query === undefined) return [];
    const weights = target === 'episodes' ? `1.0, ${Math.max(contextWeight, 0).toFixed(4)}` : '1.0, 1.0';
    const w = whereClause(target, 'x', f);
    const shortlist = Math.max(limit * FTS_SHORTLIST, FTS_SHORTLIST_MIN);
    const scored = (rows) => rows.map((r) => ({ id: r[0], score: Math.fround(r[1]) }));
    const hits = scored(
      this.db.all(
        `SELECT x.id, f.s FROM (SELECT rowid, s FROM (SELECT rowid, -bm25(${t}_fts, ${weights}) AS s ` +
          `FROM ${t}_fts WHERE ${t}_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2) ORDER BY s DESC LIMIT ?3) f ` +
          `JOIN ${t} x ON x.rowid = f.rowid WHERE ${w.clause} ORDER BY f.s DESC, x.id LIMIT ?`,
        [query, FTS_SCAN_CAP, shortlist, ...w.params, limit],
      ),
    );
    if (hits.length >= limit || !this.ftsHasMore(t, query, shortlist)) return hits;
    return scored(
      this.db.all(
        `SELECT x.id, -bm25(${t}_fts, ${weights}) AS s FROM ${t}_fts JOIN ${t} x ON x.rowid = ${t}_fts.rowid ` +
          `WHERE ${t}_fts MATCH ? AND ${w.clause} ORDER BY s DESC, x.id LIMIT ?`,
        [query, ...w.params, limit],
      ),
    );
  },

  ftsHasMore(t, query, n) {
    const found = this.db.one(`SELECT COUNT(*) FROM (SELECT 1 FROM ${t}_fts WHERE ${t}_fts MATCH ?1 LIMIT ?2)`, [
      query,
      n + 1,
    ])[0];
    return found > n;
  },

  /// The terms of the query's two passes (`queryPasses`): each term's rows
  /// counted up to FTS_TERM_MAX_DOCS + 1, the index's rows from FTS5's own
  /// record of them.
  queryPasses(t, terms) {
    if (terms.length < 2) return [terms, undefined];
    const counted = [];
    for (const term of terms) {
      const q = ftsMatch([term]);
      if (q === undefined) continue;
      const n = this.db.one(`SELECT COUNT(*) FROM (SELECT 1 FROM ${t}_fts WHERE ${t}_fts MATCH ?1 LIMIT ?2)`, [
        q,
        FTS_TERM_MAX_DOCS + 1,
      ])[0];
      counted.push([term, Number(n)]);
    }
    if (!counted.length) return [terms, undefined];
    return queryPasses(counted, this.ftsIndexRows(t));
  },

  /// The rows of `t`'s FTS5 index as its bm25() counts them: the first
  /// varint of the averages record (`%_data` row 1), so no scan.
  ftsIndexRows(t) {
    const row = this.db.one(`SELECT block FROM ${t}_fts_data WHERE id = 1`, []);
    return row ? sqliteVarint(row[0]) : 0;
  },

  entitySearch(target, names, f, limit) {
    if (!names.length) return [];
    const t = table(target);
    const [junction, itemCol] = target === 'episodes' ? ['episode_entities', 'episode_id'] : ['memory_entities', 'memory_id'];
    const lower = names.map((n) => n.toLowerCase());
    const w = whereClause(target, 'x', f);
    const nsFilter = f.namespaces.length ? `AND en.namespace IN (${inList(f.namespaces.length)})` : '';
    const wanted = JSON.stringify(lower);
    return this.db
      .all(
        'WITH ents AS (SELECT en.id FROM entities en ' +
          `WHERE (en.name_lower IN ${IN_JSON} OR en.id IN (SELECT entity_id FROM entity_aliases WHERE alias_lower IN ${IN_JSON})) ${nsFilter}) ` +
          `SELECT x.id, COUNT(*) AS c FROM ${junction} j JOIN ents ON j.entity_id = ents.id ` +
          `JOIN ${t} x ON x.id = j.${itemCol} WHERE ${w.clause} ` +
          'GROUP BY x.id ORDER BY c DESC, x.event_time DESC, x.id LIMIT ?',
        [wanted, wanted, ...f.namespaces, ...w.params, limit],
      )
      .map((r) => ({ id: r[0], score: Math.fround(Number(r[1])) }));
  },

  vectorsEnabled() {
    return this.vectorState.state === 'enabled';
  },

  /// The vectors of `target` held in memory (rowid → namespace and vector),
  /// read from the database once.
  vectorIndex(target) {
    let index = this.vectors.get(target);
    if (!index) {
      index = new Map();
      for (const [row, ns, b] of this.db.all('SELECT row, namespace, embedding FROM mnemo_vectors WHERE target = ?1', [
        target,
      ])) {
        index.set(Number(row), { ns, v: vector(b) });
      }
      this.vectors.set(target, index);
    }
    return index;
  },

  vectorRow(target, id) {
    const r = this.db.one(`SELECT rowid, namespace FROM ${table(target)} WHERE id = ?1`, [id]);
    return r ? [Number(r[0]), r[1]] : undefined;
  },

  /// `vectorSearch` (when `v` is given) and `ftsSearch`, one after the
  /// other: this host has one thread.
  nearSearch(target, v, terms, f, limit, contextWeight) {
    const near = v === undefined ? [] : this.vectorSearch(target, v, f, limit);
    return [near, this.ftsSearch(target, terms, f, limit, contextWeight)];
  },

  vectorSearch(target, v, f, limit) {
    if (!this.vectorsEnabled() || limit === 0) return [];
    const t = table(target);
    const k = Math.min(limit * VEC_OVERFETCH, VEC_MAX_K);
    const index = this.vectorIndex(target);
    const w = whereClause(target, 'x', f);
    const hits = [];
    for (const ns of f.namespaces.length ? f.namespaces : [undefined]) {
      const near = [];
      for (const [row, held] of index) {
        if (ns === undefined || held.ns === ns) near.push([row, cosineDistance(v, held.v)]);
      }
      near.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
      near.length = Math.min(near.length, k);
      if (!near.length) continue;
      const admitted = new Map(
        this.db
          // NOT INDEXED: rowid lookups, not a walk of the namespace's index.
          .all(`SELECT x.rowid, x.id FROM ${t} x NOT INDEXED WHERE x.rowid IN ${IN_JSON} AND ${w.clause}`, [
            JSON.stringify(near.map((n) => n[0])),
            ...w.params,
          ])
          .map((r) => [Number(r[0]), r[1]]),
      );
      for (const [row, distance] of near) {
        const id = admitted.get(row);
        if (id !== undefined) hits.push({ id, score: Math.fround(1 - distance) });
      }
    }
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return hits.slice(0, limit);
  },

  putVector(target, id, v) {
    if (!this.vectorsEnabled()) return;
    const { dimension } = this.vectorState;
    if (v.length !== dimension) {
      throw new HostFailure('embedding', `vector has ${v.length} dimensions; the database expects ${dimension}`);
    }
    const found = this.vectorRow(target, id);
    if (!found) throw new HostFailure('not-found', `no row \`${id}\` in ${table(target)}`);
    const [row, ns] = found;
    const copy = Float32Array.from(v);
    this.db.run(
      'INSERT INTO mnemo_vectors (target, row, namespace, embedding) VALUES (?1, ?2, ?3, ?4) ' +
        'ON CONFLICT(target, row) DO UPDATE SET namespace = excluded.namespace, embedding = excluded.embedding',
      [target, row, ns, blob(copy)],
    );
    this.db.run('DELETE FROM vector_pending WHERE target = ?1 AND row = ?2', [target, row]);
    this.vectorIndex(target).set(row, { ns, v: copy });
  },

  deleteVector(target, id) {
    if (!this.vectorsEnabled()) return;
    const found = this.vectorRow(target, id);
    if (!found) return;
    const [row] = found;
    this.db.run('DELETE FROM mnemo_vectors WHERE target = ?1 AND row = ?2', [target, row]);
    this.db.run(
      `INSERT OR IGNORE INTO vector_pending SELECT ?1, rowid FROM ${table(target)} WHERE rowid = ?2 AND valid_until IS NULL`,
      [target, row],
    );
    this.vectorIndex(target).delete(row);
  },

  getVectors(target, ids) {
    if (!this.vectorsEnabled()) return [];
    const index = this.vectorIndex(target);
    const out = [];
    for (const id of ids) {
      const found = this.vectorRow(target, id);
      const held = found && index.get(found[0]);
      if (held) out.push([id, held.v]);
    }
    return out;
  },

  /// Whether active row `id` still has text `text` and no vector (checked
  /// before a vector computed meanwhile is stored).
  stillMissing(target, id, text) {
    const t = table(target);
    const r = this.db.one(
      `SELECT x.content FROM ${t} x JOIN vector_pending p ON p.row = x.rowid AND p.target = ?2 ` +
        'WHERE x.id = ?1 AND x.valid_until IS NULL',
      [id, target],
    );
    return r !== undefined && r[0] === text;
  },

  /// Up to `limit` active rows of `target` waiting for a vector, with
  /// their text (the backfill's next batch).
  missingVectors(target, limit) {
    if (!this.vectorsEnabled()) return [];
    const t = table(target);
    return this.db
      .all(
        `SELECT x.id, x.content FROM vector_pending p JOIN ${t} x ON x.rowid = p.row ` +
          'WHERE p.target = ?2 AND x.valid_until IS NULL ORDER BY p.row LIMIT ?1',
        [limit, target],
      )
      .map((r) => ({ target, id: r[0], text: r[1] }));
  },
};
