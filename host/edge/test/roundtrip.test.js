// An export moves between the edge and `mnemo serve` line for line (each
// line the same JSON, in the same order): the
// native server's export imported into the Worker exports the same lines
// per namespace, and the Worker's export imported into a fresh native
// server exports them again. `MNEMO_BIN` names the native binary (CI
// builds it first); both sides use the hash embedder, so the header's
// model matches too.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { call, settled, startWorker } from './support.js';

const BIN = process.env.MNEMO_BIN;

/// `mnemo serve` on a free port of 127.0.0.1 with a fresh database.
function serve(dir) {
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, MNEMO_EMBEDDER: 'hash' };
  for (const k of Object.keys(env)) if (k.startsWith('MNEMO_') && !['MNEMO_EMBEDDER', 'MNEMO_BIN'].includes(k)) delete env[k];
  const child = spawn(BIN, ['serve', '--port', '0', '--db', join(dir, 'memory.db')], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((ok, fail) => {
    let err = '';
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`mnemo serve exited with ${code}: ${err}`)));
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/listening on (http:\/\/127\.0\.0\.1:\d+)\s/);
      if (m) ok({ url: m[1], stop: () => child.kill() });
    });
  });
}

async function native(server, method, path, { body, namespace, type = 'application/json' } = {}) {
  const headers = { 'content-type': type };
  if (namespace) headers['x-namespace'] = namespace;
  const res = await fetch(`${server.url}${path}`, { method, headers, body: typeof body === 'string' ? body : body && JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: (res.headers.get('content-type') ?? '').includes('application/json') ? JSON.parse(text) : text };
}

const NAMESPACES = ['rt-a', 'rt-b'];

/// An export's lines, each as the JSON it holds (serde writes an f32 1 as
/// `1.0`, JavaScript as `1`: the same number; everything else is compared
/// as written, in order).
const lines = (text) => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

test('an export goes from mnemo serve to the edge and back, line for line', { skip: !BIN && !process.env.CI && 'MNEMO_BIN is not set' }, async () => {
  assert.ok(BIN, 'MNEMO_BIN must name the mnemo binary');
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-roundtrip-'));
  const first = await serve(join(dir, 'first'));
  const mf = startWorker();
  let second;
  try {
    // A store with the kinds of line an export has: memories (one in the
    // trash, one edited), a session's turns, entities, a fact.
    const w = (ns, content) => native(first, 'POST', '/memories', { body: { content }, namespace: ns });
    const falcon = await w('rt-a', 'Project Falcon ships in May; Maria Lopez leads it.');
    await w('rt-a', 'The staging database runs on Postgres 16.');
    const old = await w('rt-a', 'Alerts go to the #ops channel.');
    assert.equal((await native(first, 'DELETE', `/memories/${old.body.id}?reason=moved`, { namespace: 'rt-a' })).status, 200);
    assert.equal(
      (await native(first, 'PATCH', `/memories/${falcon.body.id}`, { body: { content: 'Project Falcon ships in June; Maria Lopez leads it.' }, namespace: 'rt-a' })).status,
      200,
    );
    await w('rt-b', 'Lunch with the design team is at noon on Fridays.');
    for (const [role, content] of [['user', 'I moved to Lisbon last spring.'], ['assistant', 'Welcome to Lisbon!']]) {
      const r = await native(first, 'POST', '/episodes', { body: { session_id: 'chat-1', role, content }, namespace: 'rt-b' });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    assert.equal((await native(first, 'POST', '/facts', { body: { subject: 'Maria', predicate: 'lives_in', object: 'Lisbon' }, namespace: 'rt-b' })).status, 201);

    // Server → edge: the whole export into the Worker, split by namespace.
    const all = await native(first, 'GET', '/export');
    assert.equal(all.status, 200);
    const imported = await call(mf, 'POST', '/import', { body: all.body, headers: { 'content-type': 'application/x-ndjson' } });
    assert.equal(imported.status, 200, JSON.stringify(imported.body));
    assert.deepEqual(imported.body.namespaces.sort(), NAMESPACES);
    const edgeLines = {};
    for (const ns of NAMESPACES) {
      await settled(mf, ns);
      const fromServer = (await native(first, 'GET', `/export?namespace=${ns}`)).body;
      const fromEdge = (await call(mf, 'GET', '/export', { namespace: ns })).body;
      assert.ok(fromServer.split('\n').length > 2, fromServer);
      assert.deepEqual(lines(fromEdge), lines(fromServer), `namespace ${ns}`);
      edgeLines[ns] = fromEdge;
    }

    // Edge → server: each namespace's export into a fresh native server.
    second = await serve(join(dir, 'second'));
    for (const ns of NAMESPACES) {
      const r = await native(second, 'POST', '/import', { body: edgeLines[ns], type: 'application/x-ndjson' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const again = (await native(second, 'GET', `/export?namespace=${ns}`)).body;
      assert.deepEqual(lines(again), lines(edgeLines[ns]), `namespace ${ns}`);
    }
  } finally {
    first.stop();
    second?.stop();
    await mf.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
