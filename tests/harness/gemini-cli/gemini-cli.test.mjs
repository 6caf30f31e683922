// SPDX-License-Identifier: Apache-2.0
// Gemini CLI (the npm package, pinned in package-lock.json) against a
// scripted Gemini API on 127.0.0.1: its own shell tool, run_shell_command,
// runs the workload line, and the run ends normally or by SIGKILL. Without
// pmon the workload outlives the CLI; through pmon mcp, nothing is left.
// pmon's BeforeTool hook blocks the call (a rewrite would turn the CLI's
// policy rules off).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  PMON, PMON_SHELL, workloadLine, freePort, portBound, waitFor, startHarness,
  leftover, records, running, cleanup, scratch,
} from '../lib.mjs';
import { startModel } from './model.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const GEMINI = join(here, 'node_modules', '.bin', 'gemini');
const VERSION = JSON.parse(readFileSync(join(here, 'node_modules', '@google', 'gemini-cli', 'package.json'), 'utf8')).version;

const model = await startModel(null);
const leaked = [];
after(async () => {
  cleanup(leaked);
  await model.close();
});

// The hook as the docs once gave it, with pmon and pmon-shell named by the
// paths under test.
const hookSettings = {
  hooks: {
    BeforeTool: [{
      matcher: 'run_shell_command',
      hooks: [{ type: 'command', command: `${PMON} hook-rewrite --shell ${PMON_SHELL}` }],
    }],
  },
};
const mcpSettings = {
  mcpServers: { pmon: { command: PMON, args: ['mcp'], trust: true } },
};

// The process that runs the agent and its tools. The npm bin is a small
// node launcher that relaunches the CLI as a second node process (with a
// larger heap) and only waits for it: killing the launcher alone leaves
// that child running the session (and the tool call) as before, orphaned.
// So a SIGKILL of "the CLI" here is a SIGKILL of that child, the process
// that is the CLI as its tools see it (their parent; also the one the
// out-of-memory killer would pick); the launcher then exits by itself.
function cliProcess(launcher) {
  try {
    const kids = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8').trim().split(/\s+/);
    return kids[0] ? Number(kids[0]) : null;
  } catch { return null; }
}

// One run of the CLI in a scratch HOME: the model asks for TOOL with ARGS;
// with kill, the CLI is SIGKILLed once the workload is up.
async function run(t, { settings = {}, policy, call, rec, port, kill = false }) {
  const tmp = scratch();
  t.after(() => tmp.remove());
  const home = tmp.path('home');
  const cwd = tmp.path('work');
  mkdirSync(join(home, '.gemini'), { recursive: true });
  mkdirSync(join(home, 'tmp'));
  mkdirSync(cwd);
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    ...settings,
  }, null, 2));
  if (policy) {
    mkdirSync(join(home, '.gemini', 'policies'));
    writeFileSync(join(home, '.gemini', 'policies', 'rules.toml'), policy);
  }
  model.requests.length = 0;
  model.call = call;
  const h = startHarness(GEMINI, ['-p', 'Start the dev server.', '--approval-mode', 'yolo',
    '-m', 'gemini-2.5-flash', '--output-format', 'json'], {
    cwd,
    timeoutMs: 60000,
    env: {
      HOME: home,
      // (its shell tool's temporary directories, removed with the scratch)
      TMPDIR: join(home, 'tmp'),
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_CACHE_HOME: join(home, '.cache'),
      XDG_DATA_HOME: join(home, '.local', 'share'),
      XDG_STATE_HOME: join(home, '.local', 'state'),
      GEMINI_API_KEY: 'dummy-key',
      GOOGLE_GEMINI_BASE_URL: model.url,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      GEMINI_TELEMETRY_ENABLED: 'false',
      GOOGLE_CLOUD_PROJECT: '',
      GOOGLE_API_KEY: '',
      NO_COLOR: '1',
    },
  });
  t.after(() => { if (h.child.exitCode === null && h.child.signalCode === null) h.child.kill('SIGKILL'); });
  if (kill) {
    // The workload is up: its three processes recorded and the port bound.
    const up = await waitFor(async () => records(rec).length >= 3 && await portBound(port), 40000);
    leaked.push(...records(rec));
    assert.ok(up, `the workload did not come up:\n${h.out()}`);
    const cli = cliProcess(h.child.pid);
    assert.ok(cli, 'no CLI process under the launcher');
    process.kill(cli, 'SIGKILL');
  }
  const end = await h.ended;
  leaked.push(...records(rec));
  assert.ok(!end.timedOut, `the CLI did not end:\n${h.out()}`);
  if (!kill) {
    assert.equal(end.code, 0, h.out());
    // The tool really ran and its result went back to the model.
    assert.ok(model.toolResults().length > 0, `no tool result reached the model:\n${h.out()}`);
  }
  return h;
}

