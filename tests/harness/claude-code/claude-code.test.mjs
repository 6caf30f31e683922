// SPDX-License-Identifier: Apache-2.0
// Claude Code (the npm package pinned in package-lock.json) against a
// scripted model on 127.0.0.1: the model asks Claude Code's own Bash tool to
// run the workload (a setsid daemon and a dev server), then answers and ends.
// Without pmon the workload outlives the session, whether it ends normally or
// Claude Code is killed; through the shell prefix and pmon mcp nothing is
// left. pmon's PreToolUse hook blocks the call (a rewrite would turn
// Claude Code's permission rules off). What the prefix keeps of Claude Code's
// own behaviour (rules, working directory, timeouts, background calls,
// output) is tested beside Claude Code without pmon. With a session
// envelope, the Bash calls of one Claude Code share one session cgroup.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  readFileSync, readdirSync, mkdirSync, writeFileSync, openSync, readSync, closeSync, existsSync, realpathSync,
  readlinkSync, rmdirSync,
} from 'node:fs';
import { join, dirname } from 'node:path';
import { arch } from 'node:os';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import {
  PMON, PMON_SHELL, workloadLine, freePort, portBound, waitFor, startHarness,
  leftover, records, running, cleanup, scratch,
} from '../lib.mjs';
import { startModel } from './model.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// The npm package's bin, bin/claude.exe, is the native program itself once
// the package's install script has copied it there (no Node.js wrapper stays
// between the user and Claude Code); if the script did not run it is a
// placeholder, and the platform package holds the same program.
function claudeBinary() {
  const bin = join(here, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
  const head = Buffer.alloc(4);
  try {
    const fd = openSync(bin, 'r');
    readSync(fd, head, 0, 4, 0);
    closeSync(fd);
  } catch {}
  if (head.toString('latin1') === '\x7fELF') return bin;
  return join(here, 'node_modules', '@anthropic-ai', `claude-code-linux-${arch()}`, 'claude');
}
const CLAUDE = claudeBinary();

// Whatever a test recorded, killed (pid and start time) after the file even
// when an assertion failed first.
const leaked = [];
after(() => cleanup(leaked));

// The processes under PID now, each { pid, start, ppid, args }, from /proc.
function descendants(pid) {
  const all = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').trim();
      all.push({ pid: Number(d), ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]), start: f[19], args });
    } catch {}
  }
  const out = [];
  const walk = (p) => all.filter((x) => x.ppid === p).forEach((x) => { out.push(x); walk(x.pid); });
  walk(pid);
  return out;
}

