// SPDX-License-Identifier: Apache-2.0
// pmon mcp driven by the MCP TypeScript SDK's v2 client
// (@modelcontextprotocol/client) in each of its version-negotiation modes:
// legacy (initialize, 2025-11-25), auto (server/discover first, then the
// stateless revision if the server offers it) and pinned to 2026-07-28
// (server/discover only). In each: the tools with their schemas, a start
// answered once its job is ready, a setsid daemon and a TERM-trapping
// child gone after kill, after the client closes, and after SIGKILL of the
// server; every one by pid and start time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ESCAPER, gone, waitRecords, scratch, cleanup, running, procStat, present } from './helpers.mjs';
import { findPmon } from '../index.mjs';

const PMON = findPmon();
const tmp = scratch();
const started = [];
after(() => {
  cleanup(started);
  tmp.remove();
});

const MODES = [
  { label: 'legacy', negotiation: { mode: 'legacy' }, version: '2025-11-25' },
  { label: 'auto', negotiation: { mode: 'auto' }, version: '2026-07-28' },
  { label: 'pinned 2026-07-28', negotiation: { mode: { pin: '2026-07-28' } }, version: '2026-07-28' },
];

async function connect(mode) {
  const transport = new StdioClientTransport({ command: PMON, args: ['mcp'], stderr: 'inherit' });
  const client = new Client({ name: 'pmon-test-v2', version: '1.0.0' }, { versionNegotiation: mode.negotiation });
  await client.connect(transport);
  const server = { pid: transport.pid, start: procStat(transport.pid).start, name: 'pmon mcp' };
  started.push(server);
  return { client, transport, server };
}

const call = (client, name, args) => client.callTool({ name, arguments: args });

async function jobs(client, label, n) {
  const recs = [];
  for (let i = 0; i < n; i++) {
    const file = tmp.path(`${label.replace(/\W/g, '_')}${i}`);
    const s = await call(client, 'start', { command: `exec ${ESCAPER} ${file} -x sleep name=d${i},orphan,setsid name=t${i},trap` });
    assert.equal(s.isError, false, JSON.stringify(s));
    recs.push(...(await waitRecords(file, 3)));
  }
  started.push(...recs);
  return recs;
}

for (const mode of MODES) {
  test(`v2 client, ${mode.label}: the revision, the tools and their schemas`, async () => {
    const { client } = await connect(mode);
    assert.equal(client.getNegotiatedProtocolVersion(), mode.version);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(),
      ['kill', 'list', 'output', 'run', 'start', 'wait', 'wait_for_port', 'write']);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema.type, 'object', t.name);
    }
    const r = await call(client, 'run', { command: 'echo hi; exit 3' });
    assert.equal(r.structuredContent.exit_code, 3);
    assert.match(r.content[0].text, /^hi\n/);
    // A start with a readiness probe is answered once the job is ready,
    // after the request has been read: in the request's revision still.
    const s = await call(client, 'start', { command: 'sleep 0.3; echo up; exec sleep 100', ready_line: 'up', ready_timeout_s: 20 });
    assert.equal(s.structuredContent.ready, true, s.content[0].text);
    assert.equal((await call(client, 'kill', { id: s.structuredContent.id })).structuredContent.cleanup_verified, true);
    await client.close();
  });

  test(`v2 client, ${mode.label}: kill stops a setsid daemon and a TERM-trapper`, async () => {
    const { client } = await connect(mode);
    const recs = await jobs(client, `kill ${mode.label}`, 1);
    const id = (await call(client, 'list', {})).structuredContent.jobs[0].id;
    const k = await call(client, 'kill', { id });
    assert.equal(k.structuredContent.cleanup_verified, true);
    assert.deepEqual(running(recs), [], 'nothing of the job runs once kill returned');
    await client.close();
  });

  test(`v2 client, ${mode.label}: the jobs are gone once the client closes`, async () => {
    const { client, server } = await connect(mode);
    const recs = await jobs(client, `close ${mode.label}`, 2);
    await client.close();
    assert.deepEqual(await gone([...recs, server]), []);
  });

  test(`v2 client, ${mode.label}: the jobs are gone after SIGKILL of pmon mcp`, async () => {
    const { client, server, transport } = await connect(mode);
    const recs = await jobs(client, `sigkill ${mode.label}`, 2);
    assert.ok(recs.every(present));
    process.kill(transport.pid, 'SIGKILL');
    assert.deepEqual(await gone([...recs, server]), []);
    await client.close().catch(() => {});
  });
}
