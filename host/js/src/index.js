// mnemo in JavaScript: the same core component the native host runs
// (core.wasm, transpiled by jco), with its five imports answered here —
// storage over SQLite compiled to WASM, embeddings (the hash embedder, or a
// provider through an LLM plugin), the LLM through the same plugins, NER
// through the same plugins, the platform's clock. Every engine call runs in
// one SQLite transaction: it lands whole or not at all.

import sqlite3InitModule from '@sqlite.org/sqlite-wasm';

import { instantiate } from './load.js';
import { persistence } from './persist.js';
import { HashEmbedder, LlmPlugin, NerPlugins, RemoteEmbedder, DEFAULT_DIMENSION } from './providers.js';
import { Storage } from './storage/index.js';
import { syncHttp } from './sync-http.js';
import { exportLines, importLines } from './transfer.js';
import * as requests from './requests.js';

export { MnemoError } from './requests.js';
export { drivenClock, wallClock } from './clock.js';
import { MnemoError } from './requests.js';
import { wallClock } from './clock.js';

/// Pending rows embedded per provider call by the background backfill.
export const BACKFILL_BATCH = 64;

let sqlitePromise;
const sqlite = () => (sqlitePromise ??= sqlite3InitModule());

/// The core's analysis functions, in an instance of their own (the FTS
/// triggers call them while the engine instance is inside a call).
async function analysisInstance() {
  const refuse = (name) => () => {
    throw new Error(`the analysis instance has no ${name}`);
  };
  const stub = (names) => Object.fromEntries(names.map((n) => [n, refuse(n)]));
  const core = await instantiate('core', {
    'mnemo:core/storage': new Proxy({}, { get: (_t, n) => refuse(String(n)) }),
    'mnemo:core/embedding': stub(['info', 'embed']),
    'mnemo:core/llm': stub(['level', 'complete']),
    'mnemo:core/ner': stub(['extract', 'accurateAvailable']),
    'mnemo:core/clock': stub(['now', 'random']),
  });
  return core.analysis;
}

export class Mnemo {
  /// Opens a memory. Options (all optional):
  /// - `file` (Node): a SQLite file to open and keep saved to;
  /// - `opfs` (browser): a file name in the origin-private file system to
  ///   open and keep saved to;
  /// - `bytes`: a database image to start from (what `save()` returned);
  /// - `embedder`: `'hash'` (default; `{ hash: dimension }` for another
  ///   size) or `{ provider: 'openai'|'ollama', baseUrl, apiKey, model, dimension }`;
  /// - `llm`: `{ provider: 'openai'|'anthropic'|'ollama', baseUrl, apiKey, model, level }`
  ///   (none: the LLM steps are off, as in the native host);
  /// - `ner`: false to run without the NER plugins;
  /// - `clock`: `{ now(): bigint, random(): bigint }` (default: the wall clock).
  static async open(options = {}) {
    const sqlite3 = await sqlite();
    const m = new Mnemo();
    m.options = options;
    m.analysis = await analysisInstance();
    m.persist = await persistence(options);
    m.handle = openHandle(sqlite3, { ...options, bytes: m.persist?.bytes ?? options.bytes });
    m.storage = new Storage(sqlite3, m.handle, m.analysis);
    m.clock = options.clock ?? wallClock();
    const send = options.llm || typeof options.embedder === 'object' ? await syncHttp() : undefined;
    m.llm = options.llm ? await LlmPlugin.load(`llm-${options.llm.provider ?? 'openai'}`, options.llm, send) : undefined;
    m.embedder = await embedderFor(options.embedder, m.analysis, send);
    const info = m.embedder.info();
    m.storage.lockEmbedder(info.model, info.dimension);
    m.ner = options.ner === false ? undefined : await NerPlugins.load(['ner-regex', 'ner-names'], m.analysis);
    await m.instantiateCore();
    m.backfilling = Promise.resolve(0);
    m.saving = Promise.resolve();
    return m;
  }

