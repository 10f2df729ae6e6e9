// mnemo's HTTP API inside one Durable Object (one namespace): the routes
// an agent uses, with the native server's paths, JSON fields (snake_case)
// and errors (`{"error": {"code", "message"}}` with its status). Each
// route is one call of the JavaScript host's `Mnemo`, whose results are
// jco records: `wire` writes them as the native server's serde does.

import { MnemoError } from '../../js/src/index.js';
import { FORMAT, fromWire, toWire } from '../../js/src/transfer.js';

/// The native rule for a namespace (`core/src/validate.rs`,
/// `thresholds::NAMESPACE_PATTERN`).
export const NAMESPACE = /^[A-Za-z0-9_.:-]{0,64}$/;

/// Largest request body read (the native server's default body limit).
export const MAX_BODY_BYTES = 2 * 1024 * 1024;
/// Largest import body (the native server's `MAX_IMPORT_BYTES`).
export const MAX_IMPORT_BYTES = 64 * 1024 * 1024;
/// Default page of `GET /memories` and `/trash` (the native server's).
const LIST_LIMIT = 50;
/// Default hits of `GET /search` (a quick search).
const SEARCH_LIMIT = 5;

/// The HTTP status and code of each error of the engine (the native
/// server's `error.rs`).
const STATUS = {
  'invalid-input': [400, 'invalid_input'],
  'not-found': [404, 'not_found'],
  conflict: [409, 'conflict'],
  unavailable: [503, 'unavailable'],
  storage: [500, 'storage'],
  embedding: [503, 'embedding'],
  llm: [503, 'llm'],
  ner: [500, 'ner'],
  trap: [500, 'internal'],
};

export function errorResponse(status, code, message) {
  return Response.json({ error: { code, message } }, { status });
}

/// A jco record as the native server's JSON: snake_case, numbers for
/// BigInts, and a variant (`{ tag, val }`) as serde's internally tagged
/// enum (`{ "type": tag, ...val }`).
export function wire(v) {
  const out = toWire(v);
  const untag = (x) => {
    if (Array.isArray(x)) return x.map(untag);
    if (x && typeof x === 'object') {
      const keys = Object.keys(x);
      if (keys.length === 2 && 'tag' in x && x.val && typeof x.val === 'object' && !Array.isArray(x.val)) {
        return { type: x.tag, ...untag(x.val) };
      }
      return Object.fromEntries(keys.map((k) => [k, untag(x[k])]));
    }
    return x;
  };
  return untag(out);
}

const ok = (v, status = 200) => Response.json(wire(v), { status });
const csv = (v) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : []);

function int(params, name, fallback) {
  const v = params.get(name);
  if (v === null) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new MnemoError('invalid-input', `\`${name}\` must be a whole number ≥ 0`);
  return n;
}

/// The JSON object of a request body (an empty body is `{}` where allowed).
async function body(request, { optional = false } = {}) {
  const text = await request.text();
  if (text.length > MAX_BODY_BYTES) throw new HttpError(413, 'payload_too_large', 'the body is too large');
  if (text.trim() === '') {
    if (optional) return {};
    throw new HttpError(400, 'malformed_json', 'malformed JSON: the body is empty');
  }
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, 'malformed_json', `malformed JSON: ${e.message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(422, 'invalid_request', 'the body must be a JSON object');
  // The native fields as the JavaScript API names and types them (the
  // export reader's conversion: times as BigInts, attributes as text).
  return fromWire(v);
}

export class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/// The routes: [method, pattern, handler(mnemo, ctx)] where ctx has
/// `request`, `url`, `params` (the pattern's `{id}`), `namespace`,
/// `untouched` (the key may not write it: nothing read is reinforced).
const ROUTES = [
  ['POST', '/memories', async (m, c) => {
    const out = await m.remember({ ...(await body(c.request)), namespace: c.namespace });
    const { memory, created, dedupReason, similarity } = out;
    return ok({ ...memory, created, dedupReason, similarity }, created ? 201 : 200);
  }],
  ['GET', '/memories', (m, c) => listing(m, c, false)],
  ['GET', '/trash', (m, c) => listing(m, c, true)],
  ['GET', '/memories/{id}', async (m, c) => ok(await m.get(c.params.id, c.namespace))],
  ['PATCH', '/memories/{id}', async (m, c) => ok(await m.update(c.params.id, await body(c.request), c.namespace))],
  ['DELETE', '/memories/{id}', async (m, c) =>
    ok(await m.delete(c.params.id, c.url.searchParams.get('reason') ?? 'deleted via API', c.namespace))],
  ['POST', '/memories/{id}/restore', async (m, c) => ok(await m.restore(c.params.id, c.namespace))],
  ['GET', '/memories/{id}/history', async (m, c) => {
    const memory = await m.get(c.params.id, c.namespace);
    return ok({ memory, versions: await m.history(c.params.id, c.namespace) });
  }],
  ['POST', '/recall', async (m, c) =>
    ok(await m.recall({ ...(await body(c.request)), namespace: c.namespace }, { untouched: c.untouched }))],
  ['GET', '/search', async (m, c) => {
    const q = c.url.searchParams.get('q') ?? '';
    return ok(await m.recall({ query: q, namespace: c.namespace, limit: int(c.url.searchParams, 'limit', SEARCH_LIMIT), dry: true }));
  }],
  ['POST', '/episodes', async (m, c) => ok(await m.ingest({ ...(await body(c.request)), namespace: c.namespace }), 201)],
  ['POST', '/context', async (m, c) => {
    const b = await body(c.request);
    if (typeof b.prompt !== 'string') throw new MnemoError('invalid-input', '`prompt` is required');
    return ok(await m.context(b.prompt, { namespace: c.namespace, sessionId: b.sessionId, limit: b.limit ?? 0, untouched: c.untouched }));
  }],
  ['GET', '/resume', async (m, c) => {
    const p = c.url.searchParams;
    return ok(await m.resume({ namespace: c.namespace, hours: int(p, 'hours', 0), context: p.get('context') ?? undefined, untouched: c.untouched }));
  }],
  ['POST', '/consolidate', async (m, c) => ok(await m.consolidate({ ...(await body(c.request, { optional: true })), namespace: c.namespace }))],
  ['GET', '/stats', async (m, c) => {
    const stats = await m.stats(c.namespace);
    return ok({ ...stats, total: stats.active });
  }],
  ['POST', '/facts', async (m, c) => ok(await m.addFact({ ...(await body(c.request)), namespace: c.namespace }), 201)],
  ['GET', '/facts', async (m, c) => {
    const p = c.url.searchParams;
    const q = { namespaces: [c.namespace] };
    for (const k of ['subject', 'predicate', 'object', 'entity']) if (p.has(k)) q[k] = p.get(k);
    return ok(await m.queryFacts(q));
  }],
  ['GET', '/export', async (m, c) => {
    const lines = await m.export({ namespace: c.namespace, vectors: c.url.searchParams.get('vectors') === 'true' });
    return new Response(lines.map((l) => `${l}\n`).join(''), { headers: { 'content-type': 'application/x-ndjson' } });
  }],
  ['POST', '/import', async (m, c) => {
    const text = await c.request.text();
    if (text.length > MAX_IMPORT_BYTES) throw new HttpError(413, 'payload_too_large', 'the import is too large');
    // An object holds one namespace: lines of another are refused.
    const { groups, error } = splitByNamespace(text);
    if (error) throw new MnemoError('invalid-input', error);
    const others = [...groups.keys()].filter((ns) => ns !== c.namespace);
    if (others.length) {
      throw new MnemoError('invalid-input', `this import holds other namespaces than \`${c.namespace}\`: ${others.join(', ')}`);
    }
    return ok(await m.import(text));
  }],
];

