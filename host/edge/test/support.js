// The Worker in workerd, through miniflare's API: dist/ (scripts/build.mjs)
// with its Durable Objects on SQLite, persisted under a directory when
// asked (so an object can be evicted and opened again from its storage).

import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Miniflare } from 'miniflare';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));

/// The compatibility date the Worker is written for (wrangler.toml's).
export const COMPATIBILITY_DATE = '2026-07-01';

/// The bundle's modules, named as worker.js imports them (the Worker
/// imports its WASM compiled and its dictionary as text).
const TYPES = { '.js': 'ESModule', '.wasm': 'CompiledWasm', '.txt': 'Text' };
const MODULES = readdirSync(dist)
  .filter((f) => Object.keys(TYPES).some((ext) => f.endsWith(ext)))
  .sort((a, b) => (a === 'worker.js' ? -1 : b === 'worker.js' ? 1 : a.localeCompare(b)))
  .map((f) => ({ type: TYPES[f.slice(f.lastIndexOf('.'))], path: `${dist}${f}` }));

/// A running Worker; `bindings` are its vars and secrets; `port`: also
/// served over HTTP on 127.0.0.1 (0: a free port; `await mf.ready` is its URL).
export function startWorker({ bindings = {}, persist, port } = {}) {
  return new Miniflare({
    ...(port === undefined ? {} : { host: '127.0.0.1', port }),
    modules: MODULES,
    modulesRoot: dist,
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: { MEMORY: { className: 'MemoryObject', useSQLite: true } },
    durableObjectsPersist: persist ?? false,
    bindings,
  });
}

/// `fetch` on the Worker with a JSON body and namespace header; answers
/// `{ status, body }` (the body parsed when it is JSON).
export async function call(mf, method, path, { body, namespace, headers = {} } = {}) {
  const h = { ...headers };
  if (namespace !== undefined) h['x-namespace'] = namespace;
  let payload;
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    h['content-type'] ??= 'application/json';
  }
  const res = await mf.dispatchFetch(`http://mnemo.test${path}`, { method, headers: h, body: payload });
  const text = await res.text();
  let parsed = text;
  if ((res.headers.get('content-type') ?? '').includes('application/json')) parsed = JSON.parse(text);
  return { status: res.status, body: parsed };
}

/// Waits until the namespace's object has embedded every row.
export async function settled(mf, namespace, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(mf, 'GET', '/health', { namespace });
    if (r.status === 200 && r.body.missing_vectors === 0) return r.body;
    if (Date.now() > until) throw new Error(`namespace ${namespace} did not settle: ${JSON.stringify(r.body)}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}
