// Scoped keys at the edge (issue 77): the native server's rule
// (host/src/server/access.rs, docs/guide/multi-tenant.md) over keys the
// operator lists in the secret `MNEMO_KEYS`, a JSON array of
//
//   {"name": "acme", "sha256": "<hex SHA-256 of the key>", "role": "write",
//    "namespaces": ["acme"], "reads": ["handbook"]}
//
// `role` is read, write or admin (export, import, consolidate);
// `namespaces` are written and read, `reads` only read (names, prefixes
// ending in `*`, or `*`). The Worker keeps no key, only its hash.
// `MNEMO_API_KEY` stays the admin key of every namespace.
//
// A request's namespace is the one it names, or — naming none, or an
// empty one — its key's one namespace; any other is a 403. A read whose
// key may not write the namespace is marked untouched: it reinforces
// nothing there. Each namespace is its own object, so none reads another
// (the server's `MNEMO_SHARING=off`).

import { UNTOUCHED, errorResponse } from './routes.js';

const RANK = { read: 0, write: 1, admin: 2 };
/// `POST` routes that only read.
const READ_POSTS = ['/recall', '/context', '/topic'];
/// The operator's routes.
const ADMIN_ROUTES = [['GET', '/export'], ['POST', '/import'], ['POST', '/consolidate']];

/// The role a request needs.
export function roleOf(method, path) {
  if (ADMIN_ROUTES.some(([m, p]) => m === method && p === path)) return 'admin';
  if (method === 'GET' || (method === 'POST' && READ_POSTS.includes(path))) return 'read';
  return 'write';
}

const allows = (patterns, ns) =>
  (patterns ?? []).some((p) => (p.endsWith('*') ? ns.startsWith(p.slice(0, -1)) : p === ns));

async function sha256(text) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/// `MNEMO_KEYS`, read; a list that cannot be read opens nothing.
function keysOf(env) {
  if (!env.MNEMO_KEYS) return [];
  const keys = JSON.parse(env.MNEMO_KEYS);
  if (!Array.isArray(keys) || keys.some((k) => !RANK.hasOwnProperty(k.role) || !Array.isArray(k.namespaces) || !/^[0-9a-f]{64}$/.test(k.sha256))) {
    throw new Error('MNEMO_KEYS must be a JSON array of {name, sha256, role, namespaces, reads}');
  }
  return keys;
}

/// Constant-time comparison of two strings of the same alphabet.
function same(a, b) {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/// Whether the Worker asks for a key at all.
export const keyed = (env) => Boolean(env.MNEMO_API_KEY || env.MNEMO_KEYS);

/// Who `request` is: `{ all: true }` for the admin key, the key's record,
/// or `null` (missing or wrong).
export async function who(request, env) {
  const given = (request.headers.get('authorization') ?? '').replace(/^Bearer\s+/i, '');
  if (env.MNEMO_API_KEY && same(given, env.MNEMO_API_KEY)) return { all: true };
  if (!given) return null;
  const hash = await sha256(given);
  return keysOf(env).find((k) => same(k.sha256, hash)) ?? null;
}

/// The namespace `key` makes the request in (`named`: what it named, or
/// undefined), and whether it is untouched; or the refusal.
export function admit(key, method, path, named) {
  const refuse = (message) => ({ refusal: errorResponse(403, 'forbidden', message) });
  const needed = roleOf(method, path);
  if (key.all) return { namespace: named ?? 'default', untouched: false };
  if (RANK[key.role] < RANK[needed]) return refuse(`this key's role is ${key.role}; ${method} ${path} needs ${needed}`);
  let namespace = named;
  if (namespace === undefined) {
    const only = key.namespaces.length === 1 && !key.namespaces[0].endsWith('*') ? key.namespaces[0] : undefined;
    if (only === undefined) return refuse('this key covers several namespaces: name one with the X-Namespace header');
    namespace = only;
  }
  const writes = allows(key.namespaces, namespace);
  const reaches = needed === 'read' ? writes || allows(key.reads, namespace) : writes;
  if (!reaches) return refuse(`this key may not ${needed === 'read' ? 'read' : 'write'} namespace \`${namespace}\``);
  return { namespace, untouched: needed === 'read' && !(writes && RANK[key.role] >= RANK.write) };
}

export { UNTOUCHED };
