// SPDX-License-Identifier: Apache-2.0
// The real Codex CLI (@openai/codex, pinned in package-lock.json), run as
// `codex exec` against a scripted model on 127.0.0.1 (model.mjs). The model
// asks Codex's own shell tool (exec_command) to run the workload: a setsid
// daemon and a dev server. Without pmon they outlive the session; through
// pmon mcp nothing does, whether Codex ends normally or is killed with
// SIGKILL. A PreToolUse hook could only rewrite the command with "allow",
// which skips Codex's rules: pmon hook-rewrite blocks the call instead.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { startModel } from './model.mjs';
import {
  PMON, PMON_SHELL, workloadLine, freePort, portBound, waitFor, startHarness,
  leftover, records, running, cleanup, scratch,
} from '../lib.mjs';

// The harness as a user sees it: the native codex binary. The npm bin
// (bin/codex.js) replaces itself with that binary (execve) on Node versions
// that have process.execve, and on older ones spawns it as a child, so a
// SIGKILL of the wrapper would hit node, not Codex. Spawning the binary the
// wrapper would run makes the killed pid Codex itself on every Node version.
const require = createRequire(import.meta.url);
const TRIPLES = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };
const CODEX = join(
  dirname(require.resolve(`@openai/codex-linux-${process.arch}/package.json`)),
  'vendor', TRIPLES[process.arch], 'bin', 'codex');

const tmp = scratch();
const recorded = [];
after(() => { cleanup(recorded); tmp.remove(); });

// Codex's configuration in a scratch CODEX_HOME: the scripted model as the
// provider (a dummy key), and everything that would reach the network off.
function config(modelPort, mcp) {
  return `model = "scripted"
model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
tool_suggest = false
daemon_auto_start = false
api_key_model_discovery = false

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:${modelPort}/v1"
wire_api = "responses"
env_key = "PMON_TEST_MODEL_KEY"
${mcp ? `
[mcp_servers.pmon]
command = "${PMON}"
args = ["mcp"]
` : ''}`;
}

// The hook as the docs once gave it, with pmon's full paths.
const HOOKS = {
  hooks: {
    PreToolUse: [{
      matcher: 'Bash',
      hooks: [{ type: 'command', command: `${PMON} hook-rewrite --decision allow --shell ${PMON_SHELL}` }],
    }],
  },
};

let runs = 0;

// One `codex exec` session. via: 'none' (Codex's shell tool as it is),
// 'hook' (the shell tool through pmon hook-rewrite) or 'mcp' (pmon's start
// tool). With kill, Codex is killed with SIGKILL once the workload is up
// (its tool call still running); without, the session ends normally.
async function session({ via, kill }) {
  const dir = join(tmp.dir, `run${++runs}`);
  const home = join(dir, 'home');
  const codexHome = join(home, '.codex');
  const cwd = join(dir, 'cwd');
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(cwd);
  const rec = join(dir, 'records');
  const port = await freePort();
  const up = async () => records(rec).length >= 3 && (await portBound(port));

  // A held tool call (hold) when Codex is to be killed in it; a pmon job
  // holds the server anyway, and the model's answer then waits until the
  // job is up (or, to be killed, until the test lets go of it).
  const hold = kill || via === 'mcp';
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const model = await startModel(
    () => (via === 'mcp'
      ? { namespace: 'mcp__pmon', name: 'start', args: { command: workloadLine(rec, port, true), cwd } }
      : { name: 'exec_command', args: { cmd: workloadLine(rec, port, hold), yield_time_ms: 30000 } }),
    async () => {
      if (via !== 'mcp') return;
      if (kill) await held;
      else await waitFor(up, 15000);
    });
  writeFileSync(join(codexHome, 'config.toml'), config(model.port, via === 'mcp'));
  if (via === 'hook') writeFileSync(join(codexHome, 'hooks.json'), JSON.stringify(HOOKS));

  const h = startHarness(CODEX, [
    'exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox',
    // codex exec runs a hook nobody reviewed in /hooks only with this flag.
    ...(via === 'hook' ? ['--dangerously-bypass-hook-trust'] : []),
    'Start the dev server.',
  ], {
    cwd,
    timeoutMs: 30000,
    env: {
      HOME: home, CODEX_HOME: codexHome, PMON_TEST_MODEL_KEY: 'dummy', TMPDIR: dir,
      XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local', 'share'),
      XDG_STATE_HOME: join(home, '.local', 'state'), XDG_CACHE_HOME: join(home, '.cache'),
    },
  });
  try {
    let wasUp = null;
    if (kill) {
      wasUp = await waitFor(up, 20000);
      recorded.push(...records(rec));
      h.child.kill('SIGKILL');
    }
    const end = await h.ended;
    const list = records(rec);
    recorded.push(...list);
    const left = await leftover(rec, port);
    return { ...left, wasUp, end, out: h.out(), model, list };
  } finally {
    release();
    if (h.child.exitCode === null && h.child.signalCode === null) h.child.kill('SIGKILL');
    await h.ended;
    await model.close();
  }
}

const names = (list) => list.map((p) => p.name).sort();

