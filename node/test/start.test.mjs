// SPDX-License-Identifier: Apache-2.0
// start(): a job that runs on — a dev server and its port, stdin, output
// as it comes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { ESCAPER, records, gone, waitRecords, running, perFile, procStat } from './helpers.mjs';
import { start, list, find } from '../index.mjs';

const { tmp, started } = perFile();

function canBind(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

function get(port) {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => c.end('GET / HTTP/1.0\r\n\r\n'));
    let data = '';
    c.on('data', (d) => (data += d));
    c.on('end', () => resolve(data));
    c.on('error', reject);
  });
}

test('a started dev server: waitForPort, ports, kill frees the port', async () => {
  const job = await start('python3', ['-m', 'http.server', '0', '--bind', '127.0.0.1'], { name: 'dev' });
  const l = await job.waitForPort({ timeout: 20000 });
  assert.ok(l.port > 0);
  assert.match(await get(l.port), /^HTTP\/1\.0 200/);
  const ports = await job.ports();
  assert.ok(ports.some((p) => p.port === l.port));
  const info = (await list()).find((t) => t.terminalId === job.id);
  assert.equal(info.name, 'dev');
  assert.equal(info.status, 'running');
  // The server itself, by pid and start time, to see it gone after the kill.
  assert.equal(l.pid, info.pid, 'the main process listens');
  const server = { pid: info.pid, start: procStat(info.pid).start, name: 'dev' };
  started.push(server);
  assert.equal(await canBind(l.port), false, 'the port is taken while it runs');
  const k = await job.kill();
  assert.equal(k.cleanupVerified, true);
  assert.deepEqual(running([server]), [], 'the dev server runs on after the kill');
  assert.equal(await canBind(l.port), true, 'the port is free once killed');
  const st = await job.wait();
  assert.equal(st.signal, 'SIGTERM');
  await job.release();
});