// One Claude Code session in print mode. via: 'none' (its Bash tool as it
// is), 'prefix' (CLAUDE_CODE_SHELL_PREFIX=pmon-shell in its environment),
// 'settings' (the same in the project's .claude/settings.json) or 'mcp' (pmon mcp as an MCP server; the model calls its start tool).
// hold: the workload line runs until its server ends. background: the Bash
// call asks for run_in_background. kill: once the server listens, Claude
// Code is killed with SIGKILL instead of ending its session.
async function session(t, { via = 'none', hold = false, background = false, kill = false }) {
  const tmp = scratch();
  const home = tmp.path('home');
  const work = tmp.path('project');
  mkdirSync(home);
  mkdirSync(work);
  const rec = tmp.path('records');
  const port = await freePort();
  const line = workloadLine(rec, port, hold);

  let tool = 'Bash';
  let input = { command: line, description: 'Start the dev server' };
  if (background) input.run_in_background = true;
  const args = ['-p', 'Start the dev server.', '--output-format', 'json', '--no-session-persistence'];
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: tmp.dir,
    ANTHROPIC_API_KEY: 'sk-ant-scripted-not-a-key',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_SHELL_PREFIX: undefined,
    CLAUDE_CONFIG_DIR: undefined,
  };
  if (via === 'prefix') env.CLAUDE_CODE_SHELL_PREFIX = PMON_SHELL;
  if (via === 'settings') {
    mkdirSync(join(work, '.claude'));
    writeFileSync(join(work, '.claude', 'settings.json'),
      JSON.stringify({ env: { CLAUDE_CODE_SHELL_PREFIX: PMON_SHELL } }));
  }
  if (via === 'mcp') {
    tool = 'mcp__pmon__start';
    input = { command: line };
    // MCP tools are offered at once, not behind Claude Code's tool search.
    env.ENABLE_TOOL_SEARCH = 'false';
    args.push('--strict-mcp-config', '--mcp-config',
      JSON.stringify({ mcpServers: { pmon: { type: 'stdio', command: PMON, args: ['mcp'] } } }));
  } else {
    args.push('--strict-mcp-config');
  }
  // Claude Code refuses --dangerously-skip-permissions as root; allowing the
  // one tool the model calls is what a user would do.
  args.push('--allowedTools', tool);

  // A SIGKILL must find the tool call still running: the model holds its
  // answer for a background call, which returns at once. pmon's start tool
  // returns at once too: the session ends only once the server listens.
  const model = await startModel({ tool, input, holdAnswer: kill || via === 'mcp' });
  env.ANTHROPIC_BASE_URL = model.url;
  const run = startHarness(CLAUDE, args, { env, cwd: work, timeoutMs: 30000 });
  let tree = [];
  try {
    const ready = () => records(rec).some((p) => p.name === 'server') && portBound(port);
    if (kill) {
      assert.ok(await waitFor(ready, 20000), `the workload did not start:\n${run.out()}`);
      if (background) {
        // Claude Code really put the call in the background (it answered).
        assert.ok(await waitFor(() => model.results.length > 0, 10000), JSON.stringify(model.log));
        assert.match(model.results[0], /background/i);
      }
      tree = descendants(run.child.pid);
      leaked.push(...tree);
      // child.pid is Claude Code itself (the native program, see claudeBinary).
      run.child.kill('SIGKILL');
    } else if (via === 'mcp') {
      assert.ok(await waitFor(ready, 20000), `the workload did not start:\n${run.out()}`);
      model.release();
    }
    const end = await run.ended;
    assert.ok(!end.timedOut, `Claude Code did not end:\n${run.out()}`);
    if (kill) {
      assert.equal(end.signal, 'SIGKILL');
    } else {
      assert.equal(end.code, 0, run.out());
      assert.equal(JSON.parse(run.out()).result, 'Done.', run.out());
      // The tool really ran, and its result came back to the model.
      assert.equal(model.results.length, 1, JSON.stringify(model.log));
      assert.match(model.results[0], via === 'mcp' ? /"id"/ : /workload ready/);
    }
    const list = records(rec);
    leaked.push(...list);
    assert.ok(list.some((p) => p.name === 'daemon') && list.some((p) => p.name === 'server'),
      `nothing was recorded: ${run.out()}`);
    // What else ran under Claude Code (its shell, pmon) gets the same time.
    const others = tree.filter((p) => !list.some((q) => q.pid === p.pid));
    const until = Date.now() + (via === 'none' ? 1000 : 8000);
    const left = await leftover(rec, port, until - Date.now());
    await waitFor(() => running(others).length === 0, Math.max(0, until - Date.now()));
    const extra = running(others);
    t.diagnostic(`alive ${left.alive.map((p) => p.name).join(',') || '-'}; port bound ${left.bound}; ` +
      `other processes under Claude Code left ${extra.length}`);
    if (tree.length && (left.alive.length || extra.length)) {
      t.diagnostic('under Claude Code at the kill: ' + tree.map((p) =>
        `${p.pid} ppid ${p.ppid} pgid ${p.pgid} sid ${p.sid} ${p.args.slice(0, 100)}`).join(' | '));
    }
    return { ...left, extra };
  } finally {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await run.ended;
    cleanup(records(rec));
    cleanup(tree);
    await model.close();
    tmp.remove();
  }
}

// The leak a control must see: the setsid daemon is still running.
function leaks(left) {
  assert.ok(left.alive.some((p) => p.name === 'daemon'),
    `the control leaked nothing: alive ${JSON.stringify(left.alive)}, port bound ${left.bound}`);
}
function clean(left) {
  assert.deepEqual(left.alive, [], `left running: ${JSON.stringify(left.alive)}`);
  assert.equal(left.bound, false, 'the port is still bound');
  assert.deepEqual(left.extra, [], `left under Claude Code: ${JSON.stringify(left.extra)}`);
}

