// The providers behind the core's embedding, LLM and NER imports in the
// JavaScript host:
//
// - `HashEmbedder`: the native host's model-free embedder — the core's own
//   function, called through its `analysis` export;
// - `LlmPlugin`: an LLM provider plugin (`plugins/llm-*`, the same
//   components the native host runs) whose only way out is `transport.send`,
//   which this host answers for the configured base URL only, adding the key
//   itself, through the operation's exchange (exchange.js);
// - `NerPlugins`: the NER plugin components, merged by the core's rule.

import { HostFailure } from './storage/db.js';
import { instantiate } from './load.js';

/// The native host's default hash dimension (`config::DEFAULT_DIMENSION`).
export const DEFAULT_DIMENSION = 384;
/// The native host's LLM answer budget (`llm::LlmConfig::max_tokens`).
export const DEFAULT_MAX_TOKENS = 1024;
/// The NER plugin caps of the native host's `PluginLimits`.
export const NER_MAX_INPUT_BYTES = 64 << 10;
export const NER_MAX_ENTITIES = 512;
export const NER_MAX_ENTITY_BYTES = 512;

const utf8 = new TextEncoder();

/// Scales `v` (a Float32Array) to unit length in f32 arithmetic, as the
/// core's `normalize` does to a provider's vectors natively.
export function normalize(v) {
  let sum = 0;
  for (const x of v) sum = Math.fround(sum + Math.fround(x * x));
  const norm = Math.fround(Math.sqrt(sum));
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = v[i] / norm;
  return v;
}

/// The native host's model-free embedder: the core's own `hash_embedding`
/// (through its `analysis` export), so both hosts embed bit for bit alike.
export class HashEmbedder {
  constructor(analysis, dimension = DEFAULT_DIMENSION) {
    this.analysis = analysis;
    this.dimension = Math.max(dimension, 8);
  }

  info() {
    return { model: `hash-${this.dimension}`, dimension: this.dimension };
  }

  embed(texts) {
    return texts.map((t) => this.analysis.hashEmbedding(t, this.dimension));
  }
}

/// The outbound door of an LLM plugin: only `baseUrl` and paths under it,
/// the key added by the host per the plugin's auth scheme (a plugin's own
/// credentials headers are dropped).
export function transport(send, endpoint, auth) {
  const base = new URL(endpoint.baseUrl.endsWith('/') ? endpoint.baseUrl : `${endpoint.baseUrl}/`);
  return {
    send(request) {
      let url;
      try {
        url = new URL(request.url);
      } catch {
        throw new HostFailure('invalid', `not a URL: ${request.url}`);
      }
      const allowed =
        url.protocol === base.protocol &&
        url.host === base.host &&
        !url.username &&
        !url.password &&
        url.pathname.startsWith(base.pathname);
      if (!allowed) throw new HostFailure('denied', `${url.origin}${url.pathname} is outside ${base.href}`);
      const headers = request.headers.filter(([k]) => !['authorization', 'x-api-key'].includes(k.toLowerCase()));
      if (endpoint.apiKey && auth.tag === 'bearer') headers.push(['authorization', `Bearer ${endpoint.apiKey}`]);
      if (endpoint.apiKey && auth.tag === 'header') headers.push([auth.val, endpoint.apiKey]);
      const answer = send({ method: request.method, url: url.href, headers, body: request.body });
      if (answer.error) throw new HostFailure(answer.kind, answer.error);
      return { status: answer.status, headers: answer.headers, body: answer.body };
    },
  };
}

const errorText = (e) => {
  const p = e && e.payload;
  if (!p) return String(e && e.message ? e.message : e);
  return p.val === undefined ? p.tag : `${p.tag}: ${p.val}`;
};

export class LlmPlugin {
  /// `name`: a transpiled plugin in gen/ (`llm-openai`, `llm-anthropic`,
  /// `llm-ollama`); `endpoint`: `{ baseUrl, apiKey, model }`.
  static async load(name, endpoint, send) {
    const plugin = new LlmPlugin();
    let auth = { tag: 'none' };
    const instance = await instantiate(name, {
      'mnemo:llm/transport': transport(send, endpoint, { get tag() { return auth.tag; }, get val() { return auth.val; } }),
    });
    plugin.provider = instance.provider;
    plugin.info = plugin.provider.info();
    auth = plugin.info.auth;
    plugin.endpoint = endpoint;
    return plugin;
  }

