// mnemo in JavaScript: the same core component the native host runs
// (core.wasm, transpiled by jco), with its five imports answered here —
// storage over SQLite compiled to WASM, embeddings (the hash embedder, or a
// provider through an LLM plugin), the LLM through the same plugins, NER
// through the same plugins, the platform's clock. Every engine call runs in
// one SQLite transaction: it lands whole or not at all. A call that needs
// the network is planned, then applied (exchange.js): it never blocks the
// thread it runs on.

import { instantiate, resources, setComponents } from './load.js';
import { persistence } from './persist.js';
import { HashEmbedder, LlmPlugin, NerPlugins, RemoteEmbedder, DEFAULT_DIMENSION } from './providers.js';
import { HostFailure } from './storage/db.js';
import { Storage } from './storage/index.js';
import { Exchange, MAX_ROUNDS, PinnedClock } from './exchange.js';
import { exportLines, importLines } from './transfer.js';
import * as requests from './requests.js';

export { MnemoError } from './requests.js';
export { drivenClock, wallClock } from './clock.js';
import { MnemoError } from './requests.js';
import { wallClock } from './clock.js';

/// Pending rows embedded per provider call by the background backfill.
export const BACKFILL_BATCH = 64;

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
    'mnemo:core/resources': resources,
  });
  return core.analysis;
}

