// The shared scenarios (tests/scenarios/hosts.json) against the Worker in
// workerd, over its HTTP API: each step is the request an agent would
// send, each expectation checked on the JSON the Worker answers (the
// native server's fields). The consolidation scenario's LLM is the
// JavaScript host's scripted OpenAI-compatible server on 127.0.0.1,
// reached through the provider plugin over the Worker's `fetch`.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SCENARIOS, startScriptedLlm } from '../../js/test/support/scenarios.js';
import { call, settled, startWorker } from './support.js';

const show = (v) => JSON.stringify(v);

/// `args` with `$name` values resolved.
function resolve(args, saved) {
  const out = {};
  for (const [k, v] of Object.entries(args)) out[k] = typeof v === 'string' && v.startsWith('$') ? saved.get(v.slice(1)) : v;
  return out;
}

/// One step as its HTTP request; answers `{ status, body }`.
async function perform(state, op, a) {
  const ns = a.namespace;
  const mf = state.mf;
  switch (op) {
    case 'remember':
      return call(mf, 'POST', '/memories', { body: a, namespace: ns });
    case 'ingest':
      return call(mf, 'POST', '/episodes', { body: a, namespace: ns });
    case 'recall':
      // What was written is embedded on the object's alarm first.
      if (ns && /^[A-Za-z0-9_.:-]*$/.test(ns)) await settled(mf, ns);
      return call(mf, 'POST', '/recall', { body: a, namespace: ns });
    case 'delete':
      return call(mf, 'DELETE', `/memories/${a.id}?reason=${encodeURIComponent(a.reason)}`, { namespace: ns });
    case 'restore':
      return call(mf, 'POST', `/memories/${a.id}/restore`, { namespace: ns });
    case 'list':
      return call(mf, 'GET', a.deleted ? '/trash' : '/memories', { namespace: ns });
    case 'stats':
      return call(mf, 'GET', '/stats', { namespace: ns });
    case 'consolidate':
      return call(mf, 'POST', '/consolidate', { body: a, namespace: ns });
    case 'query_facts': {
      const [namespace] = a.namespaces;
      return call(mf, 'GET', `/facts?subject=${encodeURIComponent(a.subject)}`, { namespace });
    }
    case 'export_import': {
      // Every namespace the scenario wrote, out of this Worker and into a
      // fresh one.
      const fresh = startWorker(state.options);
      let created = 0;
      for (const namespace of state.namespaces) {
        const lines = await call(mf, 'GET', '/export', { namespace });
        assert.equal(lines.status, 200);
        const r = await call(fresh, 'POST', '/import', { body: lines.body, headers: { 'content-type': 'application/x-ndjson' } });
        assert.equal(r.status, 200, show(r.body));
        created += r.body.created;
      }
      await mf.dispose();
      state.mf = fresh;
      return { status: 200, body: { created } };
    }
    default:
      throw new Error(`unknown op ${op}`);
  }
}

const hitIds = (r) => r.hits.map((h) => h.item.id);

function check(e, out, saved) {
  const id = (name) => saved.get(name);
  if ('created' in e) assert.equal(out.created, e.created);
  if ('dedup_reason' in e) assert.equal(out.dedup_reason, e.dedup_reason);
  if ('same_as' in e) assert.equal(out.id, id(e.same_as));
  if ('repetition_count' in e) assert.equal(out.repetition_count, e.repetition_count);
  if ('layer' in e) assert.equal(out.layer, e.layer);
  if ('deleted' in e) assert.equal(out.valid_until !== null, e.deleted);
  if ('invalid_reason' in e) assert.equal(out.invalid_reason, e.invalid_reason);
  if ('first' in e) assert.equal(hitIds(out)[0], id(e.first), show(out.hits.map((h) => h.item.content)));
  if ('absent' in e) assert.ok(!hitIds(out).includes(id(e.absent)));
  if ('count' in e) assert.equal(out.hits.length, e.count);
  if ('first_contains' in e) assert.ok(out.hits[0]?.item.content.includes(e.first_contains), show(out.hits.map((h) => h.item.content)));
  if ('contains' in e) for (const n of e.contains) assert.ok(out.memories.map((x) => x.id).includes(id(n)));
  if ('active' in e) assert.equal(out.active, e.active);
  if ('deleted_count' in e) assert.equal(out.deleted, e.deleted_count);
  if ('facts_added_at_least' in e) assert.ok(out.facts_added >= e.facts_added_at_least, show(out.warnings));
  if ('sessions' in e) assert.deepEqual(out.sessions, e.sessions);
  if ('objects' in e) assert.deepEqual(out.map((f) => f.object), e.objects);
  if ('created_at_least' in e) assert.ok(out.created >= e.created_at_least, show(out));
}

async function runScenario(scenario, llm) {
  const options = {};
  if (scenario.llm) {
    options.bindings = { MNEMO_LLM_BASE_URL: llm.baseUrl, MNEMO_LLM_MODEL: 'scripted', MNEMO_LLM_API_KEY: 'test-key' };
  }
  const state = { options, mf: startWorker(options), namespaces: new Set() };
  const saved = new Map();
  try {
    for (const [i, step] of scenario.steps.entries()) {
      const where = `${scenario.name}, step ${i + 1} (${step.op})`;
      const args = resolve(step.args ?? {}, saved);
      if (typeof args.namespace === 'string' && /^[A-Za-z0-9_.:-]+$/.test(args.namespace)) state.namespaces.add(args.namespace);
      const { status, body } = await perform(state, step.op, args);
      const expected = step.expect ?? {};
      if (status >= 400) {
        assert.ok(body && body.error && typeof body.error.message === 'string', `${where}: ${show(body)}`);
        // The native codes are snake_case; the scenarios name the WIT's cases.
        assert.equal(body.error.code.replaceAll('_', '-'), expected.error, `${where}: ${status} ${show(body)}`);
        continue;
      }
      assert.equal(expected.error, undefined, `${where}: expected an error, got ${status} ${show(body)}`);
      if (step.save) saved.set(step.save, body.id);
      try {
        check(expected, body, saved);
      } catch (err) {
        err.message = `${where}: ${err.message}`;
        throw err;
      }
    }
  } finally {
    await state.mf.dispose();
  }
}

test('the shared scenarios pass in workerd, over HTTP', async (t) => {
  const llm = await startScriptedLlm(SCENARIOS.llm);
  try {
    for (const scenario of SCENARIOS.scenarios) {
      await t.test(scenario.name, () => runScenario(scenario, llm));
    }
  } finally {
    llm.stop();
  }
});
