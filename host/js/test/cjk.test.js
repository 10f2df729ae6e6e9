// Chinese text through the JavaScript host: the core segments it with the
// jieba dictionary it asks its host for (the `resources` import, read from
// gen/ on the first Chinese text, not before), and the native host, which
// links the same dictionary, finds a memory this host indexed.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Mnemo } from '../src/index.js';
import { loads } from '../src/load.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

test('Chinese is segmented with the dictionary read on first use, as natively', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-js-cjk-'));
  try {
    const file = join(dir, 'memory.db');
    const m = await Mnemo.open({ file });
    await m.remember({ content: 'The weekly sync is on Tuesday.' });
    assert.equal(loads.dictionary, 0, 'no Chinese yet: the dictionary is not read');
    const saved = await m.remember({ content: '我们公司的服务器在东京的数据中心' });
    assert.equal(loads.dictionary, 1);
    const hits = (await m.recall({ query: '数据中心', dry: true })).hits;
    assert.equal(hits[0].item.val.id, saved.memory.id);
    assert.ok(hits[0].explanation.channels.some((c) => c.channel === 'fts'));
    await m.close();

    const bin = process.env.MNEMO_BIN ?? join(repo, 'target/debug/mnemo');
    assert.ok(existsSync(bin), `${bin} is missing: build the native host or set MNEMO_BIN`);
    const env = { ...process.env, MNEMO_EMBEDDER: 'hash', MNEMO_DATA_DIR: dir };
    const native = JSON.parse(execFileSync(bin, ['recall', '--db', file, '--json', '--dry', '服务器'], { env }));
    assert.equal(native.hits[0].id, saved.memory.id);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
