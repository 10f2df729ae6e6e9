// The SQLite connection behind the JavaScript host's storage: SQLite
// compiled to WASM (npm `@sqlite.org/sqlite-wasm`, FTS5 included), the
// native host's schema (`host/src/storage/schema/`, through gen/schema.js),
// the `mnemo_index_text` function the full-text triggers call, cached
// statements, and the error a storage failure crosses to the core as.

import { MIGRATIONS } from '../../gen/schema.js';

/// A failure an import answers the core with: jco passes an error's own
/// `payload` through as the import's `err` value — here the core's
/// `error` variant (`storage`, `not-found`, `embedding`, `llm`, …) or a
/// plugin's `http-error` (`denied`, `timeout`, …), by its `tag`.
export class HostFailure extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

/// `n` placeholders for an IN list.
export const inList = (n) => new Array(n).fill('?').join(',');

/// The table of a `target`.
export const table = (target) => (target === 'episodes' ? 'episodes' : 'memories');

/// A bound value: BigInt times become numbers (every mnemo time fits in
/// 2^53), `undefined` becomes NULL.
export function val(v) {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  return v;
}

/// An integer column as the s64/u64 the core reads (BigInt), NULL as none.
export const big = (v) => (v === null || v === undefined ? undefined : BigInt(v));
/// A nullable column as an option.
export const opt = (v) => (v === null || v === undefined ? undefined : v);

/// One SQLite database with the schema brought up to date.
export class Db {
  /// `sqlite3` is the initialised sqlite-wasm module; `db` an open `oo1.DB`.
  constructor(sqlite3, db, analysis) {
    this.sqlite3 = sqlite3;
    this.db = db;
    this.statements = new Map();
    db.createFunction({
      name: 'mnemo_index_text',
      arity: 1,
      deterministic: true,
      xFunc: (_ctx, text) => (text === null ? null : analysis.indexText(String(text))),
    });
    db.exec('PRAGMA foreign_keys = OFF');
    this.migrate();
  }

  /// Applies the migrations this database has not seen, one transaction
  /// each; refuses a database from a newer mnemo.
  migrate() {
    const version = Number(this.db.selectValue('PRAGMA user_version'));
    if (version > MIGRATIONS.length) {
      throw new Error(
        `the database has schema version ${version}, newer than this mnemo (${MIGRATIONS.length}); upgrade mnemo`,
      );
    }
    for (let i = version; i < MIGRATIONS.length; i++) {
      this.db.transaction((tx) => {
        tx.exec(MIGRATIONS[i]);
        tx.exec(`PRAGMA user_version = ${i + 1}`);
      });
    }
  }

  /// A cached prepared statement.
  stmt(sql) {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /// Every row of `sql` as an array of column values.
  all(sql, params = []) {
    return this.guard(() => {
      const st = this.stmt(sql);
      try {
        if (params.length) st.bind(params.map(val));
        const rows = [];
        while (st.step()) rows.push(st.get([]));
        return rows;
      } finally {
        st.reset(true);
      }
    });
  }

  /// The first row of `sql`, or undefined.
  one(sql, params = []) {
    return this.all(sql, params)[0];
  }

  /// Runs a write; returns the number of rows it changed.
  run(sql, params = []) {
    return this.guard(() => {
      const st = this.stmt(sql);
      try {
        if (params.length) st.bind(params.map(val));
        st.step();
      } finally {
        st.reset(true);
      }
      return this.db.changes();
    });
  }

  /// `f`, with a SQLite failure crossed as a storage error.
  guard(f) {
    try {
      return f();
    } catch (e) {
      if (e && e.payload) throw e;
      throw new HostFailure('storage', String(e && e.message ? e.message : e));
    }
  }

  getMeta(key) {
    return opt(this.one('SELECT value FROM metadata WHERE key = ?1', [key])?.[0]);
  }

  setMeta(key, value) {
    this.run(
      'INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      [key, value],
    );
  }

  close() {
    for (const st of this.statements.values()) st.finalize();
    this.statements.clear();
    this.db.close();
  }
}

/// SQL for a search filter over `alias` (a `memories` or `episodes` row):
/// the WHERE fragment and its parameters, as the native host's
/// `storage/filter.rs` builds it. Values are always bound.
export function whereClause(target, alias, f, state = 'active') {
  const parts = [
    state === 'active' ? `${alias}.valid_until IS NULL` : state === 'deleted' ? `${alias}.valid_until IS NOT NULL` : '1',
  ];
  const params = [];
  if (f.namespaces?.length) {
    parts.push(`${alias}.namespace IN (${inList(f.namespaces.length)})`);
    params.push(...f.namespaces);
  }
  if (f.since !== undefined) {
    parts.push(`${alias}.event_time >= ?`);
    params.push(f.since);
  }
  if (f.until !== undefined) {
    parts.push(`${alias}.event_time <= ?`);
    params.push(f.until);
  }
  if (f.sessionId !== undefined) {
    parts.push(`${alias}.session_id = ?`);
    params.push(f.sessionId);
  }
  if (f.excludeSession !== undefined) {
    parts.push(`(${alias}.session_id IS NULL OR ${alias}.session_id != ?)`);
    params.push(f.excludeSession);
  }
  if (target === 'memories') {
    if (f.layers?.length) {
      parts.push(`${alias}.layer IN (${inList(f.layers.length)})`);
      params.push(...f.layers);
    }
    if (f.kinds?.length) {
      parts.push(`${alias}.kind IN (${inList(f.kinds.length)})`);
      params.push(...f.kinds);
    }
    for (const tag of f.tags ?? []) {
      parts.push(`EXISTS (SELECT 1 FROM json_each(${alias}.tags) WHERE value = ?)`);
      params.push(tag);
    }
    if (f.source !== undefined) {
      parts.push(`${alias}.source = ?`);
      params.push(f.source);
    }
  }
  return { clause: parts.join(' AND '), params };
}
