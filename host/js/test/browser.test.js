// The demo page in headless Chromium (Debian's `chromium`, driven by
// playwright-core), served by a one-line static server: the engine loads
// in the page, remembers, recalls with each hit's explanation, and the
// memory is still there after a reload (OPFS).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const root = fileURLToPath(new URL('..', import.meta.url));

let server;
let base;
let browser;

before(async () => {
  server = spawn('python3', ['-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  base = await new Promise((resolve, reject) => {
    server.once('error', reject);
    const seen = (d) => {
      const port = String(d).match(/port (\d+)/)?.[1];
      if (port) resolve(`http://127.0.0.1:${port}`);
    };
    server.stdout.on('data', seen);
    server.stderr.on('data', seen);
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});

after(async () => {
  await browser?.close();
  server?.kill();
});

test('the demo page keeps an agent memory in the page and explains each hit', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${base}/demo/index.html`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
  assert.match(await page.textContent('#status'), /ready: 0 memories/);

  for (const text of [
    'The staging database runs on Postgres 16.',
    'Lunch with the design team is at noon on Fridays.',
    'The cat is called Miso.',
  ]) {
    await page.fill('#memory', text);
    await page.click('#remember button');
    await page.waitForFunction((t) => document.querySelector('#memory').value === '' && document.querySelector('#status').textContent.includes('remembered'), text);
  }
  await page.fill('#query', 'which postgres version does staging run');
  await page.click('#recall button');
  await page.waitForSelector('li.hit');
  assert.equal(await page.textContent('li.hit .content'), 'The staging database runs on Postgres 16.');
  const why = await page.textContent('li.hit .why');
  assert.match(why, /fts #1/);
  assert.match(why, /relevance \d\.\d{3}, importance/);
  assert.match(await page.textContent('li.hit .score'), /^\d\.\d{3}$/);

  // A new page of the same origin opens the database OPFS kept.
  await page.close();
  const again = await context.newPage();
  again.on('pageerror', (e) => errors.push(String(e)));
  await again.goto(`${base}/demo/index.html`);
  await again.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
  assert.match(await again.textContent('#status'), /ready: 3 memories in OPFS/);
  await again.fill('#query', 'what is the cat called');
  await again.click('#recall button');
  await again.waitForSelector('li.hit');
  assert.equal(await again.textContent('li.hit .content'), 'The cat is called Miso.');
  assert.deepEqual(errors, []);
  await context.close();
});