/// A round that waits for provider answers.
const DEFERRED = Symbol('deferred');
/// Thrown out of a round's transaction to roll it back when it waits.
class Deferred extends Error {}

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
  /// - `connection`: a database connection of another kind (db.js says
  ///   what one offers; host/edge gives a Durable Object's), instead of
  ///   SQLite in WASM;
  /// - `components`: the compiled components, for runtimes that cannot
  ///   compile WASM at run time (load.js's `setComponents`);
  /// - `schedule`: called after each operation instead of running the
  ///   backfill on a timer — the host runs `backfillAll()` when it chooses
  ///   (host/edge: on the Durable Object's alarm).
  static async open(options = {}) {
    const m = new Mnemo();
    m.options = options;
    if (options.components) setComponents(options.components);
    m.analysis = await analysisInstance();
    m.persist = await persistence(options);
    m.connection = options.connection ?? (await inMemory(m.persist?.bytes ?? options.bytes));
    m.storage = new Storage(m.connection, m.analysis);
    m.clock = options.clock ?? wallClock();
    // The plugins' HTTP goes through the exchange of the operation running.
    const send = (request) => m.op.exchange.send(request);
    m.llm = options.llm ? await LlmPlugin.load(pluginName(options.llm.provider), options.llm, send) : undefined;
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
    // An operation made `untouched` (a reader that may not write the
    // namespace: the edge's scoped keys) records no access or renewal.
    const storage = this.storage.imports();
    for (const name of ['touchMemories', 'renewMemories']) {
      const write = storage[name];
      storage[name] = (...args) => (this.op && this.op.untouched ? undefined : write(...args));
    }
    const core = await instantiate('core', {
      'mnemo:core/storage': storage,
      'mnemo:core/embedding': {
        info: () => this.embedder.info(),
        embed: (texts) => this.embedder.embed(texts),
      },
      'mnemo:core/llm': {
        level: () => level,
        complete: (req) => {
          if (!this.llm) throw new HostFailure('unavailable', 'no LLM is configured');
          return this.llm.complete(req);
        },
      },
      'mnemo:core/ner': {
        extract: (text, strategy) => (this.ner ? this.ner.extract(text, strategy) : { mentions: [], failures: [] }),
        accurateAvailable: () => (this.ner ? this.ner.accurateAvailable() : false),
      },
      'mnemo:core/clock': { now: () => this.op.clock.now(), random: () => this.op.clock.random() },
      'mnemo:core/resources': resources,
    });
    this.engine = core.engine;
  }

  /// One round of an operation: `work(engine)` in one transaction. It
  /// commits, unless a provider exchange was deferred (then it rolls back
  /// and answers `DEFERRED`, to run again once the answers are in) — on the
  /// last round it commits whatever the core made of the missing answers.
  /// A typed error rolls back and is thrown as a `MnemoError`; a trap (a bug
  /// or a limit) rolls back too and replaces the instance.
  attempt(op, work, last) {
    if (!this.engine) throw new MnemoError('unavailable', 'this memory is closed');
    this.op = op;
    op.clock.rewind();
    try {
      return this.storage.db.transaction(() => {
        const out = work(this.engine);
        // Rolled back, to run again with the answers.
        if (op.exchange.waiting && !last) throw new Deferred();
        this.storage.db.syncIndex();
        return out;
      });
    } catch (e) {
      this.rolledBack();
      if (e instanceof Deferred) return DEFERRED;
      if (e instanceof MnemoError) throw e;
      if (e && e.payload && typeof e.payload.tag === 'string') {
        if (op.exchange.waiting && !last) return DEFERRED;
        throw new MnemoError(e.payload.tag, e.payload.val);
      }
      this.engineLost = this.instantiateCore();
      throw new MnemoError('trap', String(e && e.message ? e.message : e));
    } finally {
      this.op = undefined;
    }
  }

  /// After a rollback: the vectors held in memory may include the
  /// round's, so they are read again.
  rolledBack() {
    this.storage.vectors.clear();
  }

  /// Runs `work(engine)` as one operation: rounds until no exchange is
  /// deferred, the deferred ones fetched between rounds.
  async operate(work, { untouched = false } = {}) {
    if (this.engineLost) {
      await this.engineLost;
      this.engineLost = undefined;
    }
    const out = await this.rounds((op, last) => this.attempt(op, work, last), { untouched });
    if (this.options.schedule) this.options.schedule();
    else this.scheduleBackfill();
    this.scheduleSave();
    return out;
  }

  /// `step(op, last)` until it answers something other than `DEFERRED`,
  /// with the exchanges it deferred fetched between rounds.
  async rounds(step, { untouched = false } = {}) {
    const op = { exchange: new Exchange(), clock: new PinnedClock(this.clock), untouched };
    for (let round = 1; ; round++) {
      const out = step(op, round >= MAX_ROUNDS);
      if (out !== DEFERRED) return out;
      await op.exchange.settle();
    }
  }

  /// Engine function `name` as one operation.
  async run(name, ...args) {
    return this.operate((engine) => engine[name](...args));
  }

  /// `work()` outside the core (the backfill's embedding), with the
  /// provider exchanges it defers fetched between rounds.
  async provide(work) {
    return this.rounds((op, last) => {
      this.op = op;
      try {
        return work();
      } catch (e) {
        if (op.exchange.waiting && !last) return DEFERRED;
        throw e;
      } finally {
        this.op = undefined;
      }
    });
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

  /// `untouched`: the hits' accesses are not recorded (a reader that may
  /// not write the namespace).
  async recall(req, { untouched = false } = {}) {
    return this.operate((engine) => engine.recall(requests.recall(req)), { untouched });
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

  async context(prompt, { namespace = 'default', sessionId, limit = 5, untouched = false } = {}) {
    return this.operate((engine) => engine.context(namespace, prompt, sessionId, limit), { untouched });
  }

  async consolidate(req = {}) {
    return this.run('consolidate', requests.consolidate(req));
  }

  async resume({ namespace = 'default', hours = 48, context, untouched = false } = {}) {
    return this.operate((engine) => engine.resume({ namespace, hours, context }), { untouched });
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
    return importLines(this, lines);
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

  /// Embeds every row without a vector; returns how many were embedded. A
  /// row whose text changed while its vector was computed keeps waiting.
  async backfillAll() {
    let done = 0;
    while (this.engine) {
      const rows = [
        ...this.storage.missingVectors('memories', BACKFILL_BATCH),
        ...this.storage.missingVectors('episodes', BACKFILL_BATCH),
      ].slice(0, BACKFILL_BATCH);
      if (!rows.length) break;
      // Each row's parts (the text, and a dialogue turn's sentences) are
      // embedded together, then combined: the core decides both, as it does
      // for the native host, so a turn has one vector whichever host made it.
      const parts = rows.map((r) => this.analysis.vectorParts(r.target, r.text));
      let vectors;
      try {
        const flat = await this.provide(() => this.embedder.embed(parts.flat()));
        let at = 0;
        vectors = parts.map((p) => this.analysis.combineParts(flat.slice(at, (at += p.length))));
      } catch {
        // The provider failed: the rows stay pending for the next write.
        break;
      }
      if (!this.engine) break;
      try {
        this.storage.db.transaction(() =>
          rows.forEach((r, i) => {
            if (this.storage.stillMissing(r.target, r.id, r.text)) this.storage.putVector(r.target, r.id, vectors[i]);
          }),
        );
      } catch (e) {
        this.rolledBack();
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
    if (!this.connection.image) throw new MnemoError('unavailable', 'this database is not held in memory');
    return this.connection.image();
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

/// SQLite in WASM, in memory, from a database image if given (loaded
/// only here: a runtime with a database of its own never loads it).
async function inMemory(bytes) {
  const { SqliteWasmConnection } = await import('./storage/sqlite-wasm.js');
  return SqliteWasmConnection.open(bytes);
}

/// The bundled LLM plugins, by provider name.
export const PROVIDERS = ['openai', 'anthropic', 'ollama'];

function pluginName(provider = 'openai') {
  if (!PROVIDERS.includes(provider)) {
    throw new MnemoError('invalid-input', `unknown provider \`${provider}\`; the bundled ones are ${PROVIDERS.join(', ')}`);
  }
  return `llm-${provider}`;
}

async function embedderFor(choice, analysis, send) {
  if (choice === undefined || choice === 'hash') return new HashEmbedder(analysis, DEFAULT_DIMENSION);
  if (typeof choice === 'object' && choice.hash !== undefined) return new HashEmbedder(analysis, choice.hash);
  if (typeof choice === 'object' && choice.provider) {
    if (!choice.dimension) throw new MnemoError('invalid-input', 'a provider embedder needs its `dimension`');
    const plugin = await LlmPlugin.load(pluginName(choice.provider), choice, send);
    return new RemoteEmbedder(plugin, choice.model, choice.dimension);
  }
  throw new MnemoError('invalid-input', `unknown embedder ${JSON.stringify(choice)}`);
}