test('control: its Bash tool leaves the workload running after a normal end', async (t) => {
  leaks(await session(t, {}));
});
test('control: its Bash tool leaves the workload running when Claude Code is killed', async (t) => {
  const left = await session(t, { hold: true, kill: true });
  leaks(left);
  assert.ok(left.bound, 'the control server is gone');
});
test('control: a background Bash call leaves the workload running when Claude Code is killed', async (t) => {
  leaks(await session(t, { hold: true, background: true, kill: true }));
});

// A background Bash call (run_in_background) gets no normal-end test: in
// print mode Claude Code waits for its background commands to end before it
// exits, and the held dev server never does. It is killed instead.

test('prefix: nothing left after a normal end', async (t) => {
  clean(await session(t, { via: 'prefix' }));
});
test('prefix: nothing left when Claude Code is killed', async (t) => {
  clean(await session(t, { via: 'prefix', hold: true, kill: true }));
});
test('prefix: nothing left of a background call when Claude Code is killed', async (t) => {
  clean(await session(t, { via: 'prefix', hold: true, background: true, kill: true }));
});

// A print-mode session whose model makes the Bash CALLS, one a turn (each a
// command, or the tool's input), then answers. SETTINGS is the project's
// .claude/settings.json, USER ~/.claude/settings.json; via 'prefix' puts the
// shell prefix in Claude Code's environment, ENV adds to it; allowed passes
// --allowedTools Bash. With during(run, model), the model holds its answer
// until during returns. Resolves to { code, signal, out, results, denials }.
async function bashCall(t, { command, calls = [command], settings = {}, user, via = 'none', env: more = {},
  allowed = true, cwd, during }) {
  const tmp = scratch();
  t.after(() => tmp.remove());
  const home = tmp.path('home');
  const work = cwd ?? tmp.path('project');
  mkdirSync(join(work, '.claude'), { recursive: true });
  mkdirSync(join(home, '.claude'), { recursive: true });
  writeFileSync(join(work, '.claude', 'settings.json'), JSON.stringify(settings));
  if (user) writeFileSync(join(home, '.claude', 'settings.json'), JSON.stringify(user));
  const input = calls.map((c) => ({ description: 'Run it', ...(typeof c === 'string' ? { command: c } : c) }));
  const model = await startModel({ tool: 'Bash', input, holdAnswer: !!during });
  t.after(() => model.close());
  const env = {
    HOME: home, TMPDIR: tmp.dir, ANTHROPIC_API_KEY: 'sk-ant-scripted-not-a-key', ANTHROPIC_BASE_URL: model.url,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_SHELL_PREFIX: via === 'prefix' ? PMON_SHELL : undefined,
    CLAUDE_CONFIG_DIR: undefined, ...more,
  };
  const run = startHarness(CLAUDE, ['-p', 'Run it.', '--output-format', 'json', '--no-session-persistence',
    '--strict-mcp-config', ...(allowed ? ['--allowedTools', 'Bash'] : [])], { env, cwd: work, timeoutMs: 30000 });
  try {
    if (during) await during(run, model);
  } catch (e) {
    run.child.kill('SIGKILL');
    await run.ended;
    throw e;
  } finally {
    model.release();
  }
  const end = await run.ended;
  let denials = null;
  try { denials = JSON.parse(run.out()).permission_denials; } catch {}
  return { code: end.code, signal: end.signal, out: run.out(), results: model.results, denials };
}

// The hook as the docs printed it, pmon named by its full path.
const HOOK = { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command',
  command: `'${PMON}' hook-rewrite --decision allow --shell '${PMON_SHELL}'` }] }] };
const DENY_RM = { deny: ['Bash(rm:*)'] };

