// The shared scenarios (tests/scenarios/hosts.json) on the JavaScript host.
// The native host runs the same file in tests/it/scenarios.rs.

import { after, before, test } from 'node:test';

import { SCENARIOS, runScenario, startScriptedLlm } from './support/scenarios.js';

let llm;
before(async () => {
  llm = await startScriptedLlm(SCENARIOS.llm);
});
after(() => llm.stop());

for (const scenario of SCENARIOS.scenarios) {
  test(scenario.name, () => runScenario(scenario, llm));
}
