// A call that waits on the LLM never blocks: while a consolidation waits
// for an answer the scripted server holds back, the same memory answers a
// recall and takes a write, and the event loop keeps running; once the
// answer comes, the cycle applies it (exchange.js: planned, then applied).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { Mnemo, drivenClock } from '../src/index.js';
import { SCENARIOS, startScriptedLlm } from './support/scenarios.js';

test('recall and remember answer while a consolidation waits for its LLM', async () => {
  const llm = await startScriptedLlm(SCENARIOS.llm, true);
  try {
    const m = await Mnemo.open({
      clock: drivenClock(SCENARIOS.clock),
      llm: { provider: 'openai', baseUrl: llm.baseUrl, apiKey: 'k', model: 'scripted' },
    });
    await m.remember({ namespace: 'n', content: 'The on-call rotation changes every Monday.' });
    await m.ingest({ namespace: 'n', sessionId: 'chat-1', role: 'user', content: 'I moved to Lisbon last spring, Maria here.' });
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 5);
    let cycleDone = false;
    const cycle = m.consolidate({ namespace: 'n', sessionIdleMinutes: 0 }).then((r) => {
      cycleDone = true;
      return r;
    });
    // Wait until the cycle's first LLM request is at the server (and held there).
    for (let i = 0; i < 400; i++) {
      const { seen } = await (await fetch(`${llm.origin}/seen`)).json();
      if (seen > 0) break;
      await sleep(25);
    }
    const hits = (await m.recall({ namespace: 'n', query: 'when does the on-call rotation change' })).hits;
    assert.equal(hits[0].item.val.content, 'The on-call rotation changes every Monday.');
    const written = await m.remember({ namespace: 'n', content: 'Standup moved to 9:30.' });
    assert.ok(written.created);
    assert.equal(cycleDone, false, 'the cycle is still waiting for its answer');
    const before = ticks;
    await sleep(50);
    assert.ok(ticks > before, 'the event loop runs while the LLM answer is held');
    await fetch(`${llm.origin}/release`, { method: 'POST' });
    const report = await cycle;
    clearInterval(timer);
    assert.ok(report.factsAdded >= 1, JSON.stringify(report.warnings));
    const facts = await m.queryFacts({ namespace: 'n', subject: 'Maria' });
    assert.deepEqual(facts.map((f) => f.object), ['Lisbon']);
    assert.equal((await m.stats('n')).active >= 3n, true);
    await m.close();
  } finally {
    llm.stop();
  }
});
