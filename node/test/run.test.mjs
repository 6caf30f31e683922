// SPDX-License-Identifier: Apache-2.0
// run(): the escapes of a tool call, side by side with child_process.execFile,
// many at once, and an abort mid-run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { ESCAPER, records, gone, waitRecords, running, perFile } from './helpers.mjs';
import { run } from '../index.mjs';

const { tmp, started } = perFile();

// Every process escaper made is gone when run() returns: none still runs,
// and the zombies of killed parents are reaped (by whoever inherits them).
async function assertNothingLeft(file, label) {
  const recs = records(file);
  started.push(...recs);
  assert.ok(recs.length > 0, `${label}: escaper recorded nothing`);
  assert.deepEqual(running(recs), [], `${label}: still running`);
  const left = await gone(recs);
  assert.deepEqual(left, [], `${label}: still there: ${JSON.stringify(left)}`);
}

const escapes = [
  ['a setsid daemon', ['-x', 'exit:0', 'name=daemon,orphan,setsid']],
  ['a setpgid group', ['-x', 'exit:0', 'name=grp,setpgid', 'name=grp2,orphan,setpgid']],
  ['a TERM-trapping child', ['-x', 'exit:0', 'name=trap,trap', 'name=ign,orphan,setsid,ignore']],
  ['zombies', ['-x', 'exit:0', 'name=zp,zombies=3', 'name=zo,orphan,zombies=2']],
  ['a pipe holder', ['-x', 'exit:0', 'name=holder,orphan,setsid,write=3']],
];

for (const [label, args] of escapes) {
  test(`run: ${label} is gone when run returns`, async () => {
    const file = tmp.path(label.replaceAll(' ', '_'));
    const r = await run(ESCAPER, [file, ...args]);
    assert.equal(r.exitCode, 0);
    assert.equal(r.cleanupVerified, true);
    assert.ok(r.leftovers.length > 0, 'the leftovers are reported');
    if (label === 'a pipe holder') assert.match(r.stdout, /holder END/);
    await assertNothingLeft(file, label);
  });
}

