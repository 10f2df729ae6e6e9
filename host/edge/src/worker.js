// mnemo as a Cloudflare Worker: each request goes to its namespace's
// Durable Object (object.js), which holds that namespace's store. The
// namespace is the body's `namespace` field, else the `namespace` query
// parameter, else the `X-Namespace` header, else `default` — the native
// server's rule. Namespaces are isolated by construction: two namespaces
// are two objects, two databases.
//
// `POST /import` of an export holding several namespaces is split here:
// each object imports its namespace's lines (each in one transaction).
// `MNEMO_API_KEY` (a secret), when set, is the admin bearer key every
// route but `/health` asks for; `MNEMO_KEYS` adds keys scoped to
// namespaces (keys.js).

import { NAMESPACE, errorResponse, splitByNamespace } from './routes.js';
import { UNTOUCHED, admit, keyed, who } from './keys.js';

export { MemoryObject } from './object.js';


/// The object of `namespace`.
const objectOf = (env, namespace) => env.MEMORY.get(env.MEMORY.idFromName(namespace));

/// The namespace `request` names, read as the native server reads it
/// (undefined when it names none, or an empty one).
async function namedOf(request, url) {
  let fromBody;
  const type = request.headers.get('content-type') ?? '';
  if (['POST', 'PATCH', 'PUT'].includes(request.method) && !type.includes('ndjson') && url.pathname !== '/import') {
    try {
      const v = await request.clone().json();
      if (v && typeof v === 'object' && typeof v.namespace === 'string') fromBody = v.namespace;
    } catch {
      // Not JSON: the object answers the parse error.
    }
  }
  const ns = (fromBody || url.searchParams.get('namespace') || request.headers.get('x-namespace') || '').trim();
  return ns === '' ? undefined : ns;
}

/// Each namespace's lines to its object; the counts summed.
async function importAll(request, env) {
  const { groups, error } = splitByNamespace(await request.text());
  if (error) return errorResponse(400, 'invalid_input', error);
  const total = {};
  const namespaces = [];
  for (const [ns, lines] of groups) {
    const res = await objectOf(env, ns).fetch('https://mnemo/import', {
      method: 'POST',
      headers: { 'x-namespace': ns, 'content-type': 'application/x-ndjson' },
      body: lines.join('\n'),
    });
    if (!res.ok) {
      const body = await res.json();
      body.error.message = `namespace ${ns}: ${body.error.message}; imported before it: ${namespaces.join(', ') || 'none'}`;
      return Response.json(body, { status: res.status });
    }
    for (const [k, v] of Object.entries(await res.json())) total[k] = (total[k] ?? 0) + v;
    namespaces.push(ns);
  }
  return Response.json({ ...total, namespaces });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.delete(UNTOUCHED);
    let key = { all: true };
    if (url.pathname !== '/health' && keyed(env)) {
      try {
        key = await who(request, env);
      } catch (e) {
        return errorResponse(503, 'unavailable', String(e.message));
      }
      if (key === null) return errorResponse(401, 'unauthorized', 'a valid bearer key is required');
    }
    if (url.pathname === '/import' && request.method === 'POST' && !url.searchParams.has('namespace') && !request.headers.has('x-namespace')) {
      if (!key.all) return errorResponse(403, 'forbidden', 'an import of every namespace needs a key of every namespace');
      return importAll(request, env);
    }
    const named = await namedOf(request, url);
    if (named !== undefined && !NAMESPACE.test(named)) {
      return errorResponse(400, 'invalid_input', `namespace \`${named}\` may only contain letters, digits, \`_\`, \`-\`, \`.\` and \`:\` (at most 64)`);
    }
    const { namespace, untouched, refusal } = url.pathname === '/health' ? { namespace: named ?? 'default' } : admit(key, request.method, url.pathname, named);
    if (refusal) return refusal;
    headers.set('x-namespace', namespace);
    if (untouched) headers.set(UNTOUCHED, '1');
    return objectOf(env, namespace).fetch(new Request(request, { headers }));
  },
};
