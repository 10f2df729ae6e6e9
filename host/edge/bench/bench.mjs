// The Worker measured in workerd on this machine (miniflare's API, the
// bundle of scripts/build.mjs): an object's cold start, recall latency at
// several store sizes, the bundle's size and the runtime's memory. Prints
// a markdown table.
//
//   node bench/bench.mjs [--sizes 1000,10000] [--queries 200] [--data ../../../shared/data/locomo-dev.json]
//
// Memories are LoCoMo dev turns (as many as there are, then the same turns
// numbered), written through `POST /import` in chunks, embedded by the
// object's alarm (hash embedder), then recalled with the set's questions
// one at a time; latency is the client's, through miniflare's loopback.

import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { call, settled, startWorker } from '../test/support.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    queries: { type: 'string', default: '200' },
    data: { type: 'string', default: fileURLToPath(new URL('../../../../shared/data/locomo-dev.json', import.meta.url)) },
  },
});
const sizes = values.sizes.split(',').map(Number);
const queryCount = Number(values.queries);
/// Lines per import request.
const IMPORT_CHUNK = 1000;
/// Fresh objects whose first request is timed.
const COLD_OBJECTS = 10;

const data = JSON.parse(readFileSync(values.data, 'utf8'));
const turns = [];
const questions = [];
for (const sample of data) {
  for (const [k, v] of Object.entries(sample.conversation)) {
    if (Array.isArray(v)) for (const t of v) turns.push(`${t.speaker}: ${t.text}`);
  }
  for (const qa of sample.qa) if (typeof qa.question === 'string') questions.push(qa.question);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => x.toFixed(1);

/// Resident memory of the workerd processes, in MiB.
function workerdRss() {
  try {
    const out = execFileSync('ps', ['-C', 'workerd', '-o', 'rss='], { encoding: 'utf8' });
    return out.split('\n').filter(Boolean).reduce((a, x) => a + Number(x), 0) / 1024;
  } catch {
    return NaN;
  }
}

/// A memory line of the export format for text `content`, numbered `i`.
function line(template, i, content) {
  const id = `mem_${i.toString(16).padStart(25, '0')}`;
  return JSON.stringify({ kind: 'memory', memory: { ...template, id, content } });
}

const rows = [];
const mf = startWorker();
try {
  // The runtime's first request loads the bundle; each new object then
  // instantiates the core and its plugins and migrates its database.
  let t = performance.now();
  await call(mf, 'GET', '/stats', { namespace: 'cold-0' });
  const firstEver = performance.now() - t;
  const cold = [];
  const warm = [];
  for (let i = 1; i <= COLD_OBJECTS; i++) {
    t = performance.now();
    await call(mf, 'GET', '/stats', { namespace: `cold-${i}` });
    cold.push(performance.now() - t);
    t = performance.now();
    await call(mf, 'GET', '/stats', { namespace: `cold-${i}` });
    warm.push(performance.now() - t);
  }
  rows.push(['first request of a new runtime (bundle loaded, object opened)', `${ms(firstEver)} ms`]);
  rows.push([`a new object's first request, p50 of ${COLD_OBJECTS}`, `${ms(pct(cold, 50))} ms (the next request ${ms(pct(warm, 50))} ms)`]);

  let rss = workerdRss();
  rows.push([`workerd resident memory with ${COLD_OBJECTS + 1} empty objects open`, `${rss.toFixed(0)} MiB`]);
  const seed = await call(mf, 'POST', '/memories', { body: { content: 'template' }, namespace: 'template' });
  const { created, dedup_reason: _d, similarity: _s, ...template } = seed.body;
  for (const n of sizes) {
    const ns = `bench-${n}`;
    t = performance.now();
    for (let from = 0; from < n; from += IMPORT_CHUNK) {
      const lines = [];
      for (let i = from; i < Math.min(n, from + IMPORT_CHUNK); i++) {
        const text = i < turns.length ? turns[i] : `${turns[i % turns.length]} (${Math.floor(i / turns.length)})`;
        lines.push(line({ ...template, namespace: ns }, i + 1, text));
      }
      const r = await call(mf, 'POST', '/import', { body: lines.join('\n'), namespace: ns, headers: { 'content-type': 'application/x-ndjson' } });
      if (r.status !== 200) throw new Error(`import: ${r.status} ${JSON.stringify(r.body)}`);
    }
    await settled(mf, ns, 600_000);
    const filled = performance.now() - t;
    const lat = [];
    for (let q = 0; q < queryCount; q++) {
      const query = questions[q % questions.length];
      t = performance.now();
      const r = await call(mf, 'POST', '/recall', { body: { query, limit: 10 }, namespace: ns });
      lat.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`recall: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const health = (await call(mf, 'GET', '/health', { namespace: ns })).body;
    rows.push([
      `recall at ${n.toLocaleString('en')} memories, p50 / p95 (${queryCount} queries)`,
      `${ms(pct(lat, 50))} / ${ms(pct(lat, 95))} ms`,
    ]);
    const now = workerdRss();
    rows.push([
      `${n.toLocaleString('en')} memories imported and embedded`,
      `${(filled / 1000).toFixed(1)} s; database ${(health.database_bytes / 1024 / 1024).toFixed(1)} MiB; workerd memory +${(now - rss).toFixed(0)} MiB`,
    ]);
    rss = now;
  }
} finally {
  await mf.dispose();
}
const size = JSON.parse(readFileSync(new URL('../dist/size.json', import.meta.url), 'utf8'));
const wasmModules = readdirSync(fileURLToPath(new URL('../dist/', import.meta.url))).filter((f) => f.endsWith('.wasm')).length;
rows.push([
  `bundle (dist/: worker.js, ${wasmModules} WASM modules, the CJK dictionary)`,
  `${(size.raw / 1024 / 1024).toFixed(2)} MiB, ${(size.gzip / 1024 / 1024).toFixed(2)} MiB gzipped`,
]);

console.log('| measure | workerd on this machine |\n|---|---|');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
