// SPDX-License-Identifier: Apache-2.0
// ACP: an agent written with the SDK asks for terminals; the example client
// serves them with pmon. Killed and released → nothing left; left
// unreleased when the connection closes → stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESCAPER, records, gone, running, perFile } from './helpers.mjs';
import { promptAgent } from '../../examples/acp_client.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const agent = join(here, '..', 'fixtures', 'acp_agent.mjs');
const { tmp, started } = perFile();

test('ACP: the agent kills and releases its terminal — the daemon and the trapping child are gone', async () => {
  const file = tmp.path('release');
  const r = await promptAgent(process.execPath, [agent], JSON.stringify({ mode: 'release', file, escaper: ESCAPER }));
  const recs = records(file);
  started.push(...recs);
  assert.equal(r.stopReason, 'end_turn');
  assert.match(r.text, /output: "w 1"/);
  assert.match(r.text, /exit: \{"exitCode":null,"signal":"SIGTERM"\}/);
  assert.equal(recs.length, 4);
  assert.deepEqual(running(recs), [], 'nothing runs once the agent released the terminal');
  assert.deepEqual(await gone(recs), []);
});

test('ACP: a terminal left unreleased is stopped when the connection closes', async () => {
  const file = tmp.path('forget');
  const r = await promptAgent(process.execPath, [agent], JSON.stringify({ mode: 'forget', file, escaper: ESCAPER }));
  const recs = records(file);
  started.push(...recs);
  assert.equal(r.stopReason, 'end_turn');
  assert.equal(recs.length, 4);
  assert.deepEqual(await gone(recs), [], 'everything is gone once the connection closed');
});
