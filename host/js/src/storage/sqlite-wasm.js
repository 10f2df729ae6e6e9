// The connection the JavaScript host runs on in Node and browsers: SQLite
// compiled to WASM (npm `@sqlite.org/sqlite-wasm`, FTS5 included), in
// memory, opened from a database image when there is one. `Db` (db.js)
// reads and writes through any object with these methods; the edge
// (host/edge) gives it a Durable Object's SQLite instead.

import sqlite3InitModule from '@sqlite.org/sqlite-wasm';

let sqlitePromise;
const sqlite = () => (sqlitePromise ??= sqlite3InitModule());

export class SqliteWasmConnection {
  /// A new in-memory database, from `bytes` (a SQLite file image) if given.
  static async open(bytes) {
    const sqlite3 = await sqlite();
    const db = new sqlite3.oo1.DB(':memory:', 'c');
    if (bytes) {
      const image = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
      const p = sqlite3.wasm.allocFromTypedArray(image);
      const rc = sqlite3.capi.sqlite3_deserialize(
        db.pointer,
        'main',
        p,
        image.byteLength,
        image.byteLength,
        sqlite3.capi.SQLITE_DESERIALIZE_FREEONCLOSE | sqlite3.capi.SQLITE_DESERIALIZE_RESIZEABLE,
      );
      db.checkRc(rc);
    }
    return new SqliteWasmConnection(sqlite3, db);
  }

  constructor(sqlite3, db) {
    this.sqlite3 = sqlite3;
    this.db = db;
    this.statements = new Map();
    db.exec('PRAGMA foreign_keys = OFF');
  }

  /// Registers `indexText` as the SQL function `mnemo_index_text` the
  /// schema's full-text triggers call.
  indexWith(indexText) {
    this.db.createFunction({
      name: 'mnemo_index_text',
      arity: 1,
      deterministic: true,
      xFunc: (_ctx, text) => (text === null ? null : indexText(String(text))),
    });
  }

  /// Statements of a migration, as written.
  migration(sql) {
    return sql;
  }

  userVersion() {
    return Number(this.db.selectValue('PRAGMA user_version'));
  }

  setUserVersion(n) {
    this.db.exec(`PRAGMA user_version = ${Number(n)}`);
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
  all(sql, params) {
    const st = this.stmt(sql);
    try {
      if (params.length) st.bind(params);
      const rows = [];
      while (st.step()) rows.push(st.get([]));
      return rows;
    } finally {
      st.reset(true);
    }
  }

  /// Runs one statement; returns the number of rows it changed.
  run(sql, params) {
    const st = this.stmt(sql);
    try {
      if (params.length) st.bind(params);
      st.step();
    } finally {
      st.reset(true);
    }
    return this.db.changes();
  }

  /// Runs statements without parameters.
  exec(sql) {
    this.db.exec(sql);
  }

  /// `f()` in one transaction: committed when it returns, rolled back
  /// when it throws (and the error rethrown).
  transaction(f) {
    this.db.exec('BEGIN IMMEDIATE');
    let out;
    try {
      out = f();
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
    this.db.exec('COMMIT');
    return out;
  }

  /// The database as a SQLite file image.
  image() {
    return this.sqlite3.capi.sqlite3_js_db_export(this.db);
  }

  close() {
    for (const st of this.statements.values()) st.finalize();
    this.statements.clear();
    this.db.close();
  }
}
