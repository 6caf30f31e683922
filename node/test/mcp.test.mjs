// SPDX-License-Identifier: Apache-2.0
// pmon mcp, driven by the official MCP TypeScript SDK's own Client and
// StdioClientTransport: the tools and their schemas (the SDK checks every
// structuredContent against the tool's outputSchema), run leaving nothing
// behind, a dev server and its port, background_after_s, the end of the
// client and of the server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, LoggingMessageNotificationSchema, EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ESCAPER, records, gone, waitRecords, scratch, cleanup, running, procStat, present } from './helpers.mjs';
import { findPmon } from '../index.mjs';

const PMON = findPmon();
const tmp = scratch();
const started = [];
after(() => {
  cleanup(started);
  tmp.remove();
});

async function connect() {
  const transport = new StdioClientTransport({ command: PMON, args: ['mcp'], stderr: 'inherit' });
  const client = new Client({ name: 'pmon-test', version: '1.0.0' });
  await client.connect(transport);
  // As a client does first; the SDK then checks every structuredContent
  // against the tool's outputSchema.
  await client.listTools();
  const server = { pid: transport.pid, start: procStat(transport.pid).start, name: 'pmon mcp' };
  started.push(server);
  return { client, transport, server };
}

function canBind(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

const call = (client, name, args) => client.callTool({ name, arguments: args });

test('tools/list: every tool with its input and output schema', async () => {
  const { client } = await connect();
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(),
    ['kill', 'list', 'output', 'run', 'start', 'wait', 'wait_for_port', 'write']);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.outputSchema.type, 'object', t.name);
    assert.ok(t.description.length > 20, t.name);
  }
  const run = tools.find((t) => t.name === 'run');
  assert.deepEqual(run.inputSchema.required, ['command']);
  for (const k of ['command', 'cwd', 'env', 'timeout_s', 'background_after_s']) assert.ok(run.inputSchema.properties[k], k);
  const wfp = tools.find((t) => t.name === 'wait_for_port');
  for (const k of ['id', 'port', 'timeout_s']) assert.ok(wfp.inputSchema.properties[k], k);
  assert.equal(client.getServerVersion().name, 'pmon');
  assert.ok(client.getServerCapabilities().tools);
  await client.ping();
  await client.close();
});

test('the protocol revision: each the SDK supports is accepted, another gets the newest', async () => {
  for (const [asked, expect] of [...SUPPORTED_PROTOCOL_VERSIONS.map((v) => [v, v]), ['1999-01-01', LATEST_PROTOCOL_VERSION]]) {
    const child = spawn(PMON, ['mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const line = await new Promise((resolve) => {
      let buf = '';
      child.stdout.on('data', (d) => {
        buf += d;
        if (buf.includes('\n')) resolve(buf.slice(0, buf.indexOf('\n')));
      });
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 't', version: '1' } } }) + '\n');
    });
    child.stdin.end();
    await new Promise((r) => child.on('exit', r));
    assert.equal(JSON.parse(line).result.protocolVersion, expect, asked);
  }
});

test('run: a setsid daemon and a TERM-trapping child are gone when run returns', async () => {
  const { client } = await connect();
  const file = tmp.path('run');
  const r = await call(client, 'run', {
    command: `${ESCAPER} ${file} -x exit:0 name=daemon,orphan,setsid name=trap,orphan,trap; echo done`,
  });
  const recs = records(file);
  started.push(...recs);
  assert.equal(r.isError, false);
  const s = r.structuredContent;
  assert.equal(s.running, false);
  assert.equal(s.exit_code, 0);
  assert.equal(s.cleanup_verified, true);
  assert.ok(s.leftovers.length >= 2, JSON.stringify(s.leftovers));
  assert.match(s.output, /done/);
  assert.match(r.content[0].text, /exit code 0; stopped \d+ processes it left running/);
  assert.equal(recs.length, 3);
  assert.deepEqual(running(recs), [], 'nothing runs once run returned');
  assert.deepEqual(await gone(recs), []);
  await client.close();
});

