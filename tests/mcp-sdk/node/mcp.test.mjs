// mnemo's MCP server driven by the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package-lock.json): `mnemo mcp` over
// stdio and `/mcp` of a real `mnemo serve` on 127.0.0.1 over streamable
// HTTP. The SDK's client checks each tool result against the tool's
// declared outputSchema (once the tool list is known) and throws when it
// does not match, so calling the tools is the structured-output test.
// MNEMO_BIN names the binary (tests/mcp-sdk/run sets it).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const BIN = process.env.MNEMO_BIN;
assert.ok(BIN, "MNEMO_BIN names the mnemo binary");
const FACT = "The user's daughter is allergic to peanuts";

function env(dir, extra = {}) {
  return { PATH: process.env.PATH, MNEMO_DATA_DIR: dir, MNEMO_EMBEDDER: "hash", ...extra };
}

async function stdio(t, { extra = {}, capabilities = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-mcp-"));
  const client = new Client({ name: "mnemo-test", version: "1.0.0" }, { capabilities });
  await client.connect(new StdioClientTransport({ command: BIN, args: ["mcp"], env: env(dir, extra), stderr: "ignore" }));
  t.after(async () => {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return client;
}

async function http(t) {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-mcp-"));
  const server = spawn(BIN, ["serve", "--port", "0"], { env: env(dir), stdio: ["ignore", "ignore", "pipe"] });
  // Stopped however the test ends: a server left running keeps the test
  // runner waiting for ever.
  let client;
  t.after(async () => {
    await client?.close();
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      // The whole address, up to the line's end: stderr can arrive mid-line.
      const m = seen.match(/listening on (http:\/\/127\.0\.0\.1:\d+)\s/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`mnemo serve exited ${code}: ${seen}`)));
  });
  client = new Client({ name: "mnemo-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  return client;
}

function structured(result) {
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.ok(result.structuredContent, "structured content");
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

async function toolsAndSchemas(client) {
  const { tools } = await client.listTools();
  assert.ok(tools.length >= 34, `${tools.length} tools`);
  for (const t of tools) {
    assert.ok(t.title, `${t.name} has a title`);
    const a = t.annotations;
    assert.ok(a && typeof a.readOnlyHint === "boolean" && typeof a.openWorldHint === "boolean", t.name);
    if (!a.readOnlyHint) assert.ok(typeof a.destructiveHint === "boolean" && typeof a.idempotentHint === "boolean", t.name);
    assert.equal(t.outputSchema?.type, "object", `${t.name} declares its output`);
  }
  const call = async (name, args = {}) => structured(await client.callTool({ name, arguments: args }));
  const saved = await call("remember_fact", { content: FACT, tags: ["health"] });
  for (const [name, args] of [
    ["search_memory", { query: "peanuts" }],
    ["recall", { query: "peanuts", dry: true }],
    ["get_memory", { id: saved.id }],
    ["history", { id: saved.id }],
    ["edit_memory", { id: saved.id, importance: 0.8 }],
    ["memory_stats", {}],
    ["context", { prompt: "what should I cook for my daughter?" }],
    ["resume", {}],
    ["topics", {}],
    ["recent", {}],
    ["ingest_turn", { session_id: "s1", role: "user", content: "We moved to Porto last spring" }],
    ["sessions", {}],
    ["consolidate", { dry: true }],
    ["add_fact", { subject: "user", predicate: "lives_in", object: "Porto" }],
    ["query_facts", { entity: "user" }],
    ["list_memories", {}],
    ["decisions", {}],
    ["llm_usage", {}],
    ["export", {}],
  ]) {
    await call(name, args);
  }
  const bad = await client.callTool({ name: "get_memory", arguments: { id: "mem_nope" } });
  assert.equal(bad.isError, true);
  assert.equal(JSON.parse(bad.content[0].text).error.code, "not_found");
}

async function resourcesAndPrompts(client) {
  const saved = structured(await client.callTool({ name: "remember_fact", arguments: { content: FACT, namespace: "u1" } }));
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === "mnemo://namespaces/default/resume"));
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.ok(resourceTemplates.some((t) => t.uriTemplate === "mnemo://namespaces/{namespace}/topics/{id}"));
  const memory = await client.readResource({ uri: `mnemo://namespaces/u1/memories/${saved.id}` });
  assert.equal(JSON.parse(memory.contents[0].text).content, FACT);
  const resume = await client.readResource({ uri: "mnemo://namespaces/u1/resume" });
  assert.match(JSON.parse(resume.contents[0].text).text, /peanuts/);
  await assert.rejects(client.readResource({ uri: `mnemo://namespaces/u2/memories/${saved.id}` }));
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name).sort(), ["review_topic", "save_learned", "start_session"]);
  const start = await client.getPrompt({ name: "start_session", arguments: { namespace: "u1" } });
  assert.match(start.messages[0].content.text, /peanuts/);
  const done = await client.complete({ ref: { type: "ref/prompt", name: "start_session" }, argument: { name: "namespace", value: "u" } });
  assert.deepEqual(done.completion.values, ["u1"]);
}

test("stdio: annotated tools, structured output, resources, prompts", async (t) => {
  const client = await stdio(t);
  await toolsAndSchemas(client);
  await resourcesAndPrompts(client);
});

test("streamable HTTP: the same against mnemo serve", async (t) => {
  const client = await http(t);
  await toolsAndSchemas(client);
  await resourcesAndPrompts(client);
});

test("a subscribed resource reports its change", async (t) => {
  const client = await stdio(t);
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
  const uri = "mnemo://namespaces/default/resume";
  await client.subscribeResource({ uri });
  await client.callTool({ name: "remember_fact", arguments: { content: FACT } });
  const until = Date.now() + 15000;
  while (!updated.includes(uri)) {
    assert.ok(Date.now() < until, "no notifications/resources/updated within 15 s");
    await new Promise((r) => setTimeout(r, 100));
  }
});

test("the client's model serves the LLM steps through sampling", async (t) => {
  const client = await stdio(t, { extra: { MNEMO_LLM_PROVIDER: "sampling" }, capabilities: { sampling: {} } });
  const asked = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    asked.push(req.params);
    return {
      role: "assistant",
      model: "scripted-ts",
      content: { type: "text", text: JSON.stringify({ phrases: ["peanut allergy", "allergic to peanuts"] }) },
    };
  });
  await client.listTools();
  await client.callTool({ name: "remember_fact", arguments: { content: FACT } });
  const r = structured(await client.callTool({ name: "recall", arguments: { query: "any allergies?", expand: true } }));
  assert.deepEqual(r.expansions, ["peanut allergy", "allergic to peanuts"]);
  assert.ok(asked.length >= 1 && /search phrases/.test(asked[0].systemPrompt));
  const usage = structured(await client.callTool({ name: "llm_usage", arguments: {} }));
  assert.ok(usage.summary.some((u) => u.component === "expand" && u.model === "sampling:scripted-ts"), JSON.stringify(usage));
});
