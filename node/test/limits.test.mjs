// SPDX-License-Identifier: Apache-2.0
// memoryMax, pidsMax and cpuMax on run() and start(): passed to the job's
// terminal/create, set on its cgroup leaf where the leaf can get the
// controller (the command sees its own memory.max, pids.max, cpu.max), and
// rejected with the service's one line where it cannot (a hybrid host: its
// cgroup v2 has none of them). The command never runs then. Bad values
// reject naming the field.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { scratch } from './helpers.mjs';
import { run, start, close } from '../index.mjs';

const tmp = scratch();
after(async () => {
  await close();
  tmp.remove();
});

// Whether the leaves' parent enables a controller for them.
async function enabledForLeaves(controller) {
  const r = await run('true');
  if (r.report.confinement !== 'cgroup') return null;
  try {
    return fs.readFileSync(path.join(path.dirname(r.report.cgroup), 'cgroup.subtree_control'), 'utf8')
      .split(/\s+/).includes(controller);
  } catch {
    return false;
  }
}

const limits = [
  ['memoryMax', '100M', 'memory', 'memory.max', '104857600', 'memory_max', 104857600],
  ['memoryHigh', '80M', 'memory', 'memory.high', '83886080', 'memory_high', 83886080],
  ['pidsMax', 50, 'pids', 'pids.max', '50', 'pids_max', 50],
  ['cpuMax', 0.5, 'cpu', 'cpu.max', '50000 100000', 'cpu_max', 0.5],
];

for (const [option, value, controller, file, shown, key, reported] of limits) {
  test(`${option}: set on the leaf, or refused where the leaf cannot get ${controller}`, async () => {
    const enabled = await enabledForLeaves(controller);
    if (enabled === null) {
      // No cgroup backend here: every limit is refused.
      await assert.rejects(run('true', { [option]: value }), /limits need a cgroup/);
      return;
    }
    const ran = tmp.path(`ran-${option}`);
    const script = `cg=$(sed -n 's/^0:://p' /proc/self/cgroup); ` +
      `cat /sys/fs/cgroup/unified$cg/${file} 2>/dev/null || cat /sys/fs/cgroup$cg/${file}; echo ran > ${ran}`;
    if (enabled) {
      const r = await run('sh', ['-c', script], { [option]: value });
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(r.stdout.trim(), shown);
      assert.equal(r.report.limits[key], reported);
      return;
    }
    const refused = new RegExp(`cannot set the ${controller} limit: the ${controller} controller is not`);
    await assert.rejects(run('sh', ['-c', script], { [option]: value }), refused);
    await assert.rejects(start('sh', ['-c', script], { [option]: value }), refused);
    assert.equal(fs.existsSync(ran), false, 'the command ran although its limit was refused');
    // The service goes on: a call without limits runs.
    assert.equal((await run('true')).exitCode, 0);
  });
}

test('bad limits reject naming the field', async () => {
  const ran = tmp.path('ran-bad');
  const cases = [
    [{ memoryMax: '100X' }, /'memoryMax' '100X' is not a size/],
    [{ memoryMax: -1 }, /'memoryMax' must be a number of bytes/],
    [{ memoryHigh: '200M', memoryMax: '100M' }, /'memoryHigh' must be below 'memoryMax'/],
    [{ pidsMax: -1 }, /'pidsMax' '-1' is not a whole number of processes/],
    [{ pidsMax: '50' }, /'pidsMax' must be a whole number/],
    [{ cpuMax: 0 }, /'cpuMax' .*out of range/],
    [{ cpuMax: 'fast' }, /'cpuMax' must be a number of cores/],
  ];
  for (const [options, words] of cases) {
    await assert.rejects(run('sh', ['-c', `echo ran > ${ran}`], options), words);
    await assert.rejects(start('sh', ['-c', `echo ran > ${ran}`], options), words);
  }
  assert.equal(fs.existsSync(ran), false);
});