  async instantiateCore() {
    const level = this.llm ? (this.options.llm.level ?? 'auto') : 'off';
    const core = await instantiate('core', {
      'mnemo:core/storage': this.storage.imports(),
      'mnemo:core/embedding': {
        info: () => this.embedder.info(),
        embed: (texts) => this.embedder.embed(texts),
      },
      'mnemo:core/llm': {
        level: () => level,
        complete: (req) => {
          if (!this.llm) throw { payload: { tag: 'unavailable', val: 'no LLM is configured' } };
          return this.llm.complete(req);
        },
      },
      'mnemo:core/ner': {
        extract: (text, strategy) => (this.ner ? this.ner.extract(text, strategy) : { mentions: [], failures: [] }),
        accurateAvailable: () => (this.ner ? this.ner.accurateAvailable() : false),
      },
      'mnemo:core/clock': { now: () => this.clock.now(), random: () => this.clock.random() },
    });
    this.engine = core.engine;
  }

  /// Runs engine function `name` in one transaction. A typed error rolls
  /// it back and is thrown as a `MnemoError`; a trap (a bug or a limit)
  /// rolls back too and replaces the instance, so the next call starts clean.
  call(name, ...args) {
    if (!this.engine) throw new MnemoError('unavailable', 'this memory is closed');
    this.handle.exec('BEGIN IMMEDIATE');
    try {
      const out = this.engine[name](...args);
      this.handle.exec('COMMIT');
      return out;
    } catch (e) {
      this.handle.exec('ROLLBACK');
      this.storage.vectors.clear();
      if (e && e.payload && typeof e.payload.tag === 'string') throw new MnemoError(e.payload.tag, e.payload.val);
      this.engineLost = this.instantiateCore();
      throw new MnemoError('trap', String(e && e.message ? e.message : e));
    }
  }

  async run(name, ...args) {
    if (this.engineLost) {
      await this.engineLost;
      this.engineLost = undefined;
    }
    const out = this.call(name, ...args);
    this.scheduleBackfill();
    this.scheduleSave();
    return out;
  }

  /// Writes the database image to its file (or OPFS) once the pending
  /// embeddings are stored; writes that come meanwhile share one save.
  scheduleSave() {
    if (!this.persist || this.saveQueued) return;
    this.saveQueued = true;
    this.saving = this.saving.then(async () => {
      await this.backfilling;
      this.saveQueued = false;
      await this.persist.write(this.image());
    });
  }

  async remember(req) {
    return this.run('remember', requests.remember(req));
  }

  async ingest(turn) {
    return this.run('ingest', requests.turn(turn));
  }

  async recall(req) {
    return this.run('recall', requests.recall(req));
  }

  async get(id, namespace = 'default') {
    return this.run('get', namespace, id);
  }

  async list(req = {}) {
    return this.run('list', requests.list(req));
  }

  async update(id, patch, namespace = 'default') {
    return this.run('update', namespace, id, requests.patch(patch));
  }

  async delete(id, reason = 'deleted', namespace = 'default') {
    return this.run('delete', namespace, id, reason);
  }

  async restore(id, namespace = 'default') {
    return this.run('restore', namespace, id);
  }

  async history(id, namespace = 'default') {
    return this.run('history', namespace, id);
  }

  async context(prompt, { namespace = 'default', sessionId, limit = 5 } = {}) {
    return this.run('context', namespace, prompt, sessionId, limit);
  }

  async consolidate(req = {}) {
    return this.run('consolidate', requests.consolidate(req));
  }

  async resume({ namespace = 'default', hours = 48, context } = {}) {
    return this.run('resume', { namespace, hours, context });
  }

  async addFact(fact) {
    return this.run('addFact', requests.fact(fact));
  }

  async queryFacts(q = {}) {
    return this.run('queryFacts', requests.factQuery(q));
  }

  async entity(name, { namespace = 'default', limit = 10 } = {}) {
    return this.run('entityInfo', namespace, name, limit);
  }

  async stats(namespace) {
    return this.run('stats', namespace);
  }