// A hook that rewrites the command hands Claude Code's permission rules the
// rewritten line, so a deny rule no longer matches; pmon refuses the hook.
for (const via of ['none', 'hook', 'prefix']) {
  test(`${via}: a deny rule (Bash(rm:*)) keeps the file`, async (t) => {
    const tmp = scratch(); t.after(() => tmp.remove());
    const victim = tmp.path('victim');
    writeFileSync(victim, 'x');
    const settings = { permissions: DENY_RM };
    if (via === 'hook') settings.hooks = HOOK;
    if (via === 'prefix') settings.env = { CLAUDE_CODE_SHELL_PREFIX: PMON_SHELL };
    const r = await bashCall(t, { command: `rm -f ${victim} && echo removed`, settings });
    assert.equal(r.code, 0, r.out);
    assert.ok(existsSync(victim), `the deny rule did not hold: ${r.out}`);
  });
}

test('hook: refused with one line naming the shell prefix, even for a line that starts with pmon-shell', async (t) => {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('records');
  const port = await freePort();
  const r = await bashCall(t, { command: `'${PMON_SHELL}' true; ${workloadLine(rec, port)}`, settings: { hooks: HOOK } });
  const list = records(rec);
  leaked.push(...list);
  assert.deepEqual(list, [], `the line ran: ${r.out}`);
  assert.equal(r.results.length, 1, r.out);
  assert.match(r.results[0], /CLAUDE_CODE_SHELL_PREFIX=pmon-shell/);
});

test('settings: the shell prefix set in settings.json, nothing left when Claude Code is killed', async (t) => {
  clean(await session(t, { via: 'settings', hold: true, kill: true }));
});

test('mcp: nothing left of a started job after a normal end', async (t) => {
  clean(await session(t, { via: 'mcp', hold: true }));
});
test('mcp: nothing left of a started job when Claude Code is killed', async (t) => {
  clean(await session(t, { via: 'mcp', hold: true, kill: true }));
});

// What the shell prefix keeps of Claude Code's own behaviour, each beside
// Claude Code without pmon.

// Its working directory: Claude Code records `pwd -P` after each call and
// starts the next one there; the second call also names its parent.
for (const via of ['none', 'prefix']) {
  test(`${via}: cd in one Bash call holds for the next`, async (t) => {
    const tmp = scratch(); t.after(() => tmp.remove());
    const work = tmp.path('project');
    mkdirSync(join(work, 'sub'), { recursive: true });
    const pwd = tmp.path('pwd');
    const r = await bashCall(t, { via, cwd: work, calls: ['cd sub', `pwd -P > ${pwd} && cat /proc/$PPID/comm`] });
    assert.equal(r.results.length, 2, r.out);
    assert.equal(readFileSync(pwd, 'utf8').trim(), realpathSync(join(work, 'sub')), r.out);
    assert.equal(/pmon/.test(r.results[1]), via === 'prefix', `not under ${via}: ${r.results[1]}`);
  });
}

// Its allow list (in ~/.claude/settings.json: a project's is used only once
// the project is trusted), with no --allowedTools: print mode runs an
// allowed command without asking and refuses any other that would ask.
async function allowList(t, { via, rule }) {
  const tmp = scratch(); t.after(() => tmp.remove());
  const work = tmp.path('project');
  const [allowed, refused] = [join(work, 'allowed'), join(work, 'refused')];
  const r = await bashCall(t, { via, cwd: work, allowed: false, user: { permissions: { allow: rule ? [rule] : [] } },
    calls: [`touch ${allowed}`, `mkdir ${refused}`] });
  assert.equal(r.code, 0, r.out);
  assert.ok(!existsSync(refused), r.out);
  assert.match(r.results[1], /needs approval/, r.out);
  return { ran: existsSync(allowed), denied: r.denials.map((d) => d.tool_input.command) };
}
test('control: without the allow rule, touch is refused as well', async (t) => {
  const { ran, denied } = await allowList(t, { via: 'none' });
  assert.equal(ran, false);
  assert.equal(denied.length, 2);
});
for (const via of ['none', 'prefix']) {
  test(`${via}: an allow rule (Bash(touch:*)) runs touch without asking, mkdir is refused`, async (t) => {
    const { ran, denied } = await allowList(t, { via, rule: 'Bash(touch:*)' });
    assert.ok(ran, 'the allowed touch did not run');
    assert.deepEqual(denied.map((c) => c.split(' ')[0]), ['mkdir']);
  });
}

