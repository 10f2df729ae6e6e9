// The JavaScript API's requests as the engine's WIT records: defaults
// filled in as the native host fills them (namespace `default`, recall
// limit 10 — `thresholds::DEFAULT_RECALL_LIMIT`), times accepted as
// numbers, BigInts or Dates, and input of the wrong shape refused with a
// typed error before anything reaches the core (nothing is written).

/// An error of the engine (`kind` is the core's error case: `invalid-input`,
/// `not-found`, `conflict`, `storage`, `embedding`, `llm`, `ner`,
/// `unavailable`), or `trap` when the core itself failed.
export class MnemoError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'MnemoError';
    this.kind = kind;
  }
}

export const DEFAULT_NAMESPACE = 'default';
export const DEFAULT_RECALL_LIMIT = 10;

const bad = (what) => {
  throw new MnemoError('invalid-input', what);
};

function str(v, name, required = false) {
  if (v === undefined || v === null) return required ? bad(`\`${name}\` is required`) : undefined;
  return typeof v === 'string' ? v : bad(`\`${name}\` must be a string`);
}

function num(v, name) {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : bad(`\`${name}\` must be a finite number`);
}

function whole(v, name, fallback) {
  if (v === undefined || v === null) return fallback;
  return Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : bad(`\`${name}\` must be a whole number ≥ 0`);
}

function bool(v, name) {
  if (v === undefined || v === null) return false;
  return typeof v === 'boolean' ? v : bad(`\`${name}\` must be true or false`);
}

function list(v, name) {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) bad(`\`${name}\` must be a list of strings`);
  return v;
}

/// Milliseconds since the Unix epoch, as the s64 the core reads.
export function time(v, name) {
  if (v === undefined || v === null) return undefined;
  if (v instanceof Date) return BigInt(v.getTime());
  if (typeof v === 'bigint') return v;
  if (Number.isInteger(v)) return BigInt(v);
  return bad(`\`${name}\` must be milliseconds since the epoch or a Date`);
}

const ENUMS = {
  kind: ['episodic', 'semantic', 'procedural'],
  layer: ['buffer', 'working', 'core'],
  sort: ['score', 'recent', 'accessed'],
  relevance: ['blend', 'semantic'],
};

/// One of an enum's values (the WIT enum's names).
function oneOf(v, name, set) {
  if (v === undefined || v === null) return undefined;
  return ENUMS[set].includes(v) ? v : bad(`\`${name}\` must be one of ${ENUMS[set].join(', ')}`);
}

function enums(v, name, set) {
  return list(v, name).map((x) => oneOf(x, name, set));
}

function json(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && !Array.isArray(v)) return JSON.stringify(v);
  return bad(`\`${name}\` must be a JSON object`);
}

const ns = (v) => str(v, 'namespace') ?? DEFAULT_NAMESPACE;
const object = (v, what) => (v && typeof v === 'object' ? v : bad(`${what} must be an object`));

export function remember(r) {
  if (typeof r === 'string') r = { content: r };
  object(r, 'a remember request');
  return {
    namespace: ns(r.namespace),
    content: str(r.content, 'content', true),
    kind: oneOf(r.kind, 'kind', 'kind'),
    tags: list(r.tags, 'tags'),
    source: str(r.source, 'source'),
    sessionId: str(r.sessionId, 'sessionId'),
    importance: num(r.importance, 'importance'),
    attributes: json(r.attributes, 'attributes'),
    eventTime: time(r.eventTime, 'eventTime'),
    skipDedup: bool(r.skipDedup, 'skipDedup'),
  };
}

export function turn(t) {
  object(t, 'a turn');
  return {
    namespace: ns(t.namespace),
    sessionId: str(t.sessionId, 'sessionId', true),
    role: str(t.role, 'role', true),
    content: str(t.content, 'content', true),
    eventTime: time(t.eventTime, 'eventTime'),
    attributes: json(t.attributes, 'attributes'),
  };
}

