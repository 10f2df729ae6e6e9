// In Node a memory lives in a SQLite file: written after each write, opened
// again by the next run — and by the native host, which reads the same
// schema (its own vectors are rebuilt: it cannot read this host's).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Mnemo, MnemoError } from '../src/index.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

test('a memory saved to a file opens again, in this host and in the native one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-js-file-'));
  try {
    const file = join(dir, 'memory.db');
    const m = await Mnemo.open({ file });
    const kept = await m.remember({ content: 'The release train leaves every second Tuesday.' });
    await m.remember({ content: 'Grafana dashboards live in the ops folder.' });
    await m.delete(kept.memory.id, 'superseded by the new schedule');
    await m.close();
    assert.ok(existsSync(file));

    const again = await Mnemo.open({ file });
    const s = await again.stats();
    assert.equal(s.active, 1n);
    assert.equal(s.deleted, 1n);
    assert.equal((await again.list({ deleted: true }))[0].invalidReason, 'superseded by the new schedule');
    const hits = (await again.recall('where are the grafana dashboards')).hits;
    assert.equal(hits[0].item.val.content, 'Grafana dashboards live in the ops folder.');
    await again.close();

    const bin = process.env.MNEMO_BIN ?? join(repo, 'target/debug/mnemo');
    assert.ok(existsSync(bin), `${bin} is missing: build the native host or set MNEMO_BIN`);
    const env = { ...process.env, MNEMO_EMBEDDER: 'hash', MNEMO_DATA_DIR: dir };
    const listed = JSON.parse(execFileSync(bin, ['list', '--db', file, '--deleted', '--json'], { env }));
    assert.deepEqual(
      listed.map((x) => x.id),
      [kept.memory.id],
    );
    const native = JSON.parse(execFileSync(bin, ['recall', '--db', file, '--json', 'grafana dashboards'], { env }));
    assert.equal(native.hits[0].content, 'Grafana dashboards live in the ops folder.');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad input is a typed error and the memory keeps serving', async () => {
  const m = await Mnemo.open();
  await m.remember('Keep this one.');
  for (const bad of [{ content: '' }, { content: 42 }, { content: 'x', kind: 'gossip' }, { content: 'x', importance: 'high' }, null]) {
    await assert.rejects(m.remember(bad), (e) => e instanceof MnemoError && e.kind === 'invalid-input', JSON.stringify(bad));
  }
  await assert.rejects(m.recall({ query: 'x', limit: -1 }), (e) => e.kind === 'invalid-input');
  await assert.rejects(m.get('mem_nope'), (e) => e.kind === 'not-found');
  await assert.rejects(m.import('{"kind":"memory"}\nnot json'), (e) => e.kind === 'invalid-input');
  assert.equal((await m.stats()).active, 1n);
  assert.equal((await m.recall('keep')).hits.length, 1);
  await m.close();
  await assert.rejects(
    Mnemo.open({ llm: { provider: 'gpt-from-nowhere', baseUrl: 'http://127.0.0.1:9', model: 'm' } }),
    (e) => e.kind === 'invalid-input' && /openai, anthropic, ollama/.test(e.message),
  );
});