test('run: exit codes, signals, timeout, env, cwd, and tool errors', async () => {
  const { client } = await connect();
  let r = await call(client, 'run', { command: 'echo "$X in $(pwd)"; exit 5', env: { X: 'x' }, cwd: '/tmp' });
  assert.equal(r.structuredContent.exit_code, 5);
  assert.equal(r.structuredContent.output, 'x in /tmp\n');
  r = await call(client, 'run', { command: 'kill -KILL $$' });
  assert.equal(r.structuredContent.signal, 'SIGKILL');
  assert.equal(r.structuredContent.exit_code, null);
  r = await call(client, 'run', { command: 'sleep 100', timeout_s: 0.3 });
  assert.equal(r.structuredContent.timed_out, true);
  assert.match(r.content[0].text, /timed out/);
  assert.equal(r.structuredContent.idle_timed_out, false);
  assert.equal(r.structuredContent.stopped_by, 'timeout');
  // Quiet for idle_timeout_s: stopped, though its timeout is far off.
  r = await call(client, 'run', { command: 'echo hi; sleep 100', idle_timeout_s: 0.5 });
  assert.equal(r.structuredContent.output, 'hi\n');
  assert.equal(r.structuredContent.timed_out, true);
  assert.equal(r.structuredContent.idle_timed_out, true);
  assert.equal(r.structuredContent.stopped_by, 'idle timeout');
  assert.match(r.content[0].text, /no output for idle_timeout_s/);
  r = await call(client, 'run', { command: 'seq 1 100000' });
  assert.equal(r.structuredContent.truncated, true);
  assert.match(r.structuredContent.output, /^1\n2\n/);
  assert.match(r.structuredContent.output, /100000\n$/);
  for (const [name, args, msg] of [
    ['output', { id: 'nope' }, /unknown job 'nope'/],
    ['kill', { id: 'nope' }, /unknown job 'nope'/],
    ['run', {}, /'command' is required/],
    ['run', { command: 'true', timeout: 5 }, /'timeout' is not an argument/],
    ['wait', { id: 3 }, /'id' must be a string/],
    ['run', { command: 'true', cwd: '/nonexistent/dir' }, /nonexistent/],
  ]) {
    const e = await call(client, name, args);
    assert.equal(e.isError, true, `${name} ${JSON.stringify(args)}`);
    assert.match(e.content[0].text, msg);
    assert.equal(e.content[0].text.includes('\n'), false, 'one line');
  }
  await assert.rejects(call(client, 'no_such_tool', {}), /unknown tool/);
  await client.ping(); // the server is still there
  await client.close();
});

test('start a dev server, wait_for_port, list shows the port, kill frees it', async () => {
  const { client } = await connect();
  const s = await call(client, 'start', { command: 'exec python3 -m http.server 0 --bind 127.0.0.1', name: 'web' });
  const id = s.structuredContent.id;
  const p = await call(client, 'wait_for_port', { id, timeout_s: 20 });
  assert.equal(p.isError, false, p.content[0].text);
  const port = p.structuredContent.port;
  assert.ok(port > 0);
  assert.equal(await canBind(port), false);
  const l = await call(client, 'list', {});
  const job = l.structuredContent.jobs.find((j) => j.id === id);
  assert.equal(job.status, 'running');
  assert.equal(job.name, 'web');
  assert.deepEqual(job.ports, [port]);
  const k = await call(client, 'kill', { id });
  assert.equal(k.structuredContent.cleanup_verified, true);
  assert.equal(await canBind(port), true, 'the port is free');
  const w = await call(client, 'wait', { id });
  assert.equal(w.structuredContent.running, false);
  assert.equal(w.structuredContent.signal, 'SIGTERM');
  await client.close();
});