const shellCall = (rec, port, hold) => ({ tool: 'run_shell_command', args: { command: workloadLine(rec, port, hold) } });

test(`Gemini CLI ${VERSION} without pmon, normal end: the workload outlives the session`, async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('rec'); const port = await freePort();
  await run(t, { call: shellCall(rec, port, false), rec, port });
  const left = await leftover(rec, port, 500);
  try {
    assert.equal(left.recorded.length, 3, 'the workload did not run');
    assert.ok(left.alive.some((p) => p.name === 'daemon'), 'the daemon did not leak: this control shows nothing');
  } finally { cleanup(left.recorded); }
});

test(`Gemini CLI ${VERSION} without pmon, SIGKILL: the workload outlives the CLI`, async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('rec'); const port = await freePort();
  await run(t, { call: shellCall(rec, port, true), rec, port, kill: true });
  const left = await leftover(rec, port, 500);
  try {
    assert.ok(left.alive.length > 0 && left.bound, `nothing leaked: this control shows nothing (${JSON.stringify(left)})`);
  } finally { cleanup(left.recorded); }
});

// The CLI's policy rules match the command the hook hands back, so a
// rewrite would turn a user's deny rule off: pmon refuses the hook, whose
// block keeps the command from running.
const DENY_RM = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 100\n';
for (const via of ['none', 'hook']) {
  test(`Gemini CLI ${VERSION} ${via === 'hook' ? 'with the pmon hook' : 'without pmon'}: a deny rule for rm keeps the file`, async (t) => {
    const tmp = scratch(); t.after(() => tmp.remove());
    const victim = tmp.path('victim');
    writeFileSync(victim, 'x');
    const settings = via === 'hook' ? hookSettings : {};
    const h = await run(t, { settings, policy: DENY_RM, call: { tool: 'run_shell_command', args: { command: `rm -f ${victim} && echo removed` } } });
    assert.ok(existsSync(victim), `the restriction did not hold:\n${h.out()}`);
  });
}

test(`Gemini CLI ${VERSION} with the pmon hook: refused with one line naming pmon mcp, even for a line that starts with pmon-shell`, async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('rec'); const port = await freePort();
  await run(t, { settings: hookSettings, call: { tool: 'run_shell_command', args: { command: `'${PMON_SHELL}' true; ${workloadLine(rec, port)}` } } });
  const list = records(rec);
  leaked.push(...list);
  assert.deepEqual(list, [], 'the line ran');
  assert.match(JSON.stringify(model.toolResults()), /pmon mcp/, 'the refusal names pmon mcp');
});

const startCall = (rec, port, hold, stall = false) =>
  ({ tool: 'mcp_pmon_start', args: { command: workloadLine(rec, port, hold) }, stall });

test(`Gemini CLI ${VERSION} with pmon mcp, the model starting the workload as a job, normal end: nothing is left`, async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('rec'); const port = await freePort();
  // The job runs in the background: the model ends the session once the
  // workload is up, so the end of the session is what stops it.
  const call = { ...startCall(rec, port, true),
    until: () => waitFor(async () => records(rec).length >= 3 && await portBound(port), 30000) };
  await run(t, { settings: mcpSettings, call, rec, port });
  assert.ok(model.toolResults().some((r) => r.name === 'mcp_pmon_start' && JSON.stringify(r).includes('id')),
    `pmon's start tool did not answer: ${JSON.stringify(model.toolResults())}`);
  const left = await leftover(rec, port);
  try {
    assert.equal(left.recorded.length, 3, 'the workload did not run');
    assert.deepEqual(left.alive, []);
    assert.equal(left.bound, false);
  } finally { cleanup(left.recorded); }
});

test(`Gemini CLI ${VERSION} with pmon mcp, the model starting the workload as a job, SIGKILL: nothing is left`, async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('rec'); const port = await freePort();
  // The model never answers after the tool's result: the CLI is still in
  // its session, with the job running, when it is killed.
  await run(t, { settings: mcpSettings, call: startCall(rec, port, true, true), rec, port, kill: true });
  assert.ok(model.toolResults().some((r) => r.name === 'mcp_pmon_start'), 'the start tool was not called');
  const left = await leftover(rec, port);
  try {
    assert.equal(left.recorded.length, 3, 'the workload did not run');
    assert.deepEqual(left.alive, []);
    assert.equal(left.bound, false);
  } finally { cleanup(left.recorded); }
});
