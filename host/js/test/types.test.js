// The TypeScript declarations (src/index.d.ts) compile against a typed use
// of the API (test/types/example.ts) under `strict`.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

test('the TypeScript declarations type-check a use of the API', () => {
  const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
  const project = fileURLToPath(new URL('./types/tsconfig.json', import.meta.url));
  const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
