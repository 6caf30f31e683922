// SPDX-License-Identifier: Apache-2.0
// Every job dies with the Node process that started it: process.exit, an
// uncaught exception, SIGKILL of node.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { records, gone, scratch, cleanup, procStat } from './helpers.mjs';

const owner = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'owner.mjs');
const started = [];
const dirs = [];
after(() => {
  cleanup(started);
  for (const d of dirs) d.remove();
});

async function runOwner(mode) {
  const tmp = scratch();
  dirs.push(tmp);
  const child = spawn(process.execPath, [owner, mode, tmp.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /ready (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', () => reject(new Error(`owner exited before ready: ${err}`)));
  });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
  const servicePid = await ready;
  const service = { pid: servicePid, start: procStat(servicePid).start, name: 'service' };
  const recs = [0, 1, 2].flatMap((i) => records(join(tmp.dir, `job${i}`)));
  started.push(...recs, service);
  assert.equal(recs.length, 9);
  return { child, exited, recs, service, stderr: () => err };
}

test('process.exit: every job is gone', async () => {
  const o = await runOwner('exit');
  assert.deepEqual(await o.exited, { code: 0, sig: null });
  assert.deepEqual(await gone([...o.recs, o.service]), []);
});

test('an uncaught exception: every job is gone', async () => {
  const o = await runOwner('throw');
  const { code } = await o.exited;
  assert.equal(code, 1);
  assert.match(o.stderr(), /an uncaught exception/);
  assert.deepEqual(await gone([...o.recs, o.service]), []);
});

test('SIGKILL of node: every job is gone', async () => {
  const o = await runOwner('hang');
  o.child.kill('SIGKILL');
  assert.deepEqual(await o.exited, { code: null, sig: 'SIGKILL' });
  assert.deepEqual(await gone([...o.recs, o.service]), []);
});
