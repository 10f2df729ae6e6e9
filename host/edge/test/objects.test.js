// What the edge adds to the shared scenarios: a namespace per object, an
// object that finds its store again after eviction, embeddings through
// the provider plugin with the key from the Worker's secrets (embedded
// on the alarm, not while the write waits), and the bearer key.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { call, settled, startWorker } from './support.js';

test('two namespaces are two objects, each with its own database', async () => {
  const mf = startWorker();
  try {
    for (const [ns, text] of [
      ['team-a', 'The release train leaves on Thursdays.'],
      ['team-b', 'The on-call rotation changes on Mondays.'],
      ['team-b', 'Incidents are written up within two days.'],
    ]) {
      assert.equal((await call(mf, 'POST', '/memories', { body: { content: text }, namespace: ns })).status, 201);
    }
    const a = await settled(mf, 'team-a');
    const b = await settled(mf, 'team-b');
    assert.equal(a.namespace, 'team-a');
    assert.equal(a.active, 1);
    assert.equal(b.namespace, 'team-b');
    assert.equal(b.active, 2);
    // The body's namespace routes a request as the header does.
    const r = await call(mf, 'POST', '/recall', { body: { query: 'release train', namespace: 'team-a' } });
    assert.equal(r.body.hits[0].item.content, 'The release train leaves on Thursdays.');
    const other = await call(mf, 'POST', '/recall', { body: { query: 'release train', namespace: 'team-b' } });
    assert.ok(!other.body.hits.some((h) => h.item.namespace !== 'team-b'));
    // An object refuses a namespace that is not its own.
    const ns = mf.getDurableObjectNamespace('MEMORY');
    const stub = (await ns).get((await ns).idFromName('team-a'));
    const wrong = await stub.fetch('http://mnemo.test/stats', { headers: { 'x-namespace': 'team-b' } });
    assert.equal(wrong.status, 400);
    assert.equal((await wrong.json()).error.code, 'invalid_input');
  } finally {
    await mf.dispose();
  }
});

test('an object evicted and created again finds its memories', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-edge-'));
  try {
    const first = startWorker({ persist: dir });
    let before;
    let id;
    try {
      const r = await call(first, 'POST', '/memories', { body: { content: 'The VPN certificate expires in March.' }, namespace: 'ops' });
      id = r.body.id;
      await call(first, 'POST', '/memories', { body: { content: 'Backups are kept for 14 days.' }, namespace: 'ops' });
      await call(first, 'DELETE', `/memories/${id}?reason=renewed`, { namespace: 'ops' });
      await settled(first, 'ops');
      before = (await call(first, 'GET', '/export', { namespace: 'ops' })).body;
    } finally {
      // The runtime goes away with every object in it.
      await first.dispose();
    }
    const second = startWorker({ persist: dir });
    try {
      const after = (await call(second, 'GET', '/export', { namespace: 'ops' })).body;
      assert.equal(after, before);
      const hits = (await call(second, 'POST', '/recall', { body: { query: 'how long are backups kept' }, namespace: 'ops' })).body.hits;
      assert.equal(hits[0].item.content, 'Backups are kept for 14 days.');
      const trash = (await call(second, 'GET', '/trash', { namespace: 'ops' })).body.memories;
      assert.deepEqual(trash.map((m) => [m.id, m.invalid_reason]), [[id, 'renewed']]);
      assert.equal((await call(second, 'POST', `/memories/${id}/restore`, { namespace: 'ops' })).status, 200);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/// An OpenAI-compatible `/embeddings` on 127.0.0.1 that records the
/// authorization each request carried.
function embeddingServer() {
  const seen = [];
  const state = { down: false };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url, authorization: req.headers.authorization, down: state.down });
      if (state.down) {
        res.writeHead(503, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'down for the test' } }));
      }
      const input = JSON.parse(body).input;
      const data = input.map((text, index) => {
        const v = new Array(8).fill(0);
        for (const [i, ch] of [...text.toLowerCase()].entries()) v[(ch.codePointAt(0) + i) % 8] += 1;
        return { index, embedding: v };
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ model: 'scripted-embed', data, usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () =>
      ok({ baseUrl: `http://127.0.0.1:${server.address().port}/v1`, seen, state, close: () => server.close() }),
    ),
  );
}

test("embeddings come through the provider plugin with the Worker's secret; a failed backfill comes back on the alarm", async () => {
  const server = await embeddingServer();
  const mf = startWorker({
    bindings: {
      MNEMO_EMBEDDER: 'openai',
      MNEMO_EMBEDDING_BASE_URL: server.baseUrl,
      MNEMO_EMBEDDING_MODEL: 'scripted-embed',
      MNEMO_EMBEDDING_DIMENSION: '8',
      MNEMO_EMBEDDING_API_KEY: 'sk-edge-secret',
      MNEMO_BACKFILL_RETRY_MS: '100',
    },
  });
  try {
    // The provider down: the write is kept, its vector waits.
    server.state.down = true;
    const early = await call(mf, 'POST', '/memories', { body: { content: 'The spare key is under the blue flowerpot.' }, namespace: 'home' });
    assert.equal(early.status, 201, JSON.stringify(early.body));
    await new Promise((ok) => setTimeout(ok, 300));
    assert.ok((await call(mf, 'GET', '/health', { namespace: 'home' })).body.missing_vectors >= 1);
    assert.ok(server.seen.filter((s) => s.down).length >= 2, 'the alarm tried again');
    server.state.down = false;
    const r = await call(mf, 'POST', '/memories', { body: { content: 'Miso the cat hates the vacuum cleaner.' }, namespace: 'home' });
    assert.equal(r.status, 201);
    const health = await settled(mf, 'home');
    assert.equal(health.missing_vectors, 0);
    assert.equal(health.active, 2);
    assert.ok(server.seen.some((s) => s.url === '/v1/embeddings'), JSON.stringify(server.seen));
    for (const s of server.seen) assert.equal(s.authorization, 'Bearer sk-edge-secret');
    const hits = (await call(mf, 'POST', '/recall', { body: { query: 'the cat and the vacuum' }, namespace: 'home' })).body.hits;
    const channels = hits[0].explanation.channels.map((c) => c.channel);
    assert.ok(channels.includes('vector'), JSON.stringify(hits[0].explanation));
  } finally {
    await mf.dispose();
    server.close();
  }
});