test('start with ready_http returns once the server answers 2xx; ready_line that never matches times out', async () => {
  const { client } = await connect();
  const server = 'import time, http.server; time.sleep(0.5); ' +
    'http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler).serve_forever()';
  const s = await call(client, 'start', { command: `exec python3 -c '${server}'`, ready_http: '/', ready_timeout_s: 20 });
  assert.equal(s.isError, false, s.content[0].text);
  assert.equal(s.structuredContent.ready, true, s.content[0].text);
  assert.ok(s.structuredContent.ready_ms >= 400, `ready after ${s.structuredContent.ready_ms} ms, before it listened`);
  assert.match(s.content[0].text, /^started job t[0-9a-f]{16}; ready after \d+ ms$/);
  const id = s.structuredContent.id;
  const l = await call(client, 'list', {});
  const port = l.structuredContent.jobs.find((j) => j.id === id).ports[0];
  assert.equal(await canBind(port), false, 'it listens');
  assert.equal((await call(client, 'kill', { id })).structuredContent.cleanup_verified, true);

  const t = await call(client, 'start', { command: 'sleep 100', ready_line: 'never', ready_timeout_s: 0.3 });
  assert.equal(t.structuredContent.ready, false);
  assert.match(t.content[0].text, /not ready: not ready after 0\.3 s: no line of its output matched 'never'/);
  const w = await call(client, 'wait', { id: t.structuredContent.id, timeout_s: 0 });
  assert.equal(w.structuredContent.running, true, 'the job runs on after the timeout');
  await call(client, 'kill', { id: t.structuredContent.id });

  const bad = await call(client, 'start', { command: 'true', ready_line: '(' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /'ready_line' is not a valid regular expression/);
  await client.close();
});

test('start by name: already_running, replace frees the port first, kill by name and by port', async () => {
  const { client } = await connect();
  const web = 'exec python3 -m http.server 0 --bind 127.0.0.1';
  const a = await call(client, 'start', { command: web, name: 'web' });
  const p = await call(client, 'wait_for_port', { id: a.structuredContent.id, timeout_s: 20 });
  const port = p.structuredContent.port;
  const again = await call(client, 'start', { command: web, name: 'web' });
  assert.equal(again.structuredContent.id, a.structuredContent.id);
  assert.equal(again.structuredContent.already_running, true);
  assert.match(again.content[0].text, /already running/);
  // Replaced: the old server's port is free when the new job is reported started.
  const b = await call(client, 'start', { command: `exec python3 -m http.server ${port} --bind 127.0.0.1`, name: 'web', replace: true });
  assert.equal(b.isError, false, b.content[0].text);
  assert.notEqual(b.structuredContent.id, a.structuredContent.id);
  const w = await call(client, 'wait', { id: a.structuredContent.id });
  assert.equal(w.structuredContent.running, false);
  const p2 = await call(client, 'wait_for_port', { id: b.structuredContent.id, port, timeout_s: 20 });
  assert.equal(p2.isError, false, p2.content[0].text);
  const k = await call(client, 'kill', { port });
  assert.equal(k.structuredContent.cleanup_verified, true);
  assert.equal(await canBind(port), true, 'the port is free');
  const none = await call(client, 'kill', { name: 'web' });
  assert.equal(none.isError, true);
  assert.match(none.content[0].text, /no running job of yours is named 'web'/);
  const c = await call(client, 'start', { command: 'sleep 100', name: 'other' });
  assert.equal((await call(client, 'kill', { name: 'other' })).structuredContent.cleanup_verified, true);
  assert.equal((await call(client, 'wait', { id: c.structuredContent.id })).structuredContent.running, false);
  await client.close();
});

// SIGTERM (15) is in the mask of ignored signals of /proc/PID/status.
function ignoresTerm(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^SigIgn:\s*([0-9a-f]+)$/m);
  return m !== null && (BigInt('0x' + m[1]) & (1n << 14n)) !== 0n;
}

