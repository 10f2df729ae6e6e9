// Providers over the network, through the same plugin components as the
// native host, against a scripted OpenAI-compatible server on 127.0.0.1:
// embeddings from its `/embeddings` (the vector channel answers, the
// backfill fetches without blocking, the embedding lock holds), an
// unreachable provider costing only vectors; and the agent-facing reads —
// context injection and session resume.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Mnemo, drivenClock } from '../src/index.js';
import { SCENARIOS, startScriptedLlm } from './support/scenarios.js';

let server;
before(async () => {
  server = await startScriptedLlm(SCENARIOS.llm);
});
after(() => server.stop());

test('embeddings come from an OpenAI-compatible endpoint through the openai plugin', async () => {
  const m = await Mnemo.open({
    clock: drivenClock(SCENARIOS.clock),
    embedder: { provider: 'openai', baseUrl: server.baseUrl, apiKey: 'sk-test', model: 'scripted-embed', dimension: 8 },
  });
  const a = await m.remember({ content: 'zebra zebra zebra' });
  await m.remember({ content: 'the quarterly report is due' });
  // Two sentences: the turn's parts (the core's vectorParts) go to the
  // provider together and come back as one vector (combineParts).
  await m.ingest({ sessionId: 's', role: 'user', content: 'Quick note about zebras. They are striped!' });
  await m.flush();
  const s = await m.stats();
  assert.equal(s.memoryVectors, 2n);
  assert.equal(s.episodeVectors, 1n);
  const res = await m.recall({ query: 'zebra', dry: true });
  assert.ok(res.channelsRun.includes('vector'), JSON.stringify(res.warnings));
  assert.equal(res.hits[0].item.val.id, a.memory.id);
  assert.ok(res.hits[0].explanation.channels.some((c) => c.channel === 'vector'));
  // The lock: another model on the same database disables vector search.
  const image = await m.save();
  await m.close();
  const other = await Mnemo.open({
    bytes: image,
    embedder: { provider: 'openai', baseUrl: server.baseUrl, model: 'another-model', dimension: 8 },
  });
  const res2 = await other.recall({ query: 'zebra', dry: true });
  assert.ok(!res2.channelsRun.includes('vector'));
  assert.equal(res2.hits[0].item.val.id, a.memory.id, 'full-text search still answers');
  await other.close();
});

test('an unreachable embedding provider leaves rows waiting, never lost', async () => {
  const m = await Mnemo.open({
    embedder: { provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', dimension: 8 },
  });
  const out = await m.remember({ content: 'kept even without a vector' });
  assert.ok(out.created);
  await m.flush();
  const s = await m.stats();
  assert.equal(s.active, 1n);
  assert.equal(s.memoryVectors, 0n);
  assert.equal((await m.recall('kept without vector')).hits[0].item.val.id, out.memory.id);
  await m.close();
});

test('context injection and session resume read the memory for the agent', async () => {
  const m = await Mnemo.open({ clock: drivenClock(SCENARIOS.clock) });
  await m.remember({ content: 'The user deploys with Terraform from the infra repo.', importance: 0.9 });
  await m.remember({ content: 'The user likes concise answers.' });
  const ctx = await m.context('How do I deploy the new service?');
  assert.ok(ctx.memories.some((x) => x.content.includes('Terraform')), ctx.text);
  assert.match(ctx.text, /Terraform/);
  const block = await m.resume({ hours: 24 });
  assert.ok(block.recent.length >= 2, block.text);
  assert.match(block.text, /Terraform/);
  await m.close();
});
