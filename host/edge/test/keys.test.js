// Scoped keys at the edge (issue 77), the server's rule (tests/it/sharing.rs):
// what the operator keeps in `default` reaches no tenant's key — named,
// implicit or empty namespace, every read route — another tenant's
// namespace and `default` are refused, a key's read list reads and never
// writes, and a read by a key that may not write reinforces nothing.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';

import { call, startWorker } from './support.js';

const OPERATOR = 'edge-operator-secret';
const NOTE = 'The staging database password is hunter2-zebra';
const KEYS = {
  b: { role: 'write', namespaces: ['tenant-b'], reads: [] },
  reader: { role: 'read', namespaces: ['tenant-b'], reads: [] },
  c: { role: 'write', namespaces: ['tenant-c'], reads: ['default'] },
};
const secret = (name) => `mnemo_edge${name}_secret-of-${name}`;
const sha256 = (s) => createHash('sha256').update(s).digest('hex');
const bindings = {
  MNEMO_API_KEY: OPERATOR,
  MNEMO_KEYS: JSON.stringify(Object.entries(KEYS).map(([name, k]) => ({ name, sha256: sha256(secret(name)), ...k }))),
};

const as = (who, extra = {}) => ({ ...extra, headers: { authorization: `Bearer ${who === 'operator' ? OPERATOR : secret(who)}` } });

test("a tenant's key reads nothing of default and reinforces only what it writes", async () => {
  const mf = startWorker({ bindings });
  try {
    const note = await call(mf, 'POST', '/memories', as('operator', { body: { content: NOTE }, namespace: 'default' }));
    assert.equal(note.status, 201, JSON.stringify(note.body));
    const own = await call(mf, 'POST', '/memories', as('b', { body: { content: 'Tenant b ships its roadmap in March' } }));
    assert.equal(own.status, 201, JSON.stringify(own.body));
    assert.equal(own.body.namespace, 'tenant-b', 'no namespace named: the key\'s own');

    const ask = { query: 'staging database password' };
    for (const [what, r] of [
      ['recall in another tenant', await call(mf, 'POST', '/recall', as('b', { body: ask, namespace: 'tenant-a' }))],
      ['listing default', await call(mf, 'GET', '/memories?namespace=default', as('b'))],
      ['writing default with a read list', await call(mf, 'POST', '/memories', as('c', { body: { content: 'x y z' }, namespace: 'default' }))],
      ['a read key writing', await call(mf, 'POST', '/memories', as('reader', { body: { content: 'x y z' } }))],
      ['importing every namespace', await call(mf, 'POST', '/import', as('b', { body: '' }))],
    ]) {
      assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'forbidden', what);
    }
    assert.equal((await call(mf, 'GET', '/stats', { namespace: 'tenant-b' })).status, 401, 'no key');

    const asks = [
      ['recall, no namespace', 'POST', '/recall', { body: ask }],
      ['recall, empty namespace', 'POST', '/recall', { body: { ...ask, namespace: '' } }],
      ['recall in tenant-b', 'POST', '/recall', { body: ask, namespace: 'tenant-b' }],
      ['list', 'GET', '/memories', {}],
      ['list, empty namespace', 'GET', '/memories?namespace=', {}],
      ['search', 'GET', '/search?q=password', {}],
      ['context', 'POST', '/context', { body: { prompt: 'what is the staging database password?' } }],
      ['resume', 'GET', '/resume?context=password', {}],
      ['trash', 'GET', '/trash', {}],
      ['stats', 'GET', '/stats', {}],
    ];
    for (const [what, method, path, opts] of asks) {
      const r = await call(mf, method, path, as('b', opts));
      assert.ok(r.status < 300, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.ok(!JSON.stringify(r.body).includes('hunter2'), `${what} shows default's note: ${JSON.stringify(r.body)}`);
    }

    // A read list reads default where it is, and reinforces nothing there.
    const seen = await call(mf, 'POST', '/recall', as('c', { body: ask, namespace: 'default' }));
    assert.ok(JSON.stringify(seen.body).includes('hunter2'), JSON.stringify(seen.body));
    const accesses = async (ns, id) => (await call(mf, 'GET', `/memories/${id}`, as('operator', { namespace: ns }))).body.access_count;
    assert.equal(await accesses('default', note.body.id), 0, 'a read-only namespace is not reinforced');

    // The owner's recall is recorded; a read key's is not.
    const roadmap = { query: 'roadmap in March' };
    await call(mf, 'POST', '/recall', as('b', { body: roadmap }));
    const after = await accesses('tenant-b', own.body.id);
    assert.ok(after >= 1, `the owner's recall counts: ${after}`);
    const read = await call(mf, 'POST', '/recall', as('reader', { body: roadmap }));
    assert.ok(JSON.stringify(read.body).includes(own.body.id), JSON.stringify(read.body));
    assert.equal(await accesses('tenant-b', own.body.id), after, "a read key's recall is no write");

    // The positive control: the operator reads the note where it is.
    const control = await call(mf, 'POST', '/recall', as('operator', { body: ask, namespace: 'default' }));
    assert.ok(JSON.stringify(control.body).includes('hunter2'));
  } finally {
    await mf.dispose();
  }
});
