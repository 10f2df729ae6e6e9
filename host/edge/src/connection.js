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

/// The triggers the schema's migrations create on the full-text tables;
/// replaced by the queue's (`queueTriggers`).
const SCHEMA_FTS_TRIGGERS = [
  'memories_fts_insert',
  'memories_fts_delete',
  'memories_fts_update',
  'episodes_fts_insert',
  'episodes_fts_delete',
  'episodes_fts_update',
];

/// The full-text tables, as the schema tokenizes them, without content.
const FTS_TABLES = `
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    content, context, content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2');
`;

/// Every change to a row's indexed text queues the row; a deleted row
/// leaves the index at once (by rowid).
const QUEUE_TRIGGERS = `
CREATE TABLE IF NOT EXISTS edge_index_pending (
    target TEXT NOT NULL, row INTEGER NOT NULL, PRIMARY KEY (target, row)) WITHOUT ROWID;
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('memories', new.rowid);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.rowid;
    DELETE FROM edge_index_pending WHERE target = 'memories' AND row = old.rowid;
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('memories', new.rowid);
END;
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('episodes', new.rowid);
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    DELETE FROM episodes_fts WHERE rowid = old.rowid;
    DELETE FROM edge_index_pending WHERE target = 'episodes' AND row = old.rowid;
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
    INSERT OR IGNORE INTO edge_index_pending VALUES ('episodes', new.rowid);
END;
`;

/// A turn's indexed context: the text of the turn before it in its session
/// (schema 0003's trigger, without the function call).
const EPISODE_CONTEXT = `COALESCE((
    SELECT p.content FROM episodes p
    WHERE p.namespace = e.namespace AND p.session_id = e.session_id
      AND (p.event_time, p.rowid) < (e.event_time, e.rowid)
    ORDER BY p.event_time DESC, p.rowid DESC LIMIT 1), '')`;

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
    this.migrated = false;
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
    const row = this.sql.exec("SELECT value FROM edge_meta WHERE key = 'schema_version'").toArray()[0];
    return row ? Number(row.value) : 0;
  }

  setUserVersion(n) {
    this.sql.exec(
      "INSERT INTO edge_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      Number(n),
    );
    this.migrated = true;
  }

  /// After migrations ran: the full-text tables rebuilt contentless, the
  /// queue's triggers in place, and every row queued to be indexed.
  afterMigrations() {
    if (!this.migrated) return;
    this.storage.transactionSync(() => {
      for (const t of SCHEMA_FTS_TRIGGERS) this.sql.exec(`DROP TRIGGER IF EXISTS ${t}`);
      this.sql.exec('DROP TABLE IF EXISTS memories_fts');
      this.sql.exec('DROP TABLE IF EXISTS episodes_fts');
      this.exec(FTS_TABLES);
      this.exec(QUEUE_TRIGGERS);
      this.sql.exec("INSERT OR IGNORE INTO edge_index_pending SELECT 'memories', rowid FROM memories");
      this.sql.exec("INSERT OR IGNORE INTO edge_index_pending SELECT 'episodes', rowid FROM episodes");
    });
    this.migrated = false;
  }

  /// Indexes the queued rows through the core's index text.
  syncIndex() {
    for (;;) {
      const queued = this.sql
        .exec('SELECT target, row FROM edge_index_pending LIMIT ?', INDEX_BATCH)
        .toArray();
      if (queued.length === 0) return;
      for (const { target, row } of queued) {
        if (target === 'memories') {
          this.sql.exec('DELETE FROM memories_fts WHERE rowid = ?', row);
          const m = this.sql.exec('SELECT content, tags FROM memories WHERE rowid = ?', row).toArray()[0];
          if (m) {
            this.sql.exec(
              'INSERT INTO memories_fts (rowid, content, tags) VALUES (?, ?, ?)',
              row,
              this.index(m.content),
              m.tags,
            );
          }
        } else {
          this.sql.exec('DELETE FROM episodes_fts WHERE rowid = ?', row);
          const e = this.sql
            .exec(`SELECT e.content AS content, ${EPISODE_CONTEXT} AS context FROM episodes e WHERE e.rowid = ?`, row)
            .toArray()[0];
          if (e) {
            this.sql.exec(
              'INSERT INTO episodes_fts (rowid, content, context) VALUES (?, ?, ?)',
              row,
              this.index(e.content),
              this.index(e.context),
            );
          }
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
