// What the JavaScript host costs: the same 10k-memory corpus as `mnemo
// bench` (its xorshift word generator, seed 42), remembered and recalled in
// Node (jco, SQLite in WASM) and by the native host (`mnemo-lab bench --json`,
// wasmtime over SQLite with sqlite-vec), plus the core component's size.
// Prints one table. Usage (from host/js, after `npm run build`):
//
//   node bench/bench.mjs [--memories 10000] [--queries 300] [--writes 1000]
//
// MNEMO_LAB_BIN names the lab binary (default: target/release/mnemo-lab).

import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { Mnemo, drivenClock } from '../src/index.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const MEMORIES = arg('memories', 10_000);
const QUERIES = arg('queries', 300);
const WRITES = arg('writes', 1_000);

/// `mnemo-lab bench`'s corpus (lab/src/bench/mod.rs): xorshift64 over a
/// fixed syllable vocabulary, Zipf-ish word choice.
class Corpus {
  constructor(seed) {
    const S = ['ka', 'lo', 'mi', 'ren', 'tor', 'vel', 'sa', 'dun', 'pri', 'mo', 'zen', 'tal', 'qui', 'bra', 'nor', 'fi'];
    this.words = [];
    for (const a of S) for (const b of S) for (const c of ['', 'n', 's', 'ra']) this.words.push(`${a}${b}${c}`);
    this.state = BigInt(Math.max(seed, 1));
  }
  next() {
    const M = 0xffffffffffffffffn;
    this.state ^= (this.state << 13n) & M;
    this.state ^= this.state >> 7n;
    this.state ^= (this.state << 17n) & M;
    return this.state;
  }
  word() {
    const r = Number(this.next() % 1_000_000n) / 1_000_000;
    const i = Math.max(Math.floor(this.words.length ** r) - 1, 0);
    return this.words[Math.min(i, this.words.length - 1)];
  }
  sentence(min, max) {
    const n = min + Number(this.next() % BigInt(max - min + 1));
    return Array.from({ length: n }, () => this.word()).join(' ');
  }
}

const p = (sorted, q) => sorted[Math.round((sorted.length - 1) * q)];

async function node() {
  const m = await Mnemo.open({ clock: drivenClock(1_790_000_000_000), ner: true });
  const corpus = new Corpus(42);
  let t = performance.now();
  for (let i = 0; i < WRITES; i++) {
    await m.ingest({ sessionId: `s${Math.floor(i / 20)}`, role: i % 2 ? 'assistant' : 'user', content: corpus.sentence(8, 24) });
  }
  const ingest = WRITES / ((performance.now() - t) / 1000);
  await m.flush();
  t = performance.now();
  for (let i = 0; i < WRITES; i++) await m.remember({ content: corpus.sentence(8, 24) });
  const remember = WRITES / ((performance.now() - t) / 1000);
  for (let i = 0; i < MEMORIES - WRITES; i++) await m.remember({ content: corpus.sentence(8, 24), skipDedup: true });
  await m.flush();
  const queries = Array.from({ length: QUERIES }, () => corpus.sentence(2, 4));
  const times = [];
  for (const q of queries) {
    t = performance.now();
    await m.recall({ query: q, dry: true });
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const active = (await m.stats()).active;
  const heap = process.memoryUsage();
  await m.close();
  return { ingest, remember, p50: p(times, 0.5), p95: p(times, 0.95), active, rss: heap.rss };
}

function native() {
  const bin = process.env.MNEMO_LAB_BIN ?? join(repo, 'target/release/mnemo-lab');
  const rows = JSON.parse(
    execFileSync(bin, ['bench', '--json', '--memories', String(MEMORIES), '--queries', String(QUERIES), '--writes', String(WRITES)], {
      env: { ...process.env, MNEMO_EMBEDDER: 'hash' },
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 24,
    }),
  );
  const find = (re) => rows.find((r) => re.test(r.figure))?.value ?? '?';
  return {
    ingest: find(/^ingest throughput/),
    remember: find(/^remember throughput/),
    p50: find(/p50 \(component, exact vectors\)/),
    p95: find(/p95 \(component, exact vectors\)/),
  };
}

function sizes() {
  const wasm = join(repo, 'target/guest/wasm32-wasip2/release/mnemo_core.wasm');
  const raw = readFileSync(wasm);
  const gen = join(repo, 'host/js/gen/core');
  const transpiled = readdirSync(gen)
    .filter((f) => f.endsWith('.wasm') || f.endsWith('.js'))
    .map((f) => readFileSync(join(gen, f)));
  const dict = readFileSync(join(repo, 'core/data/jieba-dict.txt'));
  return {
    dict: dict.length,
    dictGzip: gzipSync(dict, { level: 9 }).length,
    raw: statSync(wasm).size,
    gzip: gzipSync(raw, { level: 9 }).length,
    transpiled: transpiled.reduce((n, b) => n + b.length, 0),
    transpiledGzip: transpiled.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0),
  };
}

const js = await node();
const nat = native();
const size = sizes();
const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;
const rows = [
  ['ingest (episodes, one commit each)', `${nat.ingest} turns/s`, `${js.ingest.toFixed(0)} turns/s`],
  ['remember (dedup + embed + insert, hash embedder)', `${nat.remember} mem/s`, `${js.remember.toFixed(0)} mem/s`],
  [`recall at ${js.active} memories: p50 (dry, limit 10, exact vectors)`, `${nat.p50} ms`, `${js.p50.toFixed(3)} ms`],
  [`recall at ${js.active} memories: p95`, `${nat.p95} ms`, `${js.p95.toFixed(3)} ms`],
  ['core component (mnemo_core.wasm): raw / gzip -9', `${kib(size.raw)} / ${kib(size.gzip)}`, 'same file'],
  ['transpiled core (gen/core: .wasm + .js): raw / gzip -9', '—', `${kib(size.transpiled)} / ${kib(size.transpiledGzip)}`],
  ['jieba dictionary beside it (read on the first Chinese text): raw / gzip -9', 'linked in the binary', `${kib(size.dict)} / ${kib(size.dictGzip)}`],
  ['Node process RSS after the run', '—', `${(js.rss / 2 ** 20).toFixed(0)} MiB`],
];
console.log('| figure | native host (wasmtime) | JavaScript host (Node, jco) |');
console.log('|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
