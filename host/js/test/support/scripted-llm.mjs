// A scripted OpenAI-compatible server on 127.0.0.1, in a process of its
// own (the host waits synchronously on its LLM calls, so a server in the
// test's own thread could never answer). It answers each chat request that
// forces a tool with the arguments scripted for that tool's name (argv[2]:
// a JSON object, tool name → arguments), 400 for any other, and prints
// `listening <port>` once ready; `/embeddings` answers 8-dimensional
// vectors counted from the text's characters. Every request is logged to
// stderr. With
// argv[3] `hold`, chat answers wait until `POST /release`; `GET /seen`
// tells how many chat requests arrived.

import { createServer } from 'node:http';

const script = JSON.parse(process.argv[2] ?? '{}');
let held = process.argv[3] === 'hold' ? [] : undefined;
let seen = 0;

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    let tool;
    try {
      const v = JSON.parse(body || '{}');
      tool = v.tool_choice?.function?.name ?? v.tools?.[0]?.function?.name;
    } catch {
      tool = undefined;
    }
    process.stderr.write(`${req.method} ${req.url} tool=${tool}\n`);
    const reply = (status, v) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.url === '/seen') return reply(200, { seen });
    if (req.url === '/release') {
      const waiting = held ?? [];
      held = undefined;
      waiting.forEach((f) => f());
      return reply(200, { released: waiting.length });
    }
    if (req.url.endsWith('/embeddings')) {
      // Deterministic vectors: 8 dimensions from the text's character codes.
      let input;
      try {
        input = JSON.parse(body).input;
      } catch {
        return reply(400, { error: { message: 'not JSON' } });
      }
      const data = input.map((text, index) => {
        const v = new Array(8).fill(0);
        for (const [i, ch] of [...text.toLowerCase()].entries()) v[(ch.codePointAt(0) + i) % 8] += 1;
        return { index, embedding: v };
      });
      return reply(200, { model: 'scripted-embed', data, usage: { prompt_tokens: input.length, total_tokens: input.length } });
    }
    if (req.url.endsWith('/chat/completions')) seen += 1;
    const send = (status, v) => (held ? held.push(() => reply(status, v)) : reply(status, v));
    if (!req.url.endsWith('/chat/completions') || tool === undefined || !(tool in script)) {
      return send(400, { error: { message: `nothing scripted for ${req.url} tool ${tool}` } });
    }
    send(200, {
      id: 'chatcmpl-scripted',
      model: 'scripted',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call-1', type: 'function', function: { name: tool, arguments: JSON.stringify(script[tool]) } }],
          },
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    });
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
