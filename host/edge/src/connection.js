// The JavaScript host's database connection (host/js/src/storage/db.js)
// over a Durable Object's SQLite (`ctx.storage.sql`): the shared schema,
// FTS5 and its BM25 as the other hosts run them. Three things differ from
// SQLite in WASM, because the runtime refuses them:
//
// - Transactions are `ctx.storage.transactionSync` (BEGIN and SAVEPOINT
//   are refused): a round commits when its function returns and rolls
//   back when it throws, as `Db` asks.
// - `PRAGMA user_version` is refused: the schema version is a row of
//   `edge_meta`.
// - SQL cannot call JavaScript (no `createFunction`), and the schema's
//   full-text triggers call `mnemo_index_text` (the core's segmentation
//   of CJK runs, `text::index_text`). Here the triggers queue the changed
//   rows in `edge_index_pending` instead, and `syncIndex` — before every
//   full-text search and at the end of every round — indexes them through
//   the core's function, so a search sees exactly what the other hosts'
//   triggers would have indexed. The full-text tables are contentless
//   (`contentless_delete`): a row leaves the index by its rowid, without
//   the text it was indexed with.

/// The full-text index of each table: its FTS5 columns, the columns whose
/// change re-indexes a row (and the condition, as the schema's trigger
/// has it), and the row's indexed values. For a turn, the second column
/// is the text of the turn before it in its session (schema 0003's
/// trigger, without the function call).
const INDEXED = {
  memories: {
    columns: ['content', 'tags'],
    changedOf: 'content, tags',
    when: 'WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags',
    values: 'x.content, x.tags',
    indexed: [true, false],
  },
  episodes: {
    columns: ['content', 'context'],
    changedOf: 'content',
    when: '',
    values: `x.content, COALESCE((
        SELECT p.content FROM episodes p
        WHERE p.namespace = x.namespace AND p.session_id = x.session_id
          AND (p.event_time, p.rowid) < (x.event_time, x.rowid)
        ORDER BY p.event_time DESC, p.rowid DESC LIMIT 1), '')`,
    indexed: [true, true],
  },
};

/// The table's index, contentless (a row leaves it by its rowid), with the
/// schema's tokenizer, and the triggers that queue a changed row (they
/// replace the schema's triggers of the same names).
function indexSchema(t, { columns, changedOf, when }) {
  return `
DROP TRIGGER IF EXISTS ${t}_fts_insert;
DROP TRIGGER IF EXISTS ${t}_fts_delete;
DROP TRIGGER IF EXISTS ${t}_fts_update;
DROP TABLE IF EXISTS ${t}_fts;
CREATE VIRTUAL TABLE ${t}_fts USING fts5(
    ${columns.join(', ')}, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER ${t}_fts_insert AFTER INSERT ON ${t} BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('${t}', new.rowid);
END;
CREATE TRIGGER ${t}_fts_delete AFTER DELETE ON ${t} BEGIN
    DELETE FROM ${t}_fts WHERE rowid = old.rowid;
    DELETE FROM edge_index_pending WHERE target = '${t}' AND row = old.rowid;
END;
CREATE TRIGGER ${t}_fts_update AFTER UPDATE OF ${changedOf} ON ${t} ${when} BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('${t}', new.rowid);
END;
INSERT OR IGNORE INTO edge_index_pending SELECT '${t}', rowid FROM ${t};
`;
}

/// Queued rows indexed per statement batch.
const INDEX_BATCH = 200;

/// A bound value as the runtime takes it: blobs as ArrayBuffer.
function bind(v) {
  if (v instanceof Uint8Array) return v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
  return v;
}

/// A column as sqlite-wasm gives it: blobs as Uint8Array.
function column(v) {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : v;
}

export class DurableConnection {
  /// `storage`: the Durable Object's `ctx.storage` (SQLite-backed).
  constructor(storage) {
    this.storage = storage;
    this.sql = storage.sql;
    this.sql.exec('PRAGMA foreign_keys = OFF');
    this.sql.exec('CREATE TABLE IF NOT EXISTS edge_meta (key TEXT PRIMARY KEY, value)');
  }

  /// The core's index text (`mnemo_index_text` elsewhere), for `syncIndex`.
  indexWith(indexText) {
    this.indexText = indexText;
  }

  /// A migration without the index function: its triggers and backfills
  /// are replaced once the migrations have run (`afterMigrations`).
  migration(sql) {
    return sql.replaceAll('mnemo_index_text(', '(');
  }

  userVersion() {
    return Number(getMeta(this.sql, 'schema_version') ?? 0);
  }

  setUserVersion(n) {
    setMeta(this.sql, 'schema_version', Number(n));
  }

  /// After migrations ran: each full-text table rebuilt contentless, the
  /// queue's triggers in place, and every row queued to be indexed.
  afterMigrations() {
    this.storage.transactionSync(() => {
      this.exec(
        'CREATE TABLE IF NOT EXISTS edge_index_pending (' +
          'target TEXT NOT NULL, row INTEGER NOT NULL, PRIMARY KEY (target, row)) WITHOUT ROWID',
      );
      for (const [t, spec] of Object.entries(INDEXED)) this.exec(indexSchema(t, spec));
    });
  }

  /// Indexes the queued rows through the core's index text.
  syncIndex() {
    for (;;) {
      const queued = this.sql.exec('SELECT target, row FROM edge_index_pending LIMIT ?', INDEX_BATCH).toArray();
      if (queued.length === 0) return;
      for (const { target, row } of queued) {
        const { columns, values, indexed } = INDEXED[target];
        this.sql.exec(`DELETE FROM ${target}_fts WHERE rowid = ?`, row);
        const found = this.sql.exec(`SELECT ${values} FROM ${target} x WHERE x.rowid = ?`, row).raw().next().value;
        if (found) {
          const texts = found.map((v, i) => (indexed[i] ? this.index(v) : v));
          this.sql.exec(
            `INSERT INTO ${target}_fts (rowid, ${columns.join(', ')}) VALUES (?, ${columns.map(() => '?').join(', ')})`,
            row,
            ...texts,
          );
        }
        this.sql.exec('DELETE FROM edge_index_pending WHERE target = ? AND row = ?', target, row);
      }
    }
  }

  index(text) {
    return text === null || text === undefined ? null : this.indexText(String(text));
  }

  all(sql, params) {
    return Array.from(this.sql.exec(sql, ...params.map(bind)).raw(), (row) => row.map(column));
  }

  run(sql, params) {
    const cursor = this.sql.exec(sql, ...params.map(bind));
    for (const _ of cursor.raw());
    return cursor.rowsWritten;
  }

  exec(sql) {
    const cursor = this.sql.exec(sql);
    for (const _ of cursor.raw());
  }

  transaction(f) {
    return this.storage.transactionSync(f);
  }

  close() {}
}

/// A value of `edge_meta` (the object's own settings beside the store).
export function getMeta(sql, key) {
  return sql.exec('SELECT value FROM edge_meta WHERE key = ?', key).toArray()[0]?.value;
}

export function setMeta(sql, key, value) {
  sql.exec(
    'INSERT INTO edge_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    key,
    value,
  );
}