test('a name is one job: start returns the running one; replace stops its tree first; find by name and port', async () => {
  const file = tmp.path('named');
  const first = await start(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid'], { name: 'api' });
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  assert.equal(first.existing, false);
  const again = await start('sleep', ['1000'], { name: 'api' });
  assert.equal(again.existing, true);
  assert.equal(again.id, first.id);
  assert.equal((await list()).filter((t) => t.name === 'api').length, 1);
  const server = await start('python3', ['-m', 'http.server', '0', '--bind', '127.0.0.1'], { name: 'api', replace: true });
  assert.equal(server.existing, false);
  assert.notEqual(server.id, first.id);
  assert.deepEqual(running(recs), [], 'the replaced tree runs on after start resolved');
  assert.equal((await first.report()).job.stoppedBy, 'replaced');
  const { port } = await server.waitForPort({ timeout: 20000 });
  assert.equal((await find({ name: 'api' })).id, server.id);
  assert.equal((await find({ port })).id, server.id);
  await assert.rejects(find({ name: 'nope' }), /no running terminal of yours is named 'nope'/);
  assert.equal((await (await find({ port })).kill()).cleanupVerified, true);
  await assert.rejects(find({ port }), /no running terminal of yours listens on TCP port/);
  await first.release();
  await server.release();
});

test("'exit' is emitted when a job ends: by itself, and killed with its setsid daemon", { timeout: 60000 }, async () => {
  const done = await start('sh', ['-c', 'exit 4']);
  const [code, sig, verified, end] = await new Promise((resolve) => done.once('exit', (...a) => resolve(a)));
  assert.deepEqual([code, sig, verified], [4, null, true]);
  // Why it ended: by itself.
  assert.equal(end.stoppedBy, null);
  assert.equal(end.timedOut, false);
  const file = tmp.path('exit-event');
  const job = await start(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid']);
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  const ended = new Promise((resolve) => job.on('exit', (...a) => resolve(a)));
  // A listener of three arguments, as before the fourth, is called as it was.
  const three = new Promise((resolve) => job.on('exit', (c, s, v) => resolve([c, s, v])));
  await job.kill();
  const [c, s, v, why] = await ended;
  assert.deepEqual([c, s, v], [null, 'SIGTERM', true]);
  assert.deepEqual(await three, [null, 'SIGTERM', true]);
  assert.equal(why.stoppedBy, 'kill', JSON.stringify(why));
  assert.equal(why.timedOut, false);
  assert.equal((await job.info()).stoppedBy, 'kill');
  const w = await job.wait();
  assert.equal(w.stoppedBy, 'kill');
  assert.deepEqual(running(recs), []);
  await done.release();
  await job.release();
});

test('waitForPort rejects when the job ends first', async () => {
  const job = await start('sh', ['-c', 'exit 0']);
  await assert.rejects(job.waitForPort({ timeout: 5000 }), /ended before it listened/);
  await job.release();
});

test('write, end, and async iteration over the output', async () => {
  const job = await start('sh', ['-c', 'while read l; do echo "got $l"; done; echo bye'], { stdin: 'pipe' });
  await job.write('one\n');
  await job.write('two\n');
  await job.end();
  let all = '';
  for await (const chunk of job) all += chunk;
  assert.equal(all, 'got one\ngot two\nbye\n');
  const w = await job.wait();
  assert.deepEqual([w.exitCode, w.signal, w.stoppedBy, w.timedOut], [0, null, null, false]);
  const o = await job.output({ since: 8 });
  assert.equal(o.output, 'got two\nbye\n');
  await job.release();
});

test("stdin: /dev/null by default (a read ends at once), a pipe with stdin 'pipe' or input", async () => {
  const nul = await start('sh', ['-c', 'read x; echo "read $?"']);
  const w = await nul.wait({ timeout: 20000 });
  assert.equal(w.exitCode, 0, JSON.stringify(w));
  assert.equal((await nul.output()).output, 'read 1\n');
  assert.equal((await nul.report()).job.stdin, 'null');
  await assert.rejects(nul.write('x\n'), /stdin: "pipe"/);
  await nul.release();

  const given = await start('sh', ['-c', 'read x; echo "got $x"'], { input: 'hi\n' });
  await given.wait({ timeout: 20000 });
  assert.equal((await given.output()).output, 'got hi\n');
  assert.equal((await given.report()).job.stdin, 'pipe');
  await given.release();
  await assert.rejects(start('cat', [], { stdin: 'tty' }), /stdin must be 'pipe' or 'null'/);

  // pty: a terminal of its own, which write() types into.
  const tty = await start('sh', ['-c', '[ -t 0 ] && read x && echo "tty $x"'], { pty: { rows: 30, cols: 100 } });
  assert.equal((await tty.info()).pty, true);
  await tty.write('yes\n');
  assert.equal((await tty.wait({ timeout: 20000 })).exitCode, 0);
  assert.match((await tty.output()).output, /tty yes/);
  assert.equal((await tty.report()).job.stdin, 'pty');
  await tty.release();
});

test('waitingForInput: output() and wait() of a job blocked reading its pipe say so', async () => {
  const job = await start('sh', ['-c', 'read x; echo "got $x"'], { stdin: 'pipe' });
  let o;
  for (let i = 0; i < 200; i++) {
    o = await job.output();
    if (o.waitingForInput) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(o.waitingForInput, true, JSON.stringify(o));
  const w = await job.wait({ timeout: 50 });
  assert.deepEqual([w.running, w.waitingForInput], [true, true]);
  assert.equal((await job.info()).waitingForInput, true);
  await job.end('hi\n');
  const done = await job.wait();
  assert.equal(done.exitCode, 0);
  const after = await job.output();
  assert.equal(after.output, 'got hi\n');
  assert.equal(after.waitingForInput, undefined, 'an ended job has no waitingForInput');
  await job.release();
});

test('output views of the whole output: head and tail, grep, stripAnsi; the spool file goes with release', async () => {
  const job = await start('sh', ['-c', "seq 1 50000; printf '\\033[1mbold\\033[0m\\n'"], { outputByteLimit: 4096 });
  await job.wait();
  const ht = await job.output({ head: 4, tail: 5 });
  assert.equal(ht.output, '1\n2\n' + `[... ${ht.total - 9} bytes left out ...]\n` + '\u001b[0m\n');
  assert.equal(ht.leftOut, ht.total - 9);
  const g = await job.output({ grep: '^4999[89]$' });
  assert.equal(g.output, '49998:49998\n49999:49999\n');
  const s = await job.output({ tail: 20, stripAnsi: true });
  assert.ok(s.output.endsWith('bold\n'), s.output);
  assert.equal(readFileSync(ht.spoolPath).length, ht.total);
  await job.release();
  assert.throws(() => readFileSync(ht.spoolPath), /ENOENT/);
});

test('wait with a timeout on a running job, then kill stops its setsid daemon', async () => {
  const file = tmp.path('job');
  const job = await start(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid']);
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  const w = await job.wait({ timeout: 50 });
  assert.equal(w.running, true);
  assert.equal((await job.kill()).cleanupVerified, true);
  assert.deepEqual(running(recs), []);
  assert.deepEqual(await gone(recs), []);
  await job.release();
});

// SIGTERM (15) is in the mask of ignored signals of /proc/PID/status.
function ignoresTerm(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^SigIgn:\s*([0-9a-f]+)$/m);
  return m !== null && (BigInt('0x' + m[1]) & (1n << 14n)) !== 0n;
}

test('kill stops a main that ignores TERM and the setsid daemon it started', async () => {
  const file = tmp.path('term-ignored');
  const job = await start('sh', ['-c', `trap '' TERM; exec ${ESCAPER} ${file} -x sleep name=daemon,orphan,setsid,ignore`]);
  const recs = await waitRecords(file, 2);
  started.push(...recs);
  const main = recs.find((r) => r.name === 'main');
  const daemon = recs.find((r) => r.name === 'daemon');
  assert.ok(main && daemon, JSON.stringify(recs));
  assert.equal(procStat(daemon.pid).start, daemon.start);
  assert.ok(ignoresTerm(main.pid) && ignoresTerm(daemon.pid), 'both ignore TERM');
  assert.equal((await job.kill()).cleanupVerified, true);
  // By pid and start time: gone once kill returned, not some time later.
  assert.deepEqual(running([daemon, main]), [], 'nothing of the job runs once kill returned');
  assert.deepEqual(await gone(recs), []);
  assert.equal((await job.wait()).signal, 'SIGKILL');
  await job.release();
});

test('ready: start resolves once a dev server answers 2xx, or says why it is not ready', async () => {
  const t0 = Date.now();
  const job = await start('python3', ['-c', 'import time, http.server\ntime.sleep(0.5)\n' +
    'http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler).serve_forever()'],
  { ready: { http: '/', timeoutMs: 20000 } });
  assert.equal(job.ready, true, `not ready: ${job.readyError}`);
  assert.ok(job.readyMs >= 400 && Date.now() - t0 >= 400, `ready after ${job.readyMs} ms, before it listened`);
  const [l] = await job.ports();
  assert.match(await get(l.port), /^HTTP\/1\.0 200/);
  assert.equal((await list()).find((x) => x.terminalId === job.id).ready, true);
  assert.equal((await job.kill()).cleanupVerified, true);

  const line = await start('sh', ['-c', 'sleep 0.3; echo "ready now"; exec sleep 1000'], { ready: { line: /^ready now$/ } });
  assert.equal(line.ready, true);
  await line.kill();

  const failed = await start('sh', ['-c', 'exit 3'], { ready: { port: 1, timeoutMs: 20000 } });
  assert.equal(failed.ready, false);
  assert.match(failed.readyError, /the job exited with status 3 before it was ready/);

  const slow = await start('sleep', ['1000'], { ready: { line: 'never', timeoutMs: 200 } });
  assert.equal(slow.ready, false);
  assert.equal(slow.readyError, "not ready after 0.2 s: no line of its output matched 'never'");
  assert.equal((await slow.wait({ timeout: 0 })).running, true, 'a timed-out probe stopped the job');
  await slow.kill();

  await assert.rejects(start('true', [], { ready: { line: '(' } }), /'ready\.line' is not a valid regular expression/);
});