  /// The core's `llm.complete`.
  complete(req) {
    try {
      const answer = this.provider.chat(this.endpoint.baseUrl, {
        model: this.endpoint.model,
        messages: req.messages,
        tool: req.tool,
        json: req.json,
        maxTokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
        temperature: undefined,
      });
      return {
        content: answer.content,
        model: answer.model,
        inputTokens: answer.usage.inputTokens,
        outputTokens: answer.usage.outputTokens,
      };
    } catch (e) {
      throw new HostFailure('llm', `${this.info.name}: ${errorText(e)}`);
    }
  }

  /// Vectors of `texts` through the plugin's `embed` (unit length).
  embed(texts, model, dimensions) {
    try {
      const answer = this.provider.embed(this.endpoint.baseUrl, { model, texts, dimensions });
      return answer.vectors.map((v) => normalize(Float32Array.from(v)));
    } catch (e) {
      throw new HostFailure('embedding', `${this.info.name}: ${errorText(e)}`);
    }
  }
}

/// An embedder over a provider's embeddings endpoint, through an LLM plugin.
export class RemoteEmbedder {
  constructor(plugin, model, dimension) {
    this.plugin = plugin;
    this.model = model;
    this.dimension = dimension;
  }

  info() {
    return { model: this.model, dimension: this.dimension };
  }

  embed(texts) {
    const vectors = this.plugin.embed(texts, this.model, this.dimension);
    for (const v of vectors) {
      if (v.length !== this.dimension) {
        throw new HostFailure('embedding', `the provider answered ${v.length} dimensions, not ${this.dimension}`);
      }
    }
    return vectors;
  }
}

/// UTF-8 byte offset → whether it is a character boundary of `bytes`.
const boundary = (bytes, at) => at === bytes.length || (at < bytes.length && (bytes[at] & 0xc0) !== 0x80);

export class NerPlugins {
  /// `names`: transpiled NER plugins in gen/; `fast`/`accurate`: the
  /// strategies' provider names (the native defaults: regex; regex, names).
  static async load(names, analysis, fast = ['regex'], accurate = ['regex', 'names']) {
    const ner = new NerPlugins();
    ner.analysis = analysis;
    ner.providers = new Map();
    for (const name of names) {
      const { provider } = await instantiate(name, {});
      ner.providers.set(provider.info().name, provider);
    }
    ner.fast = fast.filter((n) => ner.providers.has(n));
    ner.accurate = accurate.filter((n) => ner.providers.has(n));
    return ner;
  }

  /// The core's `ner.extract`: each provider of the strategy, checked
  /// against the native caps; one failure costs that provider's answer.
  extract(text, strategy) {
    const bytes = utf8.encode(text);
    const mentions = [];
    const failures = [];
    for (const name of strategy === 'accurate' ? this.accurate : this.fast) {
      try {
        if (bytes.length > NER_MAX_INPUT_BYTES) throw new Error(`input of ${bytes.length} bytes is over the cap`);
        const found = this.providers.get(name).extract(text);
        if (found.length > NER_MAX_ENTITIES) throw new Error(`returned ${found.length} entities`);
        const checked = found.map((e) => {
          if (utf8.encode(e.text).length > NER_MAX_ENTITY_BYTES) throw new Error('returned an oversized entity');
          if (!(e.start <= e.end && boundary(bytes, e.start) && boundary(bytes, e.end))) {
            throw new Error(`returned the span ${e.start}..${e.end} outside the input`);
          }
          return { ...e, confidence: Math.min(Math.max(e.confidence, 0), 1), provider: name };
        });
        mentions.push(...checked);
      } catch (e) {
        failures.push(`plugin \`${name}\`: ${errorText(e)}`);
      }
    }
    return { mentions: this.analysis.mergeMentions(mentions), failures };
  }

  accurateAvailable() {
    return this.accurate.length > this.fast.length;
  }
}