export function recall(r) {
  if (typeof r === 'string') r = { query: r };
  object(r, 'a recall request');
  const expand = r.expand === undefined || r.expand === null ? undefined : bool(r.expand, 'expand');
  return {
    query: str(r.query, 'query', true),
    namespace: ns(r.namespace),
    layers: enums(r.layers, 'layers', 'layer'),
    kinds: enums(r.kinds, 'kinds', 'kind'),
    tags: list(r.tags, 'tags'),
    since: time(r.since, 'since'),
    until: time(r.until, 'until'),
    source: str(r.source, 'source'),
    minScore: num(r.minScore, 'minScore'),
    limit: whole(r.limit, 'limit', DEFAULT_RECALL_LIMIT),
    offset: whole(r.offset, 'offset', 0),
    tokenBudget: r.tokenBudget === undefined ? undefined : whole(r.tokenBudget, 'tokenBudget', 0),
    sort: oneOf(r.sort, 'sort', 'sort') ?? 'score',
    dry: bool(r.dry, 'dry'),
    includeEpisodes: bool(r.includeEpisodes, 'includeEpisodes'),
    episodesOnly: bool(r.episodesOnly, 'episodesOnly'),
    excludeSession: str(r.excludeSession, 'excludeSession'),
    expand,
    rerank: bool(r.rerank, 'rerank'),
    relevance: oneOf(r.relevance, 'relevance', 'relevance') ?? 'blend',
  };
}

export function list_(r) {
  object(r, 'a list request');
  return {
    namespace: ns(r.namespace),
    layers: enums(r.layers, 'layers', 'layer'),
    kinds: enums(r.kinds, 'kinds', 'kind'),
    tags: list(r.tags, 'tags'),
    deleted: bool(r.deleted, 'deleted'),
    limit: whole(r.limit, 'limit', 50),
    offset: whole(r.offset, 'offset', 0),
  };
}
export { list_ as list };

export function patch(p) {
  object(p, 'a patch');
  return {
    content: str(p.content, 'content'),
    tags: p.tags === undefined ? undefined : list(p.tags, 'tags'),
    importance: num(p.importance, 'importance'),
    kind: oneOf(p.kind, 'kind', 'kind'),
    attributes: json(p.attributes, 'attributes'),
  };
}

export function consolidate(r) {
  object(r, 'a consolidate request');
  return {
    namespace: str(r.namespace, 'namespace'),
    dry: bool(r.dry, 'dry'),
    ifChanged: bool(r.ifChanged, 'ifChanged'),
    sessionIdleMinutes: r.sessionIdleMinutes === undefined ? undefined : whole(r.sessionIdleMinutes, 'sessionIdleMinutes', 0),
    bufferCap: r.bufferCap === undefined ? undefined : whole(r.bufferCap, 'bufferCap', 0),
    bufferDropBelow: num(r.bufferDropBelow, 'bufferDropBelow'),
    // This host has no topic worker: a cycle rebuilds the trees it changed.
    topicsByWorker: false,
  };
}

export function fact(f) {
  object(f, 'a fact');
  return {
    namespace: ns(f.namespace),
    subject: str(f.subject, 'subject', true),
    predicate: str(f.predicate, 'predicate', true),
    object: str(f.object, 'object', true),
    confidence: num(f.confidence, 'confidence'),
    memoryId: str(f.memoryId, 'memoryId'),
    exclusive: bool(f.exclusive, 'exclusive'),
  };
}

export function factQuery(q) {
  object(q, 'a fact query');
  return {
    namespaces: q.namespace === undefined ? list(q.namespaces, 'namespaces') : [ns(q.namespace)],
    id: str(q.id, 'id'),
    subject: str(q.subject, 'subject'),
    predicate: str(q.predicate, 'predicate'),
    object: str(q.object, 'object'),
    entity: str(q.entity, 'entity'),
    includeInvalid: bool(q.includeInvalid, 'includeInvalid'),
    limit: whole(q.limit, 'limit', 50),
  };
}