  /// Every item as JSON lines in the native `mnemo export` format (the
  /// header first); `vectors` includes the embeddings.
  async export({ namespace, vectors = false } = {}) {
    await this.flush();
    return exportLines(this.storage, { namespace, vectors });
  }

  /// Imports JSON lines of `mnemo export` (either host's) in one
  /// transaction: a bad line writes nothing. Returns the outcome counts.
  async import(lines) {
    const counts = importLines(this, lines);
    this.scheduleBackfill();
    this.scheduleSave();
    return counts;
  }

  /// Embeds what waits for a vector, a batch at a time, after the call
  /// that wrote it has returned (never while a request waits).
  scheduleBackfill() {
    if (this.backfillQueued) return;
    this.backfillQueued = true;
    this.backfilling = this.backfilling.then(
      () =>
        new Promise((resolve) =>
          setTimeout(() => {
            this.backfillQueued = false;
            resolve(this.backfillAll());
          }, 0),
        ),
    );
  }

  /// Embeds every row without a vector; returns how many were embedded.
  backfillAll() {
    let done = 0;
    while (this.engine) {
      const rows = [
        ...this.storage.missingVectors('memories', BACKFILL_BATCH),
        ...this.storage.missingVectors('episodes', BACKFILL_BATCH),
      ].slice(0, BACKFILL_BATCH);
      if (!rows.length) break;
      let vectors;
      try {
        vectors = this.embedder.embed(rows.map((r) => r.text));
      } catch {
        // The provider failed: the rows stay pending for the next write.
        break;
      }
      this.handle.exec('BEGIN IMMEDIATE');
      try {
        rows.forEach((r, i) => this.storage.putVector(r.target, r.id, vectors[i]));
        this.handle.exec('COMMIT');
      } catch (e) {
        this.handle.exec('ROLLBACK');
        this.storage.vectors.clear();
        throw e;
      }
      done += rows.length;
    }
    return done;
  }

  /// Waits until every written row has its vector and, with `file` or
  /// `opfs`, the database is saved: what was written before is durable.
  async flush() {
    this.scheduleBackfill();
    await this.backfilling;
    await this.saving;
  }

  /// The database as bytes (a SQLite file image).
  image() {
    return this.storage.db.sqlite3.capi.sqlite3_js_db_export(this.handle);
  }

  /// The database as bytes once every row has its vector.
  async save() {
    await this.flush();
    return this.image();
  }

  async close() {
    await this.flush();
    this.engine = undefined;
    this.storage.close();
  }
}

function openHandle(sqlite3, options) {
  const db = new sqlite3.oo1.DB(':memory:', 'c');
  if (options.bytes) {
    const bytes = options.bytes instanceof Uint8Array ? options.bytes : new Uint8Array(options.bytes);
    const p = sqlite3.wasm.allocFromTypedArray(bytes);
    const rc = sqlite3.capi.sqlite3_deserialize(
      db.pointer,
      'main',
      p,
      bytes.byteLength,
      bytes.byteLength,
      sqlite3.capi.SQLITE_DESERIALIZE_FREEONCLOSE | sqlite3.capi.SQLITE_DESERIALIZE_RESIZEABLE,
    );
    db.checkRc(rc);
  }
  return db;
}

async function embedderFor(choice, analysis, send) {
  if (choice === undefined || choice === 'hash') return new HashEmbedder(analysis, DEFAULT_DIMENSION);
  if (typeof choice === 'object' && choice.hash !== undefined) return new HashEmbedder(analysis, choice.hash);
  if (typeof choice === 'object' && choice.provider) {
    if (!choice.dimension) throw new MnemoError('invalid-input', 'a provider embedder needs its `dimension`');
    const plugin = await LlmPlugin.load(`llm-${choice.provider}`, choice, send);
    return new RemoteEmbedder(plugin, choice.model, choice.dimension);
  }
  throw new MnemoError('invalid-input', `unknown embedder ${JSON.stringify(choice)}`);
}
