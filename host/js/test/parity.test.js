// Same core, same answers: a LoCoMo dev conversation (tests/fixtures/
// locomo-conv-26.json) through the native host (`mnemo-lab eval locomo --out`,
// the hash embedder, a driven clock) and through this host (the same
// ingestion and questions, the same clock): every question's top 10 must be
// the same turns in the same order with the same scores, to the last bit of
// their f32.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Mnemo, drivenClock } from '../src/index.js';
import { askSamples, ingestSamples } from './support/locomo.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURE = join(repo, 'tests/fixtures/locomo-conv-26.json');
/// The time both hosts run at (2026-09-21).
const AT = 1_790_000_000_000;

test('recall ranks a LoCoMo conversation exactly as the native host does', async () => {
  const bin = process.env.MNEMO_LAB_BIN ?? join(repo, 'target/debug/mnemo-lab');
  assert.ok(existsSync(bin), `${bin} is missing: build the lab (cargo build -p mnemo-lab) or set MNEMO_LAB_BIN`);
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-parity-'));
  try {
    const out = join(dir, 'native.jsonl');
    execFileSync(bin, ['eval', 'locomo', '--data', FIXTURE, '--out', out, '--at', String(AT)], {
      env: { ...process.env, MNEMO_EMBEDDER: 'hash', MNEMO_DATA_DIR: dir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const native = readFileSync(out, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));

    const samples = JSON.parse(readFileSync(FIXTURE, 'utf8'));
    const m = await Mnemo.open({ clock: drivenClock(AT) });
    await ingestSamples(m, samples);
    await m.flush();
    const js = await askSamples(m, samples, 10);
    await m.close();

    assert.ok(native.length >= 150, `the native run answered ${native.length} questions`);
    assert.equal(js.length, native.length);
    let scored = 0;
    for (const [i, n] of native.entries()) {
      assert.equal(js[i].qid, n.qid);
      assert.deepEqual(js[i].ranked, n.ranked, `${n.qid}: the ranking differs`);
      // serde writes an f32 in its shortest form: compare as f32.
      assert.deepEqual(js[i].scores.map(Math.fround), n.scores.map(Math.fround), `${n.qid}: the scores differ`);
      scored += n.ranked.length;
    }
    assert.ok(scored >= native.length * 9, `only ${scored} hits were compared`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
