// One namespace's memory: a Durable Object holding the store in its own
// SQLite database (connection.js), with the same core.wasm the native
// host runs, through the JavaScript host's `Mnemo`. The runtime runs one
// object per key on one thread: the object is the namespace's only
// writer, wherever its users are.
//
// Nothing slow runs on the request path: a write answers first, then
// sets the object's alarm; the alarm embeds what waits for a vector (the
// backfill) and, once a cycle is due, runs the consolidation cycle.

import { DurableObject } from 'cloudflare:workers';

import { Mnemo } from '../../js/src/index.js';
import { components } from '../gen/components.js';
import { DurableConnection, getMeta, setMeta } from './connection.js';
import { errorResponse, serve } from './routes.js';
import { embedderFrom, llmFrom } from './settings.js';

/// How soon after a write the alarm embeds it (long enough that a burst
/// of writes shares one backfill).
export const BACKFILL_DELAY_MS = 200;
/// After a backfill that left rows waiting (the provider failed), the
/// alarm tries again this much later, doubling up to `BACKFILL_RETRY_MAX_MS`
/// (`MNEMO_BACKFILL_RETRY_MS` sets the first delay).
export const BACKFILL_RETRY_MS = 30 * 1000;
export const BACKFILL_RETRY_MAX_MS = 15 * 60 * 1000;
/// A consolidation cycle at most this often (seed 004's 30-minute interval).
export const CYCLE_INTERVAL_MS = 30 * 60 * 1000;

export class MemoryObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    // No request is let in before the store is open.
    ctx.blockConcurrencyWhile(async () => {
      try {
        this.mnemo = await Mnemo.open({
          connection: new DurableConnection(ctx.storage),
          components,
          embedder: embedderFrom(env),
          llm: llmFrom(env),
          schedule: () => this.schedule(),
        });
      } catch (e) {
        // A setting the store cannot open with: every request says why.
        this.failed = String(e && e.message ? e.message : e);
      }
    });
  }

  /// After each call: when rows wait for a vector (a write), the alarm,
  /// if none is set — the backfill runs off the request path. A read sets
  /// nothing.
  schedule() {
    if (this.alarmSet || this.missingVectors({ any: true }) === 0) return;
    this.alarmSet = true;
    this.ctx.storage.setAlarm(Date.now() + BACKFILL_DELAY_MS);
  }

  async fetch(request) {
    if (this.failed) return errorResponse(503, 'unavailable', `this namespace's store did not open: ${this.failed}`);
    const namespace = request.headers.get('x-namespace') ?? 'default';
    const sql = this.ctx.storage.sql;
    const own = getMeta(sql, 'namespace');
    if (own === undefined) setMeta(sql, 'namespace', namespace);
    else if (own !== namespace) {
      return errorResponse(400, 'invalid_input', `this object holds namespace \`${own}\`, not \`${namespace}\``);
    }
    const url = new URL(request.url);
    if (url.pathname === '/health') return this.health();
    return serve(this.mnemo, request, namespace);
  }

  /// Active rows waiting for a vector (the trash is not embedded); with
  /// `any`, 1 as soon as there is one (after every call: no count).
  missingVectors({ any = false } = {}) {
    const waiting = (t) =>
      `SELECT 1 FROM vector_pending p JOIN ${t} x ON x.rowid = p.row WHERE p.target = '${t}' AND x.valid_until IS NULL`;
    const count = (t) => (any ? `EXISTS (${waiting(t)})` : `(SELECT COUNT(*) FROM (${waiting(t)}))`);
    const row = this.ctx.storage.sql.exec(`SELECT ${count('memories')} + ${count('episodes')} AS n`).toArray()[0];
    return Number(row.n);
  }

  /// The object's state: the store's counts, rows waiting for a vector,
  /// the database's size.
  async health() {
    const sql = this.ctx.storage.sql;
    const missing = this.missingVectors();
    const stats = await this.mnemo.stats(getMeta(sql, 'namespace'));
    return Response.json({
      status: 'ok',
      namespace: getMeta(sql, 'namespace'),
      missing_vectors: Number(missing),
      active: Number(stats.active),
      database_bytes: sql.databaseSize,
    });
  }

  /// Embeds what waits for a vector; runs a cycle when one is due.
  async alarm() {
    if (this.failed) return;
    this.alarmSet = false;
    await this.mnemo.backfillAll();
    if (this.missingVectors() > 0) {
      // The provider failed: the rows wait, and the alarm comes back.
      const first = Number(this.env.MNEMO_BACKFILL_RETRY_MS ?? BACKFILL_RETRY_MS);
      this.retryMs = Math.min(this.retryMs ? this.retryMs * 2 : first, BACKFILL_RETRY_MAX_MS);
      this.alarmSet = true;
      this.ctx.storage.setAlarm(Date.now() + this.retryMs);
      return;
    }
    this.retryMs = undefined;
    const sql = this.ctx.storage.sql;
    const namespace = getMeta(sql, 'namespace');
    if (namespace === undefined) return;
    const last = getMeta(sql, 'last_cycle');
    if (last === undefined) {
      // The first write: the first cycle is one interval away.
      setMeta(sql, 'last_cycle', Date.now());
    } else if (Date.now() - Number(last) >= CYCLE_INTERVAL_MS) {
      setMeta(sql, 'last_cycle', Date.now());
      await this.mnemo.consolidate({ namespace });
      await this.mnemo.backfillAll();
      return;
    }
    // Written since the last cycle: the next one runs when due.
    this.ctx.storage.setAlarm(Number(getMeta(sql, 'last_cycle')) + CYCLE_INTERVAL_MS);
  }
}
