// The Worker's settings, from its environment (`[vars]` in wrangler.toml)
// and secrets (`wrangler secret put`): which embedder and which LLM the
// objects run with. Provider keys stay in the host: the plugins build
// their requests without them and the host adds the key (host/js's
// providers), so a plugin never holds a secret.

import { MnemoError } from '../../js/src/index.js';

/// `MNEMO_EMBEDDER`: `hash` (the default: no network, word overlap) or
/// `openai` — any OpenAI-compatible `/embeddings` endpoint, with
/// `MNEMO_EMBEDDING_BASE_URL`, `MNEMO_EMBEDDING_MODEL`,
/// `MNEMO_EMBEDDING_DIMENSION` and the secret `MNEMO_EMBEDDING_API_KEY`.
export function embedderFrom(env) {
  const kind = env.MNEMO_EMBEDDER ?? 'hash';
  if (kind === 'hash') return 'hash';
  if (kind !== 'openai') throw new MnemoError('invalid-input', `MNEMO_EMBEDDER must be hash or openai, not ${kind}`);
  return {
    provider: 'openai',
    baseUrl: required(env, 'MNEMO_EMBEDDING_BASE_URL'),
    model: required(env, 'MNEMO_EMBEDDING_MODEL'),
    dimension: Number(required(env, 'MNEMO_EMBEDDING_DIMENSION')),
    apiKey: env.MNEMO_EMBEDDING_API_KEY,
  };
}

/// `MNEMO_LLM_BASE_URL` (an OpenAI-compatible `/chat/completions`
/// endpoint) turns the LLM steps on, with `MNEMO_LLM_MODEL`,
/// `MNEMO_LLM_LEVEL` (`auto` by default) and the secret `MNEMO_LLM_API_KEY`;
/// without it they are off, as in the native host.
export function llmFrom(env) {
  if (!env.MNEMO_LLM_BASE_URL) return undefined;
  return {
    provider: 'openai',
    baseUrl: env.MNEMO_LLM_BASE_URL,
    model: required(env, 'MNEMO_LLM_MODEL'),
    apiKey: env.MNEMO_LLM_API_KEY,
    level: env.MNEMO_LLM_LEVEL ?? 'auto',
  };
}

function required(env, name) {
  const v = env[name];
  if (v === undefined || v === '') throw new MnemoError('invalid-input', `the Worker's ${name} is not set`);
  return v;
}
