// The demo page: an agent's memory kept in the page — the same core.wasm
// as the native server, SQLite in WASM, the database saved to the origin-
// private file system after each write, so it is there on the next visit.

import { Mnemo } from '../src/index.js';

const $ = (id) => document.getElementById(id);
const status = (text) => ($('status').textContent = text);

const mnemo = await Mnemo.open({ opfs: 'mnemo-demo.db' });
const show = async () => {
  const s = await mnemo.stats();
  status(`ready: ${s.active} memories in OPFS (mnemo-demo.db)`);
};
await show();
document.body.dataset.ready = 'true';

$('remember').addEventListener('submit', async (e) => {
  e.preventDefault();
  const content = $('memory').value.trim();
  if (!content) return;
  try {
    const out = await mnemo.remember({ content });
    $('memory').value = '';
    await mnemo.flush();
    await show();
    status(`${out.created ? 'remembered' : `already known (${out.dedupReason})`} — ${$('status').textContent}`);
  } catch (err) {
    status(`${err.kind}: ${err.message}`);
  }
});

$('recall').addEventListener('submit', async (e) => {
  e.preventDefault();
  const query = $('query').value.trim();
  if (!query) return;
  await mnemo.flush();
  const res = await mnemo.recall({ query, dry: true });
  $('hits').replaceChildren(
    ...res.hits.map((h) => {
      const x = h.explanation;
      const li = document.createElement('li');
      li.className = 'hit';
      const channels = x.channels.map((c) => `${c.channel} #${c.rank}`).join(', ');
      li.innerHTML = '<span class="score"></span> <span class="content"></span><div class="why"></div>';
      li.querySelector('.score').textContent = h.score.toFixed(3);
      li.querySelector('.content').textContent = h.item.val.content;
      li.querySelector('.why').textContent =
        `${channels}; relevance ${x.relevance.toFixed(3)}, importance ${x.importance.toFixed(2)}, ` +
        `recency ${x.recency.toFixed(2)}, layer ×${x.layerBonus.toFixed(2)}` +
        (x.notes.length ? `; ${x.notes.join('; ')}` : '');
      return li;
    }),
  );
  status(`${res.hits.length} hits from ${res.candidates} candidates (${res.channelsRun.join(', ')})`);
});
