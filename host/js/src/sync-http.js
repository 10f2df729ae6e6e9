// Synchronous HTTP for the core's imports. The core calls its embedder and
// its LLM as plain functions (the WIT imports are synchronous), so the
// host must answer without returning to the event loop:
//
// - in Node, a worker thread runs `fetch` while the calling thread waits on
//   an `Atomics.wait`, and the answer is taken off a MessagePort with
//   `receiveMessageOnPort` (no polling, no busy loop);
// - in a browser, a synchronous XMLHttpRequest (allowed in workers, where
//   the demo runs the engine).
//
// A request is `{ method, url, headers: [[name, value]], body: Uint8Array }`;
// the answer `{ status, headers, body: Uint8Array }` or `{ error, kind }`.

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', async ({ request, signal, port, timeoutMs }) => {
  const flag = new Int32Array(signal);
  let answer;
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), timeoutMs);
  try {
    const res = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.method === 'GET' ? undefined : request.body,
      signal: ctrl.signal,
    });
    const body = new Uint8Array(await res.arrayBuffer());
    answer = { status: res.status, headers: [...res.headers], body };
  } catch (e) {
    const timedOut = ctrl.signal.aborted;
    answer = { error: String((e && e.cause && e.cause.message) || (e && e.message) || e), kind: timedOut ? 'timeout' : 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
  port.postMessage(answer);
  port.close();
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
`;

/// Builds the synchronous `send` for this platform: `await syncHttp()`.
export async function syncHttp() {
  const isNode = typeof process !== 'undefined' && process.versions && process.versions.node;
  if (!isNode) return browserSend;
  const { Worker, MessageChannel, receiveMessageOnPort } = await import('node:worker_threads');
  let worker;
  return function nodeSend(request, timeoutMs) {
    if (!worker) {
      worker = new Worker(WORKER_SOURCE, { eval: true });
      worker.unref();
    }
    const signal = new SharedArrayBuffer(4);
    const { port1, port2 } = new MessageChannel();
    worker.postMessage({ request, signal, port: port2, timeoutMs }, [port2]);
    // The worker answers within its own timeout; the margin covers its start.
    Atomics.wait(new Int32Array(signal), 0, 0, timeoutMs + 5000);
    const answer = receiveMessageOnPort(port1);
    port1.close();
    return answer ? answer.message : { error: `no answer within ${timeoutMs} ms`, kind: 'timeout' };
  };
}

function browserSend(request, timeoutMs) {
  const xhr = new XMLHttpRequest();
  xhr.open(request.method, request.url, false);
  // A synchronous request cannot set `timeout` or a response type outside
  // a worker; the text is read back as bytes.
  if (typeof WorkerGlobalScope !== 'undefined') xhr.timeout = timeoutMs;
  for (const [k, v] of request.headers) xhr.setRequestHeader(k, v);
  try {
    xhr.send(request.method === 'GET' ? null : request.body);
  } catch (e) {
    return { error: String(e && e.message ? e.message : e), kind: 'unreachable' };
  }
  const headers = xhr
    .getAllResponseHeaders()
    .trim()
    .split(/\r?\n/)
    .filter(Boolean)
    .map((line) => {
      const at = line.indexOf(':');
      return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()];
    });
  return { status: xhr.status, headers, body: new TextEncoder().encode(xhr.responseText) };
}