// A call whose command leaves a setsid daemon and a dev server (the
// workload, which returns at once) and then hangs (exec sleep, recorded as
// hang). Claude Code ends the hanging command; without pmon the daemon,
// outside its process group and tree, survives. INPUT adds to the call.
async function hanging(t, { via, input, env, during }) {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('records');
  const port = await freePort();
  const command = `${workloadLine(rec, port)} && echo "$$ $(cut -d' ' -f22 /proc/$$/stat) hang" >> ${rec} && exec sleep 600`;
  let r;
  try {
    r = await bashCall(t, { via, env, calls: [{ command, ...input }],
      during: during && ((run, model) => during(run, model, rec, port)) });
  } finally {
    leaked.push(...records(rec));
  }
  const list = records(rec);
  assert.deepEqual(list.map((p) => p.name).sort(), ['daemon', 'hang', 'server', 'shell'], r.out);
  const left = await leftover(rec, port, via === 'none' ? 1000 : 8000);
  t.diagnostic(`exit ${r.code ?? r.signal}; alive ${left.alive.map((p) => p.name).join(',') || '-'}; port bound ${left.bound}`);
  assert.ok(!left.alive.some((p) => p.name === 'hang'), 'Claude Code did not end the call');
  return { ...r, left };
}
// What the control (no pmon) and the prefix must leave.
function outcome(via, left) {
  if (via === 'none') leaks(left);
  else clean({ ...left, extra: [] });
}

// Claude Code's timeout ends a call: a background call's at once; a
// foreground call's with background tasks turned off (see below).
for (const via of ['none', 'prefix']) {
  test(`${via}: a background call ended at its timeout`, async (t) => {
    const r = await hanging(t, { via, input: { run_in_background: true, timeout: 3000 } });
    assert.equal(r.code, 0, r.out);
    assert.match(r.results[0], /running in background/);
    outcome(via, r.left);
  });
  test(`${via}: a call ended at its timeout (CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1)`, async (t) => {
    const r = await hanging(t, { via, input: { timeout: 3000 }, env: { CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: '1' } });
    assert.equal(r.code, 0, r.out);
    assert.match(r.results[0], /timed out after 3s/);
    outcome(via, r.left);
  });
}

// A background call runs while Claude Code does (print mode waits for it);
// so does a foreground call past its timeout, which Claude Code moves to the
// background. Then Claude Code exits (SIGTERM: it ends its background calls).
for (const via of ['none', 'prefix']) {
  for (const [how, input, said] of [['a background call', { run_in_background: true }, /running in background/],
    ['a call moved to the background at its timeout', { timeout: 3000 }, /did not complete within its 3s timeout and was moved to the background/]]) {
    test(`${via}: ${how}, Claude Code exits`, async (t) => {
      const r = await hanging(t, { via, input, during: async (run, model, rec, port) => {
        assert.ok(await waitFor(() => model.results.length > 0, 15000), run.out());
        assert.match(model.results[0], said);
        const up = () => records(rec).some((p) => p.name === 'hang') && portBound(port);
        assert.ok(await waitFor(up, 15000), `the workload is not up: ${run.out()}`);
        assert.equal(run.child.exitCode, null, 'Claude Code did not wait for its background call');
        run.child.kill('SIGTERM');
      } });
      assert.equal(r.code, 143, r.out);
      outcome(via, r.left);
    });
  }
}

// Its output: the command's stdout, stderr and exit status as without pmon;
// with the prefix, one line of pmon's more when a command left processes.
for (const via of ['none', 'prefix']) {
  test(`${via}: a call's output and exit status pass through`, async (t) => {
    const tmp = scratch(); t.after(() => tmp.remove());
    const rec = tmp.path('records');
    const r = await bashCall(t, { via, calls: [`printf 'a\\n  b\\n'; echo e >&2; exit 3`, workloadLine(rec, await freePort())] });
    leaked.push(...records(rec));
    assert.equal(r.results[0], 'Exit code 3\na\n  b\ne', r.out);
    const [ready, ...more] = r.results[1].split('\n');
    assert.equal(ready, 'workload ready', r.out);
    assert.equal(more.length, via === 'prefix' ? 1 : 0, r.results[1]);
    if (via === 'prefix') assert.match(more[0], /^pmon: .* left 2 processes running; stopped them$/);
  });
}

