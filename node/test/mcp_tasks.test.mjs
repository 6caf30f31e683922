// SPDX-License-Identifier: Apache-2.0
// pmon mcp's tasks, driven by the SDKs' own task clients: the 1.x SDK's
// experimental tasks API (the 2025-11-25 revision's tasks), and the tasks
// extension's client (@modelcontextprotocol/ext-tasks) over the v2 client,
// in legacy mode (2025-11-25), pinned to 2026-07-28 and in auto mode (the
// io.modelcontextprotocol/tasks extension). In each: a started job is a
// task, polled while it runs and cancelled, and its setsid daemon and
// TERM-trapper are gone by pid and start time the moment the cancel is
// answered; a run is a task whose outcome carries the command's output and
// exit. The TERM-trapper goes only by SIGKILL, after the grace: a cancel
// answered before the tree is stopped is answered sooner than the grace,
// and the trapper is still there when the answer comes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { ESCAPER, waitRecords, scratch, cleanup, running } from './helpers.mjs';
import { findPmon } from '../index.mjs';

const PMON = findPmon();
const tmp = scratch();
const started = [];
const closers = [];
after(async () => {
  for (const close of closers) await close().catch(() => {});
  cleanup(started);
  tmp.remove();
});

const TASKS = 'io.modelcontextprotocol/tasks';
const GRACE_MS = 2000;
const MCP_ARGS = ['mcp', '--grace', `${GRACE_MS}ms`];

// Cancels with `cancel` (a function that sends tasks/cancel and resolves
// with its answer) and checks, as the answer arrives, that the whole tree
// `recs` is gone and that the answer did not come before the grace (the
// trapper cannot have gone sooner). Returns the answer.
async function cancelled(cancel, recs) {
  const sent = performance.now();
  const answer = await cancel();
  const left = running(recs);
  const took = performance.now() - sent;
  assert.deepEqual(left, [], 'the task\'s whole tree is gone when the cancel is answered');
  // (less a margin for the two clocks' rounding)
  assert.ok(took >= GRACE_MS - 50, `the cancel was answered after ${took.toFixed(0)} ms, before the trapper's grace`);
  return answer;
}
let files = 0;
// A job whose main process sleeps with a setsid daemon and a TERM-trapper
// beside it; its records file.
function escapeJob() {
  const file = tmp.path(`tasks${files++}`);
  return { file, command: `exec ${ESCAPER} ${file} -x sleep name=d,orphan,setsid name=t,trap` };
}

async function alive(file) {
  const recs = await waitRecords(file, 3);
  started.push(...recs);
  assert.equal(running(recs).length, 3, 'the job and what it started run');
  return recs;
}

// --- the 1.x SDK's experimental tasks API (2025-11-25) ---

test('1.x SDK tasks: the tools that can be tasks say so; a start is a task, polled, listed, cancelled, its tree gone', async () => {
  const transport = new StdioV1({ command: PMON, args: MCP_ARGS, stderr: 'inherit' });
  const client = new ClientV1({ name: 'pmon-test-tasks-v1', version: '1.0.0' });
  await client.connect(transport);
  closers.push(() => client.close());
  assert.ok(client.getServerCapabilities().tasks?.requests?.tools?.call, 'tools/call can be a task');
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
  assert.equal(support.run, 'optional');
  assert.equal(support.start, 'optional');
  assert.equal(support.kill, 'forbidden');

  const job = escapeJob();
  let created;
  for await (const msg of client.experimental.tasks.callToolStream({ name: 'start', arguments: { command: job.command } })) {
    if (msg.type === 'taskCreated') {
      created = msg.task;
      break;
    }
    assert.notEqual(msg.type, 'error', JSON.stringify(msg));
  }
  assert.ok(created?.taskId, 'a task was created');
  assert.equal(created.status, 'working');
  const recs = await alive(job.file);
  const polled = await client.experimental.tasks.getTask(created.taskId);
  assert.equal(polled.status, 'working');
  assert.match(polled.statusMessage, /is running/);
  const { tasks } = await client.experimental.tasks.listTasks();
  assert.ok(tasks.some((t) => t.taskId === created.taskId), 'tasks/list has it');

  const answer = await cancelled(() => client.experimental.tasks.cancelTask(created.taskId), recs);
  assert.equal(answer.status, 'cancelled');
  assert.match(answer.statusMessage, /nothing it started is left/);
  await assert.rejects(client.experimental.tasks.cancelTask(created.taskId), /already over/);
});

