// The web console end to end (issue 15): a real `mnemo serve` on a
// temporary SQLite file with data put in through the API, driven in
// headless Chromium (Debian's package, through playwright-core's
// `executablePath`). Every view loads, a search shows its explanation, the
// actions (revert, restore) change what is stored, stored text is shown as
// text, and the page raises no script or CSP error.
//
// `MNEMO_BIN` names the binary (default: the workspace's debug build),
// `CHROMIUM` the browser (default /usr/bin/chromium); with
// `MNEMO_SCREENSHOTS=DIR` the main views are saved there as PNGs
// (`scripts/console-screenshots` writes docs/console/).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.MNEMO_BIN || resolve(here, "../../target/debug/mnemo");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.MNEMO_SCREENSHOTS;
const KEY = "console-test-key";

let server;
let base;
let dir;
let browser;
let page;
const pageErrors = [];
const ids = {};

/** Starts `mnemo serve` on a free port; resolves to its base URL. */
function startServer() {
  dir = mkdtempSync(join(tmpdir(), "mnemo-console-"));
  server = spawn(BIN, ["serve", "--db", join(dir, "memory.db"), "--port", "0"], {
    env: {
      ...process.env,
      MNEMO_EMBEDDER: "hash",
      MNEMO_DATA_DIR: dir,
      MNEMO_API_KEY: KEY,
      MNEMO_PRICES: "hash-384=100/0",
      MNEMO_LOG: "warn",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((ok, fail) => {
    let log = "";
    const timer = setTimeout(() => fail(new Error(`mnemo did not start:\n${log}`)), 120_000);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      // The whole address: stderr can arrive mid-line.
      const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)\s/);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    server.on("exit", (code) => fail(new Error(`mnemo exited with ${code}:\n${log}`)));
  });
}

async function call(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

/** What an agent would have left behind: memories, turns, facts, edits. */
async function seed() {
  const remember = (m) => call("POST", "/memories", m);
  ids.milk = (await remember({ content: "Alice prefers oat milk in her coffee", tags: ["food", "trigger:coffee"], importance: 0.8 })).id;
  ids.marathon = (await remember({ content: "Bob is training for the Berlin marathon in September", kind: "episodic" })).id;
  ids.deploy = (await remember({ content: "Deploy the API with blue-green releases on Fridays", kind: "procedural", tags: ["ops"] })).id;
  ids.script = (await remember({ content: "<img src=x onerror=alert(1)> is how the tester signs" })).id;
  await call("PATCH", `/memories/${ids.marathon}`, { content: "Bob is training for the Berlin marathon in late September" });
  await call("DELETE", `/memories/${ids.deploy}?reason=obsolete+runbook`);
  const turns = [
    ["lisbon", "user", "I moved to Lisbon last May with my dog Rex"],
    ["lisbon", "assistant", "How are Lisbon and Rex treating you?"],
    ["lisbon", "user", "Rex loves the beach at Cascais"],
    ["running", "user", "Bob asked me to pace him at the marathon"],
  ];
  for (const [session_id, role, content] of turns) {
    await call("POST", "/episodes", { session_id, role, content });
  }
  await call("POST", "/facts", { subject: "Alice", predicate: "lives_in", object: "Lisbon" });
  await call("POST", "/facts", { subject: "Alice", predicate: "owns", object: "Rex" });
  await call("POST", "/facts", { subject: "Rex", predicate: "is_a", object: "dog" });
  await call("POST", "/consolidate", {});
}

/** Shows `hash` and waits for the view to finish loading. */
async function show(hash, name) {
  await page.evaluate((h) => {
    document.getElementById("view").dataset.state = "stale";
    location.hash = h;
  }, hash);
  await page.waitForFunction(
    (n) => {
      const v = document.getElementById("view");
      return v.dataset.view === n && (v.dataset.state === "ready" || v.dataset.state === "error");
    },
    name,
    { timeout: 15_000 },
  );
  const state = await page.getAttribute("#view", "data-state");
  assert.equal(state, "ready", `${hash}: ${await page.textContent("#view")}`);
}

async function shot(name) {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

const viewText = () => page.textContent("#view");

before(async () => {
  base = await startServer();
  await seed();
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // A 401 shows as a failed load; anything else is the page's fault.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(m.text());
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("without the key the console says so, with it the views load", async () => {
  await page.goto(`${base}/ui#/memories`);
  await page.waitForSelector("#view[data-state=error]");
  assert.match(await viewText(), /unauthorized/);
  assert.match(await viewText(), /API key/);
  await page.fill("#apikey", KEY);
  await page.dispatchEvent("#apikey", "change");
  await page.waitForSelector("#view[data-state=ready]");
  assert.match(await viewText(), /oat milk/);
});

test("a search shows each hit's score explanation", async () => {
  await show("#/search", "search");
  await page.fill("input[name=q]", "oat milk coffee");
  await page.click("form.filters button[type=submit]");
  await page.waitForSelector(".hit .explanation");
  // The hash embedder's cosine is noise: the words find it, wherever it ranks.
  const hit = page.locator(".hit", { hasText: "oat milk" });
  assert.equal(await hit.count(), 1);
  await hit.locator("details").evaluate((d) => {
    d.open = true;
  });
  const why = await hit.locator(".explanation").textContent();
  for (const part of ["channel", "fts", "vector", "relevance", "recency", "importance", "layer", "rrf"]) {
    assert.ok(why.includes(part), `explanation lacks ${part}: ${why}`);
  }
  assert.match(why, /blend .* bm25 .* cosine/);
  await shot("search");
});

test("memories filter by layer, kind and tag", async () => {
  await show("#/memories?kind=episodic", "memories");
  let text = await viewText();
  assert.match(text, /Berlin marathon/);
  assert.doesNotMatch(text, /oat milk/);
  await show("#/memories?tag=food&layer=buffer", "memories");
  text = await viewText();
  assert.match(text, /oat milk/);
  assert.doesNotMatch(text, /Berlin/);
  await show("#/memories", "memories");
  await shot("memories");
});

test("stored text is shown as text, never run as HTML", async () => {
  await show(`#/memory/${ids.script}`, "memory");
  assert.match(await viewText(), /<img src=x onerror=alert\(1\)>/);
  assert.equal(await page.locator("#view img").count(), 0);
});

test("a memory's history puts an earlier version back, and the audit trail says so", async () => {
  await show(`#/memory/${ids.marathon}`, "memory");
  const text = await viewText();
  assert.match(text, /late September/);
  assert.match(text, /History/);
  assert.match(text, /Provenance/);
  await shot("memory");
  await page.click("text=Put back");
  await page.waitForFunction(() => {
    const v = document.getElementById("view");
    return v.dataset.state === "ready" && v.querySelector("blockquote")?.textContent.includes("marathon in September");
  });
  const stored = await call("GET", `/memories/${ids.marathon}`);
  assert.equal(stored.content, "Bob is training for the Berlin marathon in September");
  assert.match(await viewText(), /revert/);
});

test("the trash lists what was deleted with its reason, and restores it", async () => {
  await show("#/trash", "trash");
  assert.match(await viewText(), /blue-green/);
  assert.match(await viewText(), /obsolete runbook/);
  await shot("trash");
  await page.click("text=Restore");
  await page.waitForFunction(() => !document.getElementById("view").textContent.includes("blue-green"));
  const stored = await call("GET", `/memories/${ids.deploy}`);
  assert.equal(stored.valid_until, null);
});

test("sessions list their turns in order", async () => {
  await show("#/sessions", "sessions");
  assert.match(await viewText(), /lisbon/);
  assert.match(await viewText(), /running/);
  await show("#/session/lisbon", "session");
  const turns = await page.locator(".turn p").allTextContents();
  assert.deepEqual(turns, [
    "I moved to Lisbon last May with my dog Rex",
    "How are Lisbon and Rex treating you?",
    "Rex loves the beach at Cascais",
  ]);
  await shot("session");
});

test("the topic tree shows every topic the API lists", async () => {
  const { topics } = await call("GET", "/topics");
  await show("#/topics", "topics");
  assert.equal(await page.locator(".tree li").count(), topics.length);
  if (topics.length === 0) assert.match(await viewText(), /No topics yet/);
});

test("facts, conflicts and an entity's graph", async () => {
  await show("#/facts?entity=Alice", "facts");
  const text = await viewText();
  assert.match(text, /lives_in/);
  assert.match(text, /owns/);
  assert.match(text, /No conflicting facts/);
  await show("#/entity/Alice", "entity");
  assert.ok((await page.locator("svg.graph circle").count()) >= 3, "Alice, Lisbon, Rex (and dog within two hops)");
  assert.match(await viewText(), /is_a/);
  await shot("entity");
});

test("the usage ledger prices each component", async () => {
  const { summary } = await call("GET", "/llm-usage");
  const row = summary.find((r) => r.model === "hash-384");
  assert.equal(row.cost_usd, (row.input_tokens * 100) / 1e6);
  await show("#/usage", "usage");
  const text = await viewText();
  assert.match(text, /embedding/);
  assert.match(text, /hash-384/);
  assert.ok(text.includes(`$${row.cost_usd.toFixed(4)}`), text);
  // The LLM steps' state, from /llm/waiting (the console's server has no LLM).
  assert.match(text, /LLM steps/);
  assert.match(text, /Every LLM step answers\./);
  assert.match(text, /Nothing waits\./);
  await shot("usage");
});

test("the decision log filters by action", async () => {
  await show("#/decisions?action=delete", "decisions");
  const actions = await page.locator("#view tbody tr td:nth-child(2)").allTextContents();
  assert.ok(actions.length >= 1);
  assert.ok(actions.every((a) => a === "delete"), actions.join(","));
  await show("#/decisions", "decisions");
  assert.match(await viewText(), /restore/);
  await shot("decisions");
});

test("no view raised a script or content-security error", () => {
  assert.deepEqual(pageErrors, []);
});
