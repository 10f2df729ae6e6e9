// Compiled (not run) by test/types.test.js: the README's usage, typed.
import { Mnemo, MnemoError, drivenClock } from '../../src/index.js';

async function main(): Promise<void> {
  const mnemo = await Mnemo.open({ file: 'agent.db', clock: drivenClock(Date.now()) });
  const saved = await mnemo.remember({ content: 'The user prefers dark mode', tags: ['ui'] });
  const id: string = saved.memory.id;
  const { hits } = await mnemo.recall({ query: 'which theme?', limit: 5 });
  for (const hit of hits) {
    const text: string = hit.item.tag === 'memory' ? hit.item.val.content : hit.item.val.content;
    const why: number = hit.explanation.relevance;
    console.log(text, hit.score, why, id);
  }
  try {
    await mnemo.remember({ content: '' });
  } catch (e) {
    if (e instanceof MnemoError && e.kind === 'invalid-input') console.log(e.message);
  }
  const lines: string[] = await mnemo.export();
  const counts = await (await Mnemo.open()).import(lines);
  console.log(counts.created, (await mnemo.stats()).active);
  await mnemo.close();
}

void main();