test('kill stops the whole job: a main that ignores TERM and the setsid daemon it started', async () => {
  const { client } = await connect();
  const file = tmp.path('kill');
  const s = await call(client, 'start', {
    command: `trap '' TERM; exec ${ESCAPER} ${file} -x sleep name=daemon,orphan,setsid,ignore`,
  });
  const id = s.structuredContent.id;
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  const main = recs.find((r) => r.name === 'main');
  const daemon = recs.find((r) => r.name === 'daemon');
  assert.ok(main && daemon, JSON.stringify(recs));
  assert.ok(ignoresTerm(main.pid) && ignoresTerm(daemon.pid), 'both ignore TERM');
  assert.equal(procStat(daemon.pid).start, daemon.start);
  const k = await call(client, 'kill', { id });
  assert.equal(k.isError, false, k.content[0].text);
  assert.equal(k.structuredContent.cleanup_verified, true);
  // By pid and start time: the daemon and the main are gone once kill
  // returned, not some time later.
  assert.deepEqual(running([daemon, main]), [], 'nothing of the job runs once kill returned');
  assert.deepEqual(await gone(recs), []);
  const w = await call(client, 'wait', { id });
  assert.equal(w.structuredContent.running, false);
  // Why it ended is in the wait's answer and in list, not only the report.
  assert.equal(w.structuredContent.stopped_by, 'kill', JSON.stringify(w.structuredContent));
  assert.equal(w.structuredContent.timed_out, false);
  assert.match(w.content[0].text, /\(stopped: kill\)/);
  const listed = (await call(client, 'list', {})).structuredContent.jobs.find((j) => j.id === id);
  assert.equal(listed.stopped_by, 'kill');
  await client.close();
});