test('1.x SDK tasks: a run as a task streams its status and then its result', async () => {
  const transport = new StdioV1({ command: PMON, args: MCP_ARGS, stderr: 'inherit' });
  const client = new ClientV1({ name: 'pmon-test-tasks-v1', version: '1.0.0' });
  await client.connect(transport);
  closers.push(() => client.close());
  await client.listTools();  // what the client learns of which tools can be tasks
  const seen = [];
  let result;
  for await (const msg of client.experimental.tasks.callToolStream({
    name: 'run',
    arguments: { command: 'echo first; sleep 1.5; echo second; exit 3' },
  })) {
    seen.push(msg.type);
    if (msg.type === 'result') result = msg.result;
    assert.notEqual(msg.type, 'error', JSON.stringify(msg));
  }
  assert.equal(seen[0], 'taskCreated');
  assert.ok(result, `a result came (${seen.join(', ')})`);
  assert.equal(result.structuredContent.exit_code, 3);
  assert.equal(result.structuredContent.output, 'first\nsecond\n');
  assert.equal(result.structuredContent.cleanup_verified, true);
});

// --- the tasks extension's client over the v2 client ---

// The extension client's raw path for 2026-07-28 task traffic: a request
// sent on the client's own transport, its answer taken before the client
// sees it (the SDK client has no method of its own for tasks/* there).
function rawDispatch(transport) {
  const pending = new Map();
  let n = 0;
  const deliver = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg && msg.id !== undefined && pending.has(msg.id)) {
      const done = pending.get(msg.id);
      pending.delete(msg.id);
      done(msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result });
      return;
    }
    deliver?.call(transport, msg, extra);
  };
  return async (request) => {
    const id = `pmon-test-raw-${++n}`;
    const answer = new Promise((resolve) => pending.set(id, resolve));
    await transport.send({ ...request, jsonrpc: '2.0', id });
    return answer;
  };
}

const MODES = [
  { label: 'legacy', negotiation: { mode: 'legacy' }, version: '2025-11-25' },
  { label: 'pinned 2026-07-28', negotiation: { mode: { pin: '2026-07-28' } }, version: '2026-07-28' },
  { label: 'auto', negotiation: { mode: 'auto' }, version: '2026-07-28' },
];

async function session(mode) {
  const transport = new StdioClientTransport({ command: PMON, args: MCP_ARGS, stderr: 'inherit' });
  const client = new Client({ name: 'pmon-test-tasks-v2', version: '1.0.0' }, { versionNegotiation: mode.negotiation });
  await client.connect(transport);
  assert.equal(client.getNegotiatedProtocolVersion(), mode.version);
  const options = { endpointId: `pmon-test-${mode.label}` };
  if (mode.version === '2026-07-28') {
    options.rawDispatch = rawDispatch(transport);
    options.v2RequestFraming = {
      protocolVersion: '2026-07-28',
      clientInfo: { name: 'pmon-test-tasks-v2', version: '1.0.0' },
      clientCapabilities: { extensions: { [TASKS]: {} } },
    };
  }
  const s = createTaskSessionFromClient(client, options);
  closers.push(async () => {
    await s.close();
    await client.close();
  });
  return s;
}

for (const mode of MODES) {
  test(`tasks extension client, ${mode.label}: a start is a task, polled, cancelled, its tree gone`, async () => {
    const s = await session(mode);
    assert.equal(s.capabilities.execution, true, JSON.stringify(s.capabilities));
    assert.equal(s.capabilities.cancellation, true);
    const job = escapeJob();
    const execution = await s.callTool('start', { command: job.command }, { task: { preference: 'require' } });
    assert.equal(execution.kind, 'task');
    const recs = await alive(job.file);
    const task = s.task(execution.handle.taskId);
    const snap = await task.snapshot();
    assert.equal(snap.status, 'working');
    assert.match(snap.statusMessage, /is running/);
    // Each revision acknowledges the cancel once the tree is verified gone.
    await cancelled(() => task.cancel(), recs);
    const after = await task.snapshot();
    assert.equal(after.status, 'cancelled');
    const outcome = await execution.result();
    assert.equal(outcome.status, 'cancelled');
  });

  test(`tasks extension client, ${mode.label}: a run past its background time is a task with the run's outcome`, async () => {
    const s = await session(mode);
    const execution = await s.callTool('run', { command: 'echo first; sleep 1.5; echo second; exit 3', background_after_s: 0.5 },
      { task: { preference: 'prefer' } });
    assert.equal(execution.kind, 'task');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
    assert.equal(outcome.result.structuredContent.exit_code, 3);
    assert.equal(outcome.result.structuredContent.output, 'first\nsecond\n');
    assert.equal(outcome.result.structuredContent.cleanup_verified, true);
  });
}

test('tasks extension client, pinned 2026-07-28: a run that ends in time is its plain result, not a task', async () => {
  const s = await session(MODES[1]);
  const execution = await s.callTool('run', { command: 'echo quick' });
  assert.equal(execution.kind, 'immediate');
  const outcome = await execution.result();
  assert.equal(outcome.status, 'completed');
  assert.equal(outcome.result.structuredContent.output, 'quick\n');
});
