// How the JavaScript host calls providers without ever blocking. The core
// calls its LLM and embedder as plain functions (the WIT imports are
// synchronous), and JavaScript can only wait for the network
// asynchronously. So an operation that needs the network is planned, then
// applied — as the native server rehearses a cycle before its writer
// applies it:
//
// 1. the call runs in a transaction; every HTTP exchange a provider plugin
//    asks for that has no answer yet is recorded and fails as "deferred";
// 2. if any was deferred, the transaction is rolled back (nothing of the
//    round is kept), the recorded requests are sent with `fetch` — all at
//    once, awaited, the event loop free meanwhile — and their answers kept;
// 3. the call runs again with those answers, which may reveal the next
//    exchanges (an answer feeds the next prompt); once a round defers
//    nothing, it commits.
//
// The clock stands still for the whole operation and its random draws
// repeat round after round, so each round asks the same questions.

/// The most rounds one operation takes before it commits whatever the
/// core made of the exchanges still unanswered (the LLM steps of one
/// consolidation cycle chain at most a few calls).
export const MAX_ROUNDS = 12;
/// How long one HTTP exchange may take.
export const HTTP_TIMEOUT_MS = 60_000;

const utf8 = new TextDecoder();
const keyOf = (r) => `${r.method} ${r.url}\n${r.body ? utf8.decode(r.body) : ''}`;

/// The exchanges of one operation: answers kept, requests still deferred.
export class Exchange {
  constructor() {
    this.answers = new Map();
    this.deferred = new Map();
  }

  /// The provider plugin's `send`: the kept answer, or a deferral.
  send(request) {
    const key = keyOf(request);
    const answer = this.answers.get(key);
    if (answer) return answer;
    this.deferred.set(key, request);
    return { error: 'deferred until the operation is planned', kind: 'unreachable' };
  }

  /// Sends every deferred request, concurrently; a failure is kept as the
  /// answer (the plugin maps it to a typed error, the core handles that).
  async settle(fetchImpl = fetch) {
    const pending = [...this.deferred];
    this.deferred.clear();
    await Promise.all(
      pending.map(async ([key, r]) => {
        let answer;
        try {
          const res = await fetchImpl(r.url, {
            method: r.method,
            headers: r.headers,
            body: r.method === 'GET' ? undefined : r.body,
            signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
          });
          answer = { status: res.status, headers: [...res.headers], body: new Uint8Array(await res.arrayBuffer()) };
        } catch (e) {
          const timedOut = e && e.name === 'TimeoutError';
          answer = { error: String(e?.cause?.message ?? e?.message ?? e), kind: timedOut ? 'timeout' : 'unreachable' };
        }
        this.answers.set(key, answer);
      }),
    );
  }

  get waiting() {
    return this.deferred.size > 0;
  }
}

/// The clock an operation sees: `now` read once, random draws replayed
/// in the same order each round.
export class PinnedClock {
  constructor(clock) {
    this.clock = clock;
    this.at = clock.now();
    this.draws = [];
    this.next = 0;
  }

  rewind() {
    this.next = 0;
  }

  now() {
    return this.at;
  }

  random() {
    if (this.next === this.draws.length) this.draws.push(this.clock.random());
    return this.draws[this.next++];
  }
}