// A session envelope (docs/sessions.md): every Bash call of one Claude Code
// process is a leaf inside one session cgroup named after Claude Code (its
// pid, start time and PID namespace), the harness itself outside, each call
// in a cgroup namespace of its own (the tests run as root). The session
// cgroup is removed once Claude Code is gone and no call of it runs.
// PMON_SESSION_PIDS_MAX=0 asks for an envelope without writing a limit: it
// needs no controller, so the session cgroup is made on any cgroup2 host.

// Where cgroup2 is mounted, or null.
function cgroup2Mount() {
  for (const l of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = l.split(' ');
    const dash = f.indexOf('-');
    if (dash > 0 && f[dash + 1] === 'cgroup2' && f[3] === '/') return f[4];
  }
  return null;
}
// The cgroup2 path of process PID as this process sees it ("/a/b"), or null.
function cgroupOf(pid) {
  try {
    const l = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((x) => x.startsWith('0::'));
    return l ? l.slice(3) : null;
  } catch { return null; }
}
function statOf(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), start: f[19] };
  } catch { return null; }
}
const pidNamespace = () => readlinkSync('/proc/self/ns/pid').match(/\[(\d+)\]/)[1];

// One Claude Code whose model makes two Bash calls: a background one
// (run_in_background), then a foreground one while the first still runs.
// Each records "pid start name cgroup-line" (the cgroup line as the command
// sees it) and waits for the test's go file. Meanwhile the test reads each
// call's cgroup and the chain of processes up to Claude Code from outside,
// by pid; then it ends (writes go: a normal end) or kills Claude Code.
async function sessionCalls(t, { via, kill = false }) {
  const tmp = scratch(); t.after(() => tmp.remove());
  const rec = tmp.path('records');
  const go = tmp.path('go');
  const call = (name) => `echo "$$ $(cut -d' ' -f22 /proc/$$/stat) ${name} $(grep '^0::' /proc/self/cgroup)" >> ${rec}; ` +
    `for i in $(seq 1 1500); do [ -e ${go} ] && exit 0; sleep 0.02; done; exit 1`;
  const seen = {};
  const r = await bashCall(t, {
    via, env: { PMON_SESSION_PIDS_MAX: '0' },
    calls: [{ command: call('background'), run_in_background: true }, call('foreground')],
    during: async (run, model) => {
      const both = () => records(rec).length === 2;
      assert.ok(await waitFor(both, 20000), `the two calls did not both start: ${run.out()} ${JSON.stringify(model.log)}`);
      const list = records(rec);
      leaked.push(...list);
      assert.match(model.results[0] ?? '', /running in background/, run.out());
      const claude = run.child.pid;
      seen.claude = { pid: claude, start: statOf(claude).start, cgroup: cgroupOf(claude) };
      seen.calls = readFileSync(rec, 'utf8').trim().split('\n').map((l) => {
        const [pid, start, name, ...line] = l.split(' ');
        // From outside: its cgroup, and the process Claude Code started for
        // it (the call's ancestor whose parent is Claude Code).
        let top = Number(pid);
        for (let s = statOf(top); s && s.ppid !== claude && s.ppid > 1; s = statOf(top)) top = s.ppid;
        const args = (() => { try { return readFileSync(`/proc/${top}/cmdline`, 'utf8').split('\0'); } catch { return []; } })();
        return { pid: Number(pid), start, name, line: line.join(' '), alive: statOf(pid)?.start === start,
          cgroup: cgroupOf(pid), top: { pid: top, args: args.slice(0, 1), cgroup: cgroupOf(top), parent: statOf(top)?.ppid } };
      });
      t.diagnostic(JSON.stringify(seen));
      seen.tree = descendants(claude);
      leaked.push(...seen.tree);
      if (kill) run.child.kill('SIGKILL');
      else writeFileSync(go, '');
    },
  });
  const list = records(rec);
  const until = Date.now() + 10000;
  await waitFor(() => running(list).length === 0 && running(seen.tree).length === 0, until - Date.now());
  // Nothing of the calls is left running (by pid and start time).
  assert.deepEqual(running(list), [], `left running: ${r.out}`);
  assert.deepEqual(running(seen.tree), [], 'left under Claude Code');
  return { ...r, seen, until };
}