function execFileResult(file, args, options = {}) {
  return new Promise((resolve) => {
    const child = execFile(file, args, options, (err, stdout, stderr) => {
      resolve({ err, stdout, stderr, exitCode: child.exitCode, signal: child.signalCode });
    });
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

// The same commands through both: exit code, signal, stdout, stderr.
const table = [
  ['true', []],
  ['false', []],
  ['sh', ['-c', 'exit 7']],
  ['sh', ['-c', 'exit 255']],
  ['sh', ['-c', 'echo out; echo err >&2; echo out2']],
  ['sh', ['-c', 'kill -TERM $$']],
  ['sh', ['-c', 'kill -KILL $$']],
  ['sh', ['-c', 'kill -INT $$']],
  ['sh', ['-c', 'printf "no newline"']],
  ['sh', ['-c', 'printf "h\\303\\251llo \\342\\202\\254\\n"']],
  ['sh', ['-c', 'seq 1 20000']],
  ['sh', ['-c', 'echo "$FOO"'], { env: { FOO: 'bar', PATH: process.env.PATH } }],
  ['pwd', [], { cwd: '/tmp' }],
  ['cat', [], { input: 'given on stdin\n' }],
  ['echo', ['a b', '$HOME'], { shell: true }],
];

for (const [file, args, options = {}] of table) {
  test(`run and execFile agree: ${file} ${args.join(' ')}`, async () => {
    const { input, ...execOpts } = options;
    const e = await execFileResult(file, args, { ...execOpts, input });
    const r = await run(file, args, options);
    assert.equal(r.exitCode, e.exitCode, 'exit code');
    assert.equal(r.signal, e.signal, 'signal');
    assert.equal(r.stdout, e.stdout, 'stdout');
    assert.equal(r.stderr, e.stderr, 'stderr');
    assert.equal(r.cleanupVerified, true);
  });
}

test('reject: true rejects with the shape of execFile\'s error', async () => {
  for (const [file, args] of [['sh', ['-c', 'echo o; echo e >&2; exit 3']], ['sh', ['-c', 'kill -TERM $$']]]) {
    const e = await execFileResult(file, args);
    await assert.rejects(run(file, args, { reject: true }), (err) => {
      assert.equal(err.code, e.err.code, 'code');
      assert.equal(err.signal, e.err.signal, 'signal');
      assert.equal(err.killed, e.err.killed, 'killed');
      assert.equal(err.stdout, e.stdout);
      assert.equal(err.stderr, e.stderr);
      assert.match(err.message, /^Command failed: /);
      return true;
    });
  }
  const ok = await run('true', [], { reject: true });
  assert.equal(ok.exitCode, 0);
  const quiet = await run('false');
  assert.equal(quiet.exitCode, 1, 'without reject a failure resolves');
});

test('stdin: /dev/null without input, a pipe with it', async () => {
  const none = await run('sh', ['-c', 'read x; echo "read $?"']);
  assert.equal(none.stdout, 'read 1\n');
  assert.equal(none.report.job.stdin, 'null');
  assert.equal(none.stoppedBy, null);
  const given = await run('sh', ['-c', 'read x; echo "got $x"'], { input: 'hi\n' });
  assert.equal(given.stdout, 'got hi\n');
  assert.equal(given.report.job.stdin, 'pipe');
});

test('timeout stops the whole tree and says timedOut', async () => {
  const file = tmp.path('timeout');
  // Long enough for the escaper to have started and recorded its daemon on a
  // loaded machine: a timeout that fires first leaves nothing to check.
  const r = await run(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid'], { timeout: 2000 });
  assert.equal(r.timedOut, true);
  assert.equal(r.stoppedBy, 'timeout');
  assert.equal(r.signal, 'SIGTERM');
  assert.equal(r.cleanupVerified, true);
  await assertNothingLeft(file, 'timeout');
});

test('idleTimeout stops a tree that has gone quiet, and not one that prints', async () => {
  const file = tmp.path('idle');
  const r = await run(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid'], { idleTimeout: 2000 });
  assert.equal(r.timedOut, true);
  assert.equal(r.idleTimedOut, true);
  assert.equal(r.report.stop.reason, 'idle_timeout');
  assert.equal(r.cleanupVerified, true);
  await assertNothingLeft(file, 'idle');
  // A line every 100 ms for 6 s, past a 4 s idle timeout: it ends by itself
  // (40 gaps to the timeout, so a loaded machine's stalls do not end it).
  const busy = await run('sh', ['-c', 'for i in $(seq 60); do echo $i; sleep 0.1; done'], { idleTimeout: 4000 });
  assert.equal(busy.idleTimedOut, false);
  assert.equal(busy.exitCode, 0);
  assert.match(busy.stdout, /^60$/m);
});

test('killSignal is the first signal of the stop', async () => {
  const r = await run('sleep', ['100'], { timeout: 100, killSignal: 'SIGINT' });
  assert.equal(r.timedOut, true);
  assert.equal(r.signal, 'SIGINT');
});

test('encoding buffer gives Buffers; maxBuffer keeps the newest bytes', async () => {
  const b = await run('sh', ['-c', 'printf abc'], { encoding: 'buffer' });
  assert.ok(Buffer.isBuffer(b.stdout));
  assert.equal(b.stdout.toString(), 'abc');
  const t = await run('sh', ['-c', 'seq 1 10000'], { maxBuffer: 100 });
  assert.equal(t.truncated, true);
  assert.ok(t.stdout.length <= 100);
  assert.ok(t.stdout.endsWith('10000\n'));
});

test('output longer than one reply of the service is read whole', async () => {
  // 10 MiB on stdout and 5 MiB on stderr: each reply carries at most 4 MiB.
  const r = await run('sh', ['-c', 'head -c 10485760 /dev/zero | tr "\\0" a; head -c 5242880 /dev/zero | tr "\\0" b >&2'],
    { maxBuffer: 16 << 20 });
  assert.equal(r.truncated, false);
  assert.equal(r.stdout.length, 10 << 20);
  assert.equal(r.stderr.length, 5 << 20);
  assert.ok(/^a+$/.test(r.stdout) && /^b+$/.test(r.stderr));
});

test('a command that cannot start rejects with one clear line', async () => {
  await assert.rejects(run('/nonexistent/program'), /pmon: .*not found|No such file/);
});

test('200 concurrent runs each get their own output', async () => {
  const n = 200;
  // Each writes "pid start-time" of itself to stderr, to be seen gone.
  const rs = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      run('sh', ['-c', 'echo $0; cut -d" " -f1,22 /proc/$$/stat >&2; exit $(($0 % 7))', String(i)])),
  );
  const recs = [];
  rs.forEach((r, i) => {
    assert.equal(r.stdout, `${i}\n`);
    assert.equal(r.exitCode, i % 7);
    assert.equal(r.cleanupVerified, true);
    const [pid, start] = r.stderr.trim().split(' ');
    recs.push({ pid: Number(pid), start, name: `run ${i}` });
  });
  started.push(...recs);
  assert.deepEqual(running(recs), [], 'a run is still there after it returned');
});

test('aborting a run stops the whole tree', async () => {
  const file = tmp.path('abort');
  const ac = new AbortController();
  const p = run(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid', 'name=t,trap'], { signal: ac.signal });
  const recs = await waitRecords(file, 3);
  started.push(...recs);
  ac.abort();
  await assert.rejects(p, (err) => {
    assert.equal(err.name, 'AbortError');
    assert.equal(err.code, 'ABORT_ERR');
    assert.equal(err.cleanupVerified, true);
    return true;
  });
  assert.deepEqual(running(recs), [], 'nothing runs when run rejects');
  assert.deepEqual(await gone(recs), []);
  await assert.rejects(run('true', [], { signal: ac.signal }), { name: 'AbortError' });
});

test('an abort while the job is still being created stops it', async () => {
  const file = tmp.path('abort-early');
  const ac = new AbortController();
  const p = run(ESCAPER, [file, '-x', 'sleep', 'name=d,orphan,setsid'], { signal: ac.signal });
  ac.abort();  // (the create's answer cannot have come yet: it comes on a later turn)
  let bound;
  const late = new Promise((_, reject) => {
    bound = setTimeout(() => reject(new Error('run neither ended nor rejected 30 s after its abort')), 30000);
  });
  try {
    await assert.rejects(Promise.race([p, late]), (err) => {
      assert.equal(err.name, 'AbortError');
      assert.equal(err.cleanupVerified, true);
      return true;
    });
  } finally {
    clearTimeout(bound);
  }
  const recs = records(file);
  started.push(...recs);
  assert.deepEqual(running(recs), [], 'nothing runs when run rejects');
});