/// An export's lines grouped by namespace, the header line first in
/// each: `{ groups }`, or `{ error }` for a line that is not an item.
export function splitByNamespace(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const groups = new Map();
  let header;
  for (const [i, line] of lines.entries()) {
    let v;
    try {
      v = JSON.parse(line);
    } catch {
      return { error: `line ${i + 1}: not JSON` };
    }
    if (i === 0 && v && v.kind === FORMAT) {
      header = line;
      continue;
    }
    const item = v && (v.memory ?? v.episode ?? v.session ?? v.entity ?? v.fact ?? v.version);
    const ns = item && typeof item.namespace === 'string' ? item.namespace : undefined;
    if (ns === undefined) return { error: `line ${i + 1}: not an export item with a namespace` };
    if (!NAMESPACE.test(ns)) return { error: `line ${i + 1}: \`${ns}\` is not a namespace` };
    if (!groups.has(ns)) groups.set(ns, header ? [header] : []);
    groups.get(ns).push(line);
  }
  return { groups };
}

async function listing(m, c, deleted) {
  const p = c.url.searchParams;
  const memories = await m.list({
    namespace: c.namespace,
    layers: csv(p.get('layer')),
    kinds: csv(p.get('kind')),
    tags: csv(p.get('tag')),
    deleted,
    limit: int(p, 'limit', LIST_LIMIT),
    offset: int(p, 'offset', 0),
  });
  return ok({ memories });
}

/// `path` against `pattern` (`/memories/{id}`): the parameters, or null.
function match(pattern, path) {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const params = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith('{')) {
      if (!b[i]) return null;
      params[a[i].slice(1, -1)] = decodeURIComponent(b[i]);
    } else if (a[i] !== b[i]) return null;
  }
  return params;
}

/// The route of `method` and `path`: `{ handler, params }`, `'method'`
/// when the path exists under another method, or null.
export function route(method, path) {
  let other = false;
  for (const [m, pattern, handler] of ROUTES) {
    const params = match(pattern, path);
    if (!params) continue;
    if (m === method) return { handler, params };
    other = true;
  }
  return other ? 'method' : null;
}

/// Answers `request` for `namespace` with `mnemo`; every failure is a
/// JSON error with its status.
/// The header the Worker's key check sets on a read whose key may not
/// write the namespace.
export const UNTOUCHED = 'x-mnemo-untouched';

export async function serve(mnemo, request, namespace) {
  const url = new URL(request.url);
  const found = route(request.method, url.pathname);
  if (found === null) return errorResponse(404, 'not_found', `no route ${request.method} ${url.pathname}`);
  if (found === 'method') return errorResponse(405, 'method_not_allowed', `${request.method} is not allowed on ${url.pathname}`);
  try {
    // Set by the Worker's key check only (keys.js): it removes a client's.
    const untouched = request.headers.get(UNTOUCHED) === '1';
    return await found.handler(mnemo, { request, url, params: found.params, namespace, untouched });
  } catch (e) {
    if (e instanceof HttpError) return errorResponse(e.status, e.code, e.message);
    if (e instanceof MnemoError) {
      const [status, code] = STATUS[e.kind] ?? [500, 'internal'];
      return errorResponse(status, code, e.message);
    }
    return errorResponse(500, 'internal', String(e && e.message ? e.message : e));
  }
}
