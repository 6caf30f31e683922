// SPDX-License-Identifier: Apache-2.0
// Every message pmon mcp sends, checked against the wire schemas the SDK
// packages ship: for 2025-11-25 the 1.x SDK's (@modelcontextprotocol/sdk
// types), for 2026-07-28 the tasks extension's schemas, generated from the
// specification's JSON schema (@modelcontextprotocol/ext-tasks/core/v2),
// and the v2 client's spec type schemas (@modelcontextprotocol/client).
// A session of each revision goes through every method and tool pmon
// answers, good requests and bad; each line pmon writes is parsed as
// JSON-RPC and its result validated as the schema of what was asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import * as v1 from '@modelcontextprotocol/sdk/types.js';
import * as v2 from '@modelcontextprotocol/ext-tasks/core/v2';
import { specTypeSchemas } from '@modelcontextprotocol/client';
import { findPmon } from '../index.mjs';

const PMON = findPmon();
const MODERN = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';

// pmon mcp over pipes, every line it writes kept; request() answers with
// the response to that request. Ended with the test whatever happens (a
// failed assertion included): a child left running would keep node --test
// waiting for good.
function server(t) {
  const child = spawn(PMON, ['mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  const lines = [];
  const waiting = new Map();
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    const msg = JSON.parse(line);
    if (msg.id !== undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  });
  let n = 0;
  return {
    lines,
    request(method, params) {
      const id = ++n;
      const answer = new Promise((resolve) => waiting.set(id, resolve));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
      return answer;
    },
    notify(method, params) {
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
    },
    async close() {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function valid(schema, value, what) {
  const r = schema.safeParse ? schema.safeParse(value) : null;
  if (r) {
    assert.ok(r.success, `${what}: ${JSON.stringify(r.error?.issues ?? r.error)}\n${JSON.stringify(value)}`);
    return;
  }
  const s = schema['~standard'].validate(value);
  assert.equal(s.issues, undefined, `${what}: ${JSON.stringify(s.issues)}\n${JSON.stringify(value)}`);
}

// Every line is one JSON-RPC message of the revision's envelope.
function envelopes(lines) {
  assert.ok(lines.length > 0);
  for (const line of lines) valid(v1.JSONRPCMessageSchema, JSON.parse(line), 'a JSON-RPC message');
}

test('2025-11-25: every message pmon mcp sends is valid in the 1.x SDK\'s schemas', async (t) => {
  const s = server(t);
  const checked = [];
  const expect = async (method, params, schema) => {
    const m = await s.request(method, params);
    if (schema === 'error') valid(v1.JSONRPCErrorResponseSchema, m, `${method}: error`);
    else {
      assert.equal(m.error, undefined, `${method}: ${JSON.stringify(m.error)}`);
      valid(schema, m.result, method);
    }
    checked.push(method);
    return m.result;
  };
  await expect('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    v1.InitializeResultSchema);
  s.notify('notifications/initialized', {});
  await expect('ping', {}, v1.EmptyResultSchema);
  await expect('logging/setLevel', { level: 'info' }, v1.EmptyResultSchema);
  const { tools } = await expect('tools/list', {}, v1.ListToolsResultSchema);
  for (const t of tools) valid(v1.ToolSchema, t, `tool ${t.name}`);
  const call = (name, args) => expect('tools/call', { name, arguments: args }, v1.CallToolResultSchema);
  await call('run', { command: 'echo hi' });
  await call('run', { command: 'sleep 1; echo later', background_after_s: 0.1 });
  const started = await call('start', { command: 'read x; echo got $x', name: 'reader' });
  const id = started.structuredContent.id;
  await call('start', { command: 'sleep 5', name: 'reader' });
  await call('write', { id, data: 'one\n' });
  await call('wait', { id, timeout_s: 5 });
  await call('output', { id });
  await call('list', {});
  const web = await call('start', { command: 'exec python3 -m http.server 0 --bind 127.0.0.1' });
  await call('wait_for_port', { id: web.structuredContent.id, timeout_s: 10 });
  await call('kill', { id: web.structuredContent.id });
  await call('kill', { id: 'tnothing' });
  await call('run', { command: 42 });
  // tasks
  const created = await expect('tools/call', { name: 'start', arguments: { command: 'sleep 30' }, task: {} },
    v1.CreateTaskResultSchema);
  await expect('tasks/get', { taskId: created.task.taskId }, v1.GetTaskResultSchema);
  await expect('tasks/list', {}, v1.ListTasksResultSchema);
  await expect('tasks/cancel', { taskId: created.task.taskId }, v1.CancelTaskResultSchema);
  await expect('tasks/result', { taskId: created.task.taskId }, v1.CallToolResultSchema);
  const run = await expect('tools/call', { name: 'run', arguments: { command: 'echo task' }, task: { ttl: 1000 } },
    v1.CreateTaskResultSchema);
  await expect('tasks/result', { taskId: run.task.taskId }, v1.CallToolResultSchema);
  // the errors
  await expect('tasks/cancel', { taskId: run.task.taskId }, 'error');
  await expect('tasks/get', { taskId: 'tnothing' }, 'error');
  await expect('tasks/get', {}, 'error');
  await expect('tools/call', { name: 'nothing' }, 'error');
  await expect('no/such/method', {}, 'error');
  await expect('logging/setLevel', { level: 'loud' }, 'error');
  await s.close();
  envelopes(s.lines);
  // The log messages of the jobs that ended.
  const notes = s.lines.map((l) => JSON.parse(l)).filter((m) => m.method);
  assert.ok(notes.length > 0, 'jobs\' ends were told');
  for (const n of notes) valid(v1.LoggingMessageNotificationSchema, n, 'notifications/message');
  assert.ok(checked.length >= 30);
});

test('2026-07-28: every message pmon mcp sends is valid in the tasks extension\'s and the v2 client\'s schemas', async (t) => {
  const s = server(t);
  const caps = { extensions: { [TASKS]: {} } };
  const meta = (c = caps) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': c });
  const expect = async (method, params, check, c) => {
    const m = await s.request(method, { ...params, _meta: meta(c) });
    if (check === 'error') {
      valid(v2.ErrorV2Schema, m.error, `${method}: error`);
      return m.error;
    }
    assert.equal(m.error, undefined, `${method}: ${JSON.stringify(m.error)}`);
    assert.ok(['complete', 'task'].includes(m.result.resultType), `${method}: resultType ${m.result.resultType}`);
    check(m.result);
    return m.result;
  };
  // Cacheable results carry their hints.
  const cacheable = (r) => {
    assert.equal(typeof r.ttlMs, 'number');
    assert.ok(['public', 'private'].includes(r.cacheScope));
  };
  await expect('server/discover', {}, (r) => {
    valid(specTypeSchemas.DiscoverResult, r, 'server/discover');
    assert.ok(r.supportedVersions.includes(MODERN));
    valid(v2.TasksExtensionCapabilityV2Schema, r.capabilities.extensions[TASKS], 'the tasks capability');
    cacheable(r);
  });
  await expect('tools/list', {}, (r) => {
    valid(specTypeSchemas.ListToolsResult, r, 'tools/list');
    for (const t of r.tools) valid(v2.ToolV2Schema, t, `tool ${t.name}`);
    cacheable(r);
  });
  const tool = (name, args, c) => expect('tools/call', { name, arguments: args }, (r) => {
    if (r.resultType === 'task') valid(v2.CreateTaskResultV2Schema, r, `${name} as a task`);
    else valid(v2.CallToolResultV2Schema, r, `${name}'s result`);
  }, c);
  const none = {};
  await tool('run', { command: 'echo hi' }, none);
  await tool('run', { command: 'sleep 1; echo later', background_after_s: 0.1 }, none);
  const started = await tool('start', { command: 'read x; echo got $x' }, none);
  const id = started.structuredContent.id;
  await tool('write', { id, data: 'one\n' }, none);
  await tool('wait', { id, timeout_s: 5 }, none);
  await tool('output', { id }, none);
  await tool('list', {}, none);
  await tool('kill', { id: 'tnothing' }, none);
  // tasks
  const created = await tool('start', { command: 'sleep 30' });
  assert.equal(created.resultType, 'task');
  await expect('tasks/get', { taskId: created.taskId }, (r) => valid(v2.GetTaskResultV2Schema, r, 'tasks/get'));
  await expect('tasks/update', { taskId: created.taskId, inputResponses: {} },
    (r) => valid(v2.UpdateTaskResultV2Schema, r, 'tasks/update'));
  await expect('tasks/cancel', { taskId: created.taskId }, (r) => valid(v2.CancelTaskResultV2Schema, r, 'tasks/cancel'));
  const after = await expect('tasks/get', { taskId: created.taskId }, (r) => valid(v2.GetTaskResultV2Schema, r, 'tasks/get'));
  assert.equal(after.status, 'cancelled');
  const run = await tool('run', { command: 'sleep 0.5; echo done', background_after_s: 0.1 });
  assert.equal(run.resultType, 'task');
  let done;
  for (let i = 0; i < 100 && done?.status !== 'completed'; i++) {
    done = await expect('tasks/get', { taskId: run.taskId }, (r) => valid(v2.GetTaskResultV2Schema, r, 'tasks/get'));
    if (done.status !== 'completed') await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(done.status, 'completed');
  valid(v2.CompletedTaskV2Schema, done, 'a completed task');
  // the errors
  const missing = await expect('tasks/get', { taskId: run.taskId }, 'error', none);
  assert.equal(missing.code, -32021);
  await expect('tasks/get', { taskId: 'tnothing' }, 'error');
  await expect('tools/call', { name: 'nothing' }, 'error');
  await expect('ping', {}, 'error');
  await expect('initialize', {}, 'error');
  const old = await s.request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } });
  valid(v2.ErrorV2Schema, old.error, 'an unknown revision');
  assert.deepEqual(old.error.data.requested, '2099-01-01');
  await s.close();
  envelopes(s.lines);
  assert.equal(s.lines.filter((l) => JSON.parse(l).method).length, 0, 'no log messages to a client of this revision');
});
