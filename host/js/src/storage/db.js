// The database behind the JavaScript host's storage: a connection (SQLite
// in WASM, `sqlite-wasm.js`; a Durable Object's SQLite at the edge,
// host/edge) with the native host's schema (`host/src/storage/schema/`,
// through gen/schema.js) brought up to date, the `mnemo_index_text`
// function the full-text index is fed through, and the error a storage
// failure crosses to the core as.
//
// A connection has: `all(sql, params)` (rows as arrays), `run(sql, params)`
// (rows changed), `exec(sql)` (statements without parameters),
// `transaction(f)` (commit when f returns, roll back when it throws),
// `userVersion()` / `setUserVersion(n)`, `indexWith(indexText)`,
// `migration(sql)` (a migration's statements as it runs them), `close()`,
// and, where the database is in memory, `image()`. One that cannot call
// JavaScript from SQL keeps its full-text index itself before each search
// (`syncIndex()`), and may adjust the schema after migrations ran
// (`afterMigrations()`).

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

/// `n` placeholders for an IN list (short lists: namespaces, layers, tags).
export const inList = (n) => new Array(n).fill('?').join(',');

/// A long IN list as one bound parameter: `x IN ${IN_JSON}` with
/// `JSON.stringify(values)` bound. A Durable Object binds at most 100
/// parameters per statement; one JSON array is one.
export const IN_JSON = '(SELECT value FROM json_each(?))';

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
  /// `connection`: see above; `analysis`: the core's text functions.
  constructor(connection, analysis) {
    this.connection = connection;
    connection.indexWith((text) => analysis.indexText(text));
    this.migrate();
    // The native host's full-text index replays `text_changes` (schema 13);
    // this host searches FTS5 itself, so the log its triggers fill is
    // emptied at each open instead of growing.
    this.connection.exec('DELETE FROM text_changes');
  }

  /// Applies the migrations this database has not seen, one transaction
  /// each; refuses a database from a newer mnemo.
  migrate() {
    const c = this.connection;
    const version = c.userVersion();
    if (version > MIGRATIONS.length) {
      throw new Error(
        `the database has schema version ${version}, newer than this mnemo (${MIGRATIONS.length}); upgrade mnemo`,
      );
    }
    for (let i = version; i < MIGRATIONS.length; i++) {
      c.transaction(() => {
        c.exec(c.migration(MIGRATIONS[i]));
        c.setUserVersion(i + 1);
      });
    }
    if (version < MIGRATIONS.length) c.afterMigrations?.();
  }

  /// Every row of `sql` as an array of column values.
  all(sql, params = []) {
    return this.guard(() => this.connection.all(sql, params.map(val)));
  }

  /// The first row of `sql`, or undefined.
  one(sql, params = []) {
    return this.all(sql, params)[0];
  }

  /// Runs a write; returns the number of rows it changed.
  run(sql, params = []) {
    return this.guard(() => this.connection.run(sql, params.map(val)));
  }

  /// Statements without parameters.
  exec(sql) {
    this.guard(() => this.connection.exec(sql));
  }

  /// `f()` in one transaction (rolled back if it throws).
  transaction(f) {
    return this.connection.transaction(f);
  }

  /// Brings the full-text index up to date, where the connection keeps it.
  syncIndex() {
    this.guard(() => this.connection.syncIndex?.());
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
    this.connection.close();
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