// What every session must show: the tool call really ran the workload.
function ran(r, { kill }) {
  assert.equal(names(r.list).join(' '), 'daemon server shell', `workload records: ${JSON.stringify(r.list)}\n${r.out}`);
  if (kill) {
    assert.equal(r.wasUp, true, `workload up before the kill\n${r.out}`);
    assert.equal(r.end.signal, 'SIGKILL', `Codex killed: ${JSON.stringify(r.end)}`);
    assert.equal(r.model.toolOutputs.length, 0, 'Codex was killed inside the tool call');
  } else {
    assert.equal(r.end.code, 0, `Codex ended normally: ${JSON.stringify(r.end)}\n${r.out}`);
    assert.equal(r.model.toolOutputs.length, 1, `one tool result\n${r.out}`);
  }
}

test('control: Codex ends normally, its shell tool leaves the setsid daemon running', async () => {
  const r = await session({ via: 'none', kill: false });
  ran(r, { kill: false });
  assert.match(r.model.toolOutputs[0], /workload ready/);
  assert.ok(names(r.alive).includes('daemon'), `the daemon outlived Codex: ${JSON.stringify(r.alive)}`);
  cleanup(r.list);
});

test('control: SIGKILL of Codex kills only the shell it started; the daemon and the server live on', async () => {
  const r = await session({ via: 'none', kill: true });
  ran(r, { kill: true });
  // Codex's parent-death signal reaches its direct child (the shell)...
  assert.deepEqual(names(r.alive), ['daemon', 'server'], `left: ${JSON.stringify(r.alive)}`);
  // ...and the dev server still holds its port.
  assert.equal(r.bound, true, 'the port is still bound');
  cleanup(r.list);
});

// One `codex exec` session whose model asks for one shell call of COMMAND,
// with HOOKS as ~/.codex/hooks.json and RULES as ~/.codex/rules/default.rules:
// { end, out, outputs } (the call's output as Codex reported it).
async function shellCall({ command, hooks, rules }) {
  const dir = join(tmp.dir, `run${++runs}`);
  const home = join(dir, 'home');
  const codexHome = join(home, '.codex');
  mkdirSync(join(codexHome, 'rules'), { recursive: true });
  mkdirSync(join(dir, 'cwd'));
  const model = await startModel(() => ({ name: 'exec_command', args: { cmd: command, yield_time_ms: 10000 } }));
  writeFileSync(join(codexHome, 'config.toml'), config(model.port, false));
  if (hooks) writeFileSync(join(codexHome, 'hooks.json'), JSON.stringify(hooks));
  if (rules) writeFileSync(join(codexHome, 'rules', 'default.rules'), rules);
  const h = startHarness(CODEX, ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox',
    ...(hooks ? ['--dangerously-bypass-hook-trust'] : []), 'Run it.'], {
    cwd: join(dir, 'cwd'),
    timeoutMs: 30000,
    env: { HOME: home, CODEX_HOME: codexHome, PMON_TEST_MODEL_KEY: 'dummy' },
  });
  try {
    const end = await h.ended;
    return { end, out: h.out(), outputs: model.toolOutputs };
  } finally {
    await model.close();
  }
}

// A rewrite of the command is what Codex's rules would match, and Codex
// applies a rewrite only with "allow", which skips them: pmon refuses the
// hook, whose block keeps a forbidden command from running.
for (const via of ['none', 'hook']) {
  test(`${via}: a forbidden prefix_rule keeps the file`, async () => {
    const victim = join(tmp.dir, `victim${runs}`);
    writeFileSync(victim, 'x');
    const r = await shellCall({
      command: `rm -f ${victim} && echo removed`,
      hooks: via === 'hook' ? HOOKS : undefined,
      rules: 'prefix_rule(pattern = ["rm"], decision = "forbidden")\n',
    });
    assert.equal(r.end.code, 0, r.out);
    assert.ok(existsSync(victim), `the rule did not hold: ${r.out}`);
  });
}

test('hook: refused with one line naming pmon mcp, even for a line that starts with pmon-shell', async () => {
  const rec = join(tmp.dir, `records${runs}`);
  const port = await freePort();
  const r = await shellCall({ command: `'${PMON_SHELL}' true; ${workloadLine(rec, port)}`, hooks: HOOKS });
  const list = records(rec);
  recorded.push(...list);
  assert.deepEqual(list, [], `the line ran: ${r.out}`);
  assert.match(r.out, /pmon mcp/, 'the refusal names pmon mcp');
});

test('pmon mcp (the start tool): Codex ends normally with the job running, nothing is left', async () => {
  const r = await session({ via: 'mcp', kill: false });
  assert.equal(names(r.list).join(' '), 'daemon server shell', `workload records\n${r.out}`);
  assert.equal(r.end.code, 0, `Codex ended normally: ${JSON.stringify(r.end)}\n${r.out}`);
  assert.match(r.model.toolOutputs[0] ?? '', /"id":"/, `start answered with a job id\n${r.out}`);
  assert.deepEqual(r.alive, [], `left: ${JSON.stringify(r.alive)}`);
  assert.equal(r.bound, false, 'the port is free');
});

test('pmon mcp (the start tool): SIGKILL of Codex, nothing is left', async () => {
  const r = await session({ via: 'mcp', kill: true });
  assert.equal(names(r.list).join(' '), 'daemon server shell', `workload records\n${r.out}`);
  assert.equal(r.wasUp, true, `workload up before the kill\n${r.out}`);
  assert.equal(r.end.signal, 'SIGKILL');
  assert.match(r.model.toolOutputs[0] ?? '', /"id":"/, `start answered with a job id\n${r.out}`);
  assert.deepEqual(r.alive, [], `left: ${JSON.stringify(r.alive)}`);
  assert.equal(r.bound, false, 'the port is free');
});
