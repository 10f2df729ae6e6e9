// Runs tests/scenarios/hosts.json against the JavaScript host: each step's
// operation through the public API, each expectation checked as the
// native runner (tests/it/scenarios.rs) checks it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Mnemo, MnemoError, drivenClock } from '../../src/index.js';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));
export const SCENARIOS = JSON.parse(readFileSync(`${repo}tests/scenarios/hosts.json`, 'utf8'));

const camel = (k) => k.replace(/_([a-z])/g, (_m, c) => c.toUpperCase());

/// The scripted LLM server in a child process; resolves to
/// `{ baseUrl, origin, stop }`. `hold`: answers wait for `POST /release`.
export function startScriptedLlm(script, hold = false) {
  const args = [fileURLToPath(new URL('./scripted-llm.mjs', import.meta.url)), JSON.stringify(script)];
  if (hold) args.push('hold');
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (d) => {
      const port = String(d).match(/listening (\d+)/)?.[1];
      if (!port) return reject(new Error(`scripted LLM said ${d}`));
      resolve({ baseUrl: `http://127.0.0.1:${port}/v1`, origin: `http://127.0.0.1:${port}`, stop: () => child.kill() });
    });
  });
}

/// `args` with snake_case keys in camelCase and `$name` values resolved.
function resolve(args, saved) {
  const out = {};
  for (const [k, v] of Object.entries(args)) {
    out[camel(k)] = typeof v === 'string' && v.startsWith('$') ? saved.get(v.slice(1)) : v;
  }
  return out;
}

async function perform(state, op, a) {
  const m = state.mnemo;
  switch (op) {
    case 'remember':
      return m.remember(a);
    case 'ingest':
      return m.ingest(a);
    case 'recall': {
      await m.flush();
      return m.recall(a);
    }
    case 'delete':
      return m.delete(a.id, a.reason, a.namespace);
    case 'restore':
      return m.restore(a.id, a.namespace);
    case 'list':
      return m.list(a);
    case 'stats':
      return m.stats(a.namespace);
    case 'consolidate':
      return m.consolidate(a);
    case 'query_facts':
      return m.queryFacts(a);
    case 'export_import': {
      const lines = await m.export();
      const fresh = await Mnemo.open(state.options);
      const counts = await fresh.import(lines);
      await m.close();
      state.mnemo = fresh;
      return counts;
    }
    default:
      throw new Error(`unknown op ${op}`);
  }
}

const show = (v) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x));
const hitIds = (r) => r.hits.map((h) => h.item.val.id);

function check(step, out, saved) {
  const e = step.expect ?? {};
  const id = (name) => saved.get(name);
  const memory = out && (out.memory ?? out);
  if ('created' in e) assert.equal(out.created, e.created);
  if ('dedup_reason' in e) assert.equal(out.dedupReason, e.dedup_reason);
  if ('same_as' in e) assert.equal(out.memory.id, id(e.same_as));
  if ('repetition_count' in e) assert.equal(out.memory.repetitionCount, e.repetition_count);
  if ('layer' in e) assert.equal(memory.layer, e.layer);
  if ('deleted' in e) assert.equal(memory.validUntil !== undefined, e.deleted);
  if ('invalid_reason' in e) assert.equal(memory.invalidReason, e.invalid_reason);
  if ('first' in e) assert.equal(hitIds(out)[0], id(e.first), show(out.hits.map((h) => h.item.val.content)));
  if ('absent' in e) assert.ok(!hitIds(out).includes(id(e.absent)));
  if ('count' in e) assert.equal(out.hits.length, e.count);
  if ('first_contains' in e) assert.ok(out.hits[0]?.item.val.content.includes(e.first_contains), show(out.hits.map((h) => h.item.val.content)));
  if ('contains' in e) for (const n of e.contains) assert.ok(out.map((x) => x.id).includes(id(n)));
  if ('active' in e) assert.equal(Number(out.active), e.active);
  if ('deleted_count' in e) assert.equal(Number(out.deleted), e.deleted_count);
  if ('facts_added_at_least' in e) assert.ok(out.factsAdded >= e.facts_added_at_least, show(out.warnings));
  if ('sessions' in e) assert.deepEqual(out.sessions, e.sessions);
  if ('objects' in e) assert.deepEqual(out.map((f) => f.object), e.objects);
  if ('created_at_least' in e) assert.ok(out.created >= e.created_at_least, show(out));
}

/// Runs one scenario on a fresh in-memory store.
export async function runScenario(scenario, llm) {
  const options = { clock: drivenClock(SCENARIOS.clock) };
  if (scenario.llm) options.llm = { provider: 'openai', baseUrl: llm.baseUrl, apiKey: 'test-key', model: 'scripted' };
  const state = { options, mnemo: await Mnemo.open(options) };
  const saved = new Map();
  try {
    for (const [i, step] of scenario.steps.entries()) {
      const where = `${scenario.name}, step ${i + 1} (${step.op})`;
      let out;
      try {
        out = await perform(state, step.op, resolve(step.args ?? {}, saved));
      } catch (err) {
        if (!(err instanceof MnemoError)) throw err;
        assert.equal(err.kind, step.expect?.error, `${where}: ${err.message}`);
        continue;
      }
      assert.equal(step.expect?.error, undefined, `${where}: expected an error, got ${show(out)}`);
      if (step.save) saved.set(step.save, out.memory.id);
      try {
        check(step, out, saved);
      } catch (err) {
        err.message = `${where}: ${err.message}`;
        throw err;
      }
    }
  } finally {
    await state.mnemo.close();
  }
}