test('with MNEMO_API_KEY set, every route but /health asks for it', async () => {
  const mf = startWorker({ bindings: { MNEMO_API_KEY: 'k-123' } });
  try {
    const denied = await call(mf, 'POST', '/memories', { body: { content: 'x' }, namespace: 'n' });
    assert.equal(denied.status, 401);
    assert.equal(denied.body.error.code, 'unauthorized');
    const wrong = await call(mf, 'GET', '/stats', { namespace: 'n', headers: { authorization: 'Bearer k-124' } });
    assert.equal(wrong.status, 401);
    const ok = await call(mf, 'POST', '/memories', { body: { content: 'x marks the spot' }, namespace: 'n', headers: { authorization: 'Bearer k-123' } });
    assert.equal(ok.status, 201);
    assert.equal((await call(mf, 'GET', '/health', { namespace: 'n' })).status, 200);
  } finally {
    await mf.dispose();
  }
});

test('bad requests are JSON errors and the object keeps serving', async () => {
  const mf = startWorker();
  try {
    const cases = [
      ['POST', '/memories', '{"content": ', 400, 'malformed_json'],
      ['POST', '/memories', '[1, 2]', 422, 'invalid_request'],
      ['POST', '/memories', '{"content": ""}', 400, 'invalid_input'],
      ['GET', '/memories/mem_missing', undefined, 404, 'not_found'],
      ['GET', '/no-such-route', undefined, 404, 'not_found'],
      ['PUT', '/memories', '{}', 405, 'method_not_allowed'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await call(mf, method, path, { body, namespace: 'n' });
      assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code, `${method} ${path}`);
    }
    const bad = await call(mf, 'GET', '/stats', { namespace: 'not a namespace!' });
    assert.equal(bad.status, 400);
    assert.equal((await call(mf, 'POST', '/memories', { body: { content: 'still here' }, namespace: 'n' })).status, 201);
    assert.equal((await call(mf, 'GET', '/stats', { namespace: 'n' })).body.active, 1);
  } finally {
    await mf.dispose();
  }
});

test('the agent routes answer with the native fields: get, edit, history, search, context, resume', async () => {
  const mf = startWorker();
  try {
    const ns = 'agent';
    const r = await call(mf, 'POST', '/memories', { body: { content: "The user's daughter Lily is allergic to peanuts.", tags: ['family'] }, namespace: ns });
    assert.equal(r.status, 201);
    const id = r.body.id;
    await call(mf, 'POST', '/memories', { body: { content: 'The user runs three times a week.' }, namespace: ns });
    await settled(mf, ns);

    const got = await call(mf, 'GET', `/memories/${id}`, { namespace: ns });
    assert.equal(got.body.content, "The user's daughter Lily is allergic to peanuts.");
    assert.deepEqual(got.body.tags, ['family']);
    assert.equal(typeof got.body.attributes, 'object');

    const edited = await call(mf, 'PATCH', `/memories/${id}`, { body: { content: "The user's daughter Lily is allergic to peanuts and sesame." }, namespace: ns });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    const history = (await call(mf, 'GET', `/memories/${id}/history`, { namespace: ns })).body;
    assert.equal(history.memory.content, "The user's daughter Lily is allergic to peanuts and sesame.");
    assert.deepEqual(history.versions.map((v) => v.memory.content), ["The user's daughter Lily is allergic to peanuts."]);

    await settled(mf, ns);
    const search = (await call(mf, 'GET', '/search?q=sesame', { namespace: ns })).body;
    assert.equal(search.hits[0].item.id, id);
    assert.equal(search.hits[0].item.type, 'memory');
    assert.ok(search.hits[0].explanation.channels.length > 0);

    const context = (await call(mf, 'POST', '/context', { body: { prompt: 'is Lily allergic to peanuts?' }, namespace: ns })).body;
    assert.ok(context.text.includes('peanuts and sesame'), JSON.stringify(context));
    assert.deepEqual(context.memories.map((m) => m.id), [id]);

    const resume = await call(mf, 'GET', '/resume?hours=48', { namespace: ns });
    assert.equal(resume.status, 200, JSON.stringify(resume.body));
    assert.ok(JSON.stringify(resume.body).includes('peanuts and sesame'));

    const stats = (await call(mf, 'GET', '/stats', { namespace: ns })).body;
    assert.equal(stats.total, 2);
    assert.equal(stats.active, 2);
  } finally {
    await mf.dispose();
  }
});

test('a setting the store cannot open with answers every request with the reason', async () => {
  const mf = startWorker({ bindings: { MNEMO_EMBEDDER: 'word2vec' } });
  try {
    const r = await call(mf, 'POST', '/memories', { body: { content: 'x' }, namespace: 'n' });
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, 'unavailable');
    assert.match(r.body.error.message, /MNEMO_EMBEDDER must be hash or openai/);
  } finally {
    await mf.dispose();
  }
});