// The session cgroup Claude Code's calls ran in: the directory, and
// whether it has processes or cgroups in it.
function sessionDir(dir) {
  const procs = () => { try { return readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim(); } catch { return ''; } };
  const leaves = () => { try { return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name); } catch { return []; } };
  return { dir, exists: () => existsSync(dir), procs, leaves };
}
// What a failed test left of its session: its leaves and itself, if empty.
function removeSession(s) {
  if (!/\/pmon-session-h[^/]+$/.test(s.dir)) return;
  for (const l of s.leaves()) try { rmdirSync(join(s.dir, l)); } catch {}
  try { rmdirSync(s.dir); } catch {}
}

// Without the prefix the envelope in Claude Code's environment does
// nothing: its calls run in Claude Code's own cgroup, in no session.
test('control: without the prefix the Bash calls run in Claude Code\'s own cgroup, in no session', async (t) => {
  const r = await sessionCalls(t, { via: 'none' });
  const { claude, calls } = r.seen;
  assert.equal(r.code, 0, r.out);
  assert.equal(calls.length, 2, r.out);
  for (const c of calls) assert.equal(c.cgroup, claude.cgroup, JSON.stringify(c));
});

const SESSION_TEST = 'the Bash calls of one Claude Code share one session cgroup, removed when it is gone';
for (const kill of [false, true]) {
  test(`session: ${SESSION_TEST} (${kill ? 'Claude Code killed' : 'a normal end'})`, async (t) => {
    const mount = cgroup2Mount();
    if (!mount) return t.skip('no cgroup2 mount');
    let session = null;
    t.after(() => session && removeSession(session));
    const r = await sessionCalls(t, { via: 'prefix', kill });
    const { claude, calls } = r.seen;
    // Named after Claude Code: its pid, its start time, its PID namespace;
    // made where pmon makes its leaves.
    const name = `pmon-session-h${claude.pid}-${claude.start}-${pidNamespace()}`;
    assert.deepEqual(calls.map((c) => c.name).sort(), ['background', 'foreground']);
    const at = (c) => (c.cgroup ?? '').slice(0, (c.cgroup ?? '').lastIndexOf('/'));
    for (const c of calls) {
      // Both ran at once, each a leaf of its own inside the one session.
      assert.ok(c.alive, `the ${c.name} call was not running: ${JSON.stringify(c)}`);
      assert.match(c.cgroup ?? '', new RegExp(`/${name}/pmon-[^/]+$`), `the ${c.name} call: ${JSON.stringify(c)}`);
      assert.equal(at(c), at(calls[0]), 'the calls ran in two sessions');
      // In a cgroup namespace of its own: it sees its leaf as the root.
      assert.equal(c.line, '0::/', `the ${c.name} call saw ${c.line}`);
      // The call's pmon-shell is Claude Code's child: its parent is the key.
      assert.equal(c.top.parent, claude.pid, JSON.stringify(c));
      assert.match(c.top.args[0] ?? '', /pmon-shell$/, JSON.stringify(c));
    }
    assert.notEqual(calls[0].cgroup, calls[1].cgroup, 'the two calls shared one leaf');
    session = sessionDir(join(mount, at(calls[0])));
    // Claude Code itself stays outside its session.
    assert.ok(!`${claude.cgroup}/`.startsWith(`${at(calls[0])}/`), `Claude Code is in ${claude.cgroup}`);
    if (kill) {
      assert.equal(r.signal, 'SIGKILL', r.out);
    } else {
      assert.equal(r.code, 0, r.out);
      assert.equal(r.results.length, 2, r.out);
    }
    // Whether Claude Code was killed during its calls (the last call to
    // end removes the session) or ended after its last call (no pmon runs
    // then: the keeper the first call left removes it), the session goes
    // with Claude Code.
    const gone = await waitFor(() => !session.exists(), Math.max(0, r.until - Date.now()));
    assert.ok(gone, `the session cgroup ${name} is still there (processes [${session.procs()}], ` +
      `cgroups [${session.leaves()}]) once Claude Code ${kill ? 'was killed and its calls stopped' : 'ended'}`);
  });
}
