// The Python package's HTTP client (`mnemo.Client`, python/) against the
// Worker, served by workerd on 127.0.0.1: an agent written in Python
// reaches the edge with the client it uses for `mnemo serve`, typed
// results and typed errors included. `MNEMO_PYTHON` names a Python with
// the package installed (CI: python/run's venv, target/python-venv).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { startWorker } from './support.js';

const venv = fileURLToPath(new URL('../../../target/python-venv/bin/python', import.meta.url));
const PYTHON = process.env.MNEMO_PYTHON ?? (existsSync(venv) ? venv : undefined);

const SCRIPT = `
import sys, time
import mnemo
from mnemo import Client

c = Client(sys.argv[1]).in_namespace("py-agent")
w = c.remember("The user's daughter Lily is allergic to peanuts.")
assert w["created"] is True, w
c.remember("The user runs three times a week.")
for _ in range(100):
    if c.recall("peanut allergy")["hits"]:
        break
    time.sleep(0.05)
hits = c.recall("peanut allergy")["hits"]
assert hits[0]["item"]["id"] == w["id"], hits
assert "peanuts" in c.context("is Lily allergic to anything?")["text"]
assert c.get(w["id"])["content"].endswith("peanuts.")
assert len(c.list_memories()["memories"]) == 2
assert c.edit(w["id"], content="Lily is allergic to peanuts and sesame.")["content"].endswith("sesame.")
assert [v["memory"]["content"] for v in c.history(w["id"])["versions"]] == ["The user's daughter Lily is allergic to peanuts."]
assert c.forget(w["id"])["valid_until"] is not None
assert c.restore(w["id"])["valid_until"] is None
assert "Lily" in c.resume()["text"]
assert c.stats()["active"] == 2
try:
    c.get("mem_missing")
    raise SystemExit("no error")
except mnemo.NotFound as e:
    assert e.code == "not_found"
try:
    c.remember("   ")
    raise SystemExit("no error")
except mnemo.InvalidInput:
    pass
print("ok")
`;

test('the Python client drives the Worker over HTTP', { skip: !PYTHON && !process.env.CI && 'no Python with the mnemo package' }, async () => {
  assert.ok(PYTHON, 'MNEMO_PYTHON (or target/python-venv) must hold the mnemo package');
  const mf = startWorker({ port: 0 });
  try {
    const url = String(await mf.ready).replace(/\/$/, '');
    // Run from a folder without python/mnemo/ in it: the installed package.
    const r = spawnSync(PYTHON, ['-c', SCRIPT, url], { encoding: 'utf8', cwd: tmpdir(), timeout: 120_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /ok/);
  } finally {
    await mf.dispose();
  }
});