test('run with background_after_s goes on as a job: output, write, wait', async () => {
  const { client } = await connect();
  const r = await call(client, 'run', {
    command: 'echo first; read line; echo "read $line"; sleep 0.2; echo last',
    background_after_s: 0.3,
  });
  // run closes stdin: read gets EOF, so this one ends by itself.
  const s = r.structuredContent;
  if (s.running) {
    const w = await call(client, 'wait', { id: s.id, timeout_s: 20 });
    assert.equal(w.structuredContent.exit_code, 0);
  }
  const long = await call(client, 'run', {
    command: 'for i in 1 2 3 4 5; do echo "tick $i"; sleep 0.2; done',
    background_after_s: 0.1,
  });
  assert.equal(long.structuredContent.running, true);
  const id = long.structuredContent.id;
  assert.match(long.content[0].text, new RegExp(`still running as job ${id}`));
  const w1 = await call(client, 'wait', { id, timeout_s: 0.05 });
  assert.equal(w1.structuredContent.running, true);
  const w = await call(client, 'wait', { id, timeout_s: 30 });
  assert.equal(w.structuredContent.running, false);
  assert.equal(w.structuredContent.exit_code, 0);
  const o = await call(client, 'output', { id });
  assert.equal(o.structuredContent.output, 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n');
  assert.equal(o.structuredContent.running, false);
  const o2 = await call(client, 'output', { id, since: o.structuredContent.next - 7 });
  assert.equal(o2.structuredContent.output, 'tick 5\n');
  // By default a started job's stdin is /dev/null: there is nothing to write to.
  const eof = await call(client, 'start', { command: 'cat; echo "cat ended"' });
  const noWrite = await call(client, 'write', { id: eof.structuredContent.id, data: 'hello\n' });
  assert.equal(noWrite.isError, true, JSON.stringify(noWrite));
  await call(client, 'wait', { id: eof.structuredContent.id, timeout_s: 30 });
  assert.equal((await call(client, 'output', { id: eof.structuredContent.id })).structuredContent.output, 'cat ended\n');
  const cat = await call(client, 'start', { command: 'cat', stdin: 'pipe' });
  const wr = await call(client, 'write', { id: cat.structuredContent.id, data: 'hello\n', eof: true });
  assert.equal(wr.structuredContent.written, 6);
  await call(client, 'wait', { id: cat.structuredContent.id, timeout_s: 30 });
  const co = await call(client, 'output', { id: cat.structuredContent.id });
  assert.equal(co.structuredContent.output, 'hello\n');
  await client.close();
});

test('output: head and tail of the whole output by default, its spool file, grep with line numbers', async () => {
  const { client } = await connect();
  const st = await call(client, 'start', { command: "seq 1 100000; printf '\\033[31mred\\033[0m 50%%\\r100%%\\n'" });
  const id = st.structuredContent.id;
  await call(client, 'wait', { id, timeout_s: 30 });
  const o = await call(client, 'output', { id });
  const s = o.structuredContent;
  // seq writes 588895 bytes, printf 22 more.
  assert.equal(s.total, 588895 + 22);
  assert.equal(s.left_out, s.total - 4096 - 12288);
  const [head, tail] = s.output.split(`[... ${s.left_out} bytes left out ...]\n`);
  const full = Array.from({ length: 100000 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal(head, full.slice(0, 4096) + (full[4095] === '\n' ? '' : '\n'));
  assert.ok(tail.endsWith('99999\n100000\n100%\n'), tail.slice(-40));
  assert.ok(!s.output.includes('\u001b'), 'ANSI escapes were not stripped');
  assert.equal(typeof s.spool_path, 'string');
  assert.equal(readFileSync(s.spool_path).length, s.total);
  assert.match(o.content[0].text, new RegExp(`${s.left_out} bytes left out in the middle; all of it is in `));
  const g = await call(client, 'output', { id, grep: '^9999[0-2]$' });
  assert.equal(g.structuredContent.output, '99990:99990\n99991:99991\n99992:99992\n');
  assert.equal(g.structuredContent.matches, 3);
  const p = await call(client, 'output', { id, offset: 6, length: 6 });
  assert.equal(p.structuredContent.output, '4\n5\n6\n');
  const bad = await call(client, 'output', { id, grep: '(' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /'grep' is not a valid regular expression/);
  await call(client, 'kill', { id });
  await client.close();
});

test('a run the client cancels (notifications/cancelled) is stopped with its tree', async () => {
  const { client } = await connect();
  const file = tmp.path('cancel');
  const ac = new AbortController();
  const p = client.callTool(
    { name: 'run', arguments: { command: `exec ${ESCAPER} ${file} -x sleep name=d,orphan,setsid name=t,trap` } },
    undefined,
    { signal: ac.signal },
  );
  const recs = await waitRecords(file, 3);
  started.push(...recs);
  ac.abort();
  await assert.rejects(p);
  assert.deepEqual(await gone(recs), [], 'the cancelled run is stopped');
  const l = await call(client, 'list', {});
  assert.deepEqual(l.structuredContent.jobs.filter((j) => j.status === 'running'), [], 'none runs on');
  await client.close();
});

async function threeJobs(client, label) {
  const recs = [];
  for (let i = 0; i < 3; i++) {
    const file = tmp.path(`${label}${i}`);
    const s = await call(client, 'start', { command: `exec ${ESCAPER} ${file} -x sleep name=d${i},orphan,setsid name=t${i},trap` });
    assert.equal(s.isError, false);
    recs.push(...(await waitRecords(file, 3)));
  }
  started.push(...recs);
  return recs;
}

test('a started job\'s end comes as a log message, once its tree is gone; logging/setLevel quiets it', async () => {
  const { client } = await connect();
  assert.ok(client.getServerCapabilities().logging, 'the server offers logging');
  const seen = [];
  let wake = () => {};
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    seen.push(n.params);
    wake();
  });
  const ended = (id) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no message for job ${id}: ${JSON.stringify(seen)}`)), 20000);
    const look = () => {
      const m = seen.find((p) => p.data && p.data.id === id);
      if (m) { clearTimeout(t); resolve(m); }
    };
    wake = look;
    look();
  });
  // A job whose main exits 3 after starting a setsid daemon: the message
  // comes once the daemon is stopped too.
  const file = tmp.path('ended');
  const s = await call(client, 'start', {
    command: `${ESCAPER} ${file} -x exit:3 name=daemon,orphan,setsid`, name: 'builder',
  });
  const id = s.structuredContent.id;
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  const m = await ended(id);
  assert.deepEqual(running(recs), [], 'nothing of the job runs when its end is told');
  assert.equal(m.level, 'info');
  assert.equal(m.logger, 'pmon');
  assert.equal(m.data.event, 'job_ended');
  assert.equal(m.data.name, 'builder');
  assert.equal(m.data.exit_code, 3);
  assert.equal(m.data.signal, null);
  assert.equal(m.data.cleanup_verified, true);
  assert.equal(m.data.stopped_by, null);
  assert.equal(m.data.timed_out, false);
  assert.match(m.data.text, new RegExp(`job ${id} \\(builder\\) ended: exit code 3; nothing it started is left`));
  // A run that answers with its end tells nothing more.
  const r = await call(client, 'run', { command: 'exit 5' });
  assert.equal(r.structuredContent.exit_code, 5);
  // Killed: the message says by what.
  const k = await call(client, 'start', { command: 'sleep 300' });
  await call(client, 'kill', { id: k.structuredContent.id });
  const km = await ended(k.structuredContent.id);
  assert.equal(km.data.signal, 'SIGTERM');
  assert.equal(km.data.stopped_by, 'kill');
  assert.match(km.data.text, /\(stopped: kill\)/);
  // Quieter than info: no message; the wait's answer comes after where it
  // would have been.
  await client.setLoggingLevel('warning');
  const q = await call(client, 'start', { command: 'exit 0' });
  const w = await call(client, 'wait', { id: q.structuredContent.id, timeout_s: 20 });
  assert.equal(w.structuredContent.exit_code, 0);
  assert.equal(seen.filter((p) => p.data && p.data.id === q.structuredContent.id).length, 0);
  assert.equal(seen.filter((p) => p.data && p.data.exit_code === 5).length, 0, 'a run answered with its end');
  await assert.rejects(client.request({ method: 'logging/setLevel', params: { level: 'loud' } }, EmptyResultSchema),
    /'level' must be one of debug, info/);
  await client.close();
});

test('three started jobs are gone once the client closes', async () => {
  const { client, server } = await connect();
  const recs = await threeJobs(client, 'close');
  await client.close();
  assert.deepEqual(await gone([...recs, server]), []);
});

test('SIGKILL of pmon mcp: every job is gone', async () => {
  const { client, server, transport } = await connect();
  const recs = await threeJobs(client, 'sigkill');
  assert.ok(recs.every(present));
  process.kill(transport.pid, 'SIGKILL');
  assert.deepEqual(await gone([...recs, server]), []);
  await client.close().catch(() => {});
});

test('a session envelope: the tools say it, run and list carry the session, its cgroup goes with the server', async (t) => {
  // --session-pids-max 0: an envelope that writes no limit, so any cgroup2
  // host makes the session (the limits themselves are the guest suite's).
  const transport = new StdioClientTransport({ command: PMON, args: ['mcp', '--confine', 'cgroup', '--session-pids-max', '0'], stderr: 'pipe' });
  const client = new Client({ name: 'pmon-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    t.skip(`no cgroup backend here: ${e.message}`);
    return;
  }
  const server = { pid: transport.pid, start: procStat(transport.pid).start, name: 'pmon mcp' };
  started.push(server);
  const { tools } = await client.listTools();
  for (const name of ['run', 'start'])
    assert.match(tools.find((x) => x.name === name).description, /This session runs inside an envelope set by the user/, name);
  // The SDK checks each structuredContent against the tool's outputSchema.
  const r = await call(client, 'run', { command: 'cat /proc/self/cgroup' });
  const s = r.structuredContent.session;
  assert.ok(s, JSON.stringify(r.structuredContent));
  assert.match(s.cgroup, new RegExp(`/pmon-session-p${transport.pid}-\\d+-\\d+$`), s.cgroup);
  assert.equal(s.envelope_set_by, '--session-pids-max');
  if (process.getuid() === 0) assert.match(r.structuredContent.output, /^0::\/$/m);  // its own cgroup namespace
  await call(client, 'start', { command: 'sleep 300' });
  const brief = await call(client, 'start', { command: 'true' });
  const waited = await call(client, 'wait', { id: brief.structuredContent.id });
  assert.equal(waited.structuredContent.session?.cgroup, s.cgroup, JSON.stringify(waited.structuredContent));
  const l = await call(client, 'list', {});
  assert.equal(l.structuredContent.session.cgroup, s.cgroup);
  assert.match(l.content[0].text, /session envelope: /);
  assert.ok(existsSync(s.cgroup), `${s.cgroup} is not there while the server runs`);
  await client.close();
  for (const end = Date.now() + 10000; (running([server]).length || existsSync(s.cgroup)) && Date.now() < end;)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(running([server]), []);
  assert.ok(!existsSync(s.cgroup), `${s.cgroup} outlived the server`);
});
