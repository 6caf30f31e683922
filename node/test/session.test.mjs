// SPDX-License-Identifier: Apache-2.0
// One envelope per client: with PMON_SESSION_* in the Node process's
// environment, the pmon serve the package starts is one session, every job
// a leaf in its cgroup (pmon-session-p<service pid>-...), in a cgroup
// namespace of its own (as root); the job list and a run's report carry the
// session; its cgroup goes with the service. pids_max 0 writes no limit,
// so any cgroup2 host makes the session (the limits are the guest suite's).
process.env.PMON_SESSION_PIDS_MAX = '0';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { run, start, list, close, servicePid } from '../index.mjs';

after(async () => {
  await close();
});

test('the jobs of one client share one session, gone with its service', async (t) => {
  const r = await run('cat', ['/proc/self/cgroup']);
  if (r.report.confinement !== 'cgroup') {
    t.skip(`no cgroup backend here (${r.report.confinement})`);
    return;
  }
  const s = r.report.session;
  assert.ok(s, JSON.stringify(r.report));
  assert.match(s.cgroup, new RegExp(`/pmon-session-p${servicePid()}-\\d+-\\d+$`), s.cgroup);
  assert.equal(s.envelope_set_by, 'PMON_SESSION_PIDS_MAX');
  if (process.getuid() === 0) assert.match(r.stdout, /^0::\/$/m);
  const job = await start('sleep', ['300']);
  const mine = (await list()).find((j) => j.terminalId === job.id);
  assert.equal(mine.session.cgroup, s.cgroup, JSON.stringify(mine));
  assert.ok(existsSync(s.cgroup));
  await close();
  for (const end = Date.now() + 10000; existsSync(s.cgroup) && Date.now() < end;)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(!existsSync(s.cgroup), `${s.cgroup} outlived the service`);
});
