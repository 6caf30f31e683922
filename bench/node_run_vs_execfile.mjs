// SPDX-License-Identifier: Apache-2.0
// pmon's Node run() against child_process.execFile on `true`, in the same
// process and run, alternating rounds; then the memory of 1000 started jobs.
//   PMON=build/pmon node bench/node_run_vs_execfile.mjs [calls per round] [rounds]
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { run, start, close, servicePid } from '../node/index.mjs';
import { readFileSync } from 'node:fs';

const execFileP = promisify(execFile);
const n = Number(process.argv[2] || 300);
const rounds = Number(process.argv[3] || 5);

async function rate(fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

await run('true'); // the service starts outside the measurement
const pm = [], ef = [];
for (let r = 0; r < rounds; r++) {
  ef.push(await rate(() => execFileP('true')));
  pm.push(await rate(() => run('true')));
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const a = median(pm), b = median(ef);
console.log(`sequential, ${n} calls x ${rounds} rounds (median calls/s):`);
console.log(`  execFile('true')  ${b.toFixed(0)}`);
console.log(`  pmon run('true')  ${a.toFixed(0)}   ratio ${(a / b).toFixed(2)}x`);

const c = 8;
async function par(fn) {
  const t0 = process.hrtime.bigint();
  let left = n;
  await Promise.all(Array.from({ length: c }, async () => { while (left-- > 0) await fn(); }));
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}
const pp = [], ep = [];
for (let r = 0; r < rounds; r++) {
  ep.push(await par(() => execFileP('true')));
  pp.push(await par(() => run('true')));
}
console.log(`${c} at once (median calls/s): execFile ${median(ep).toFixed(0)}, pmon run ${median(pp).toFixed(0)}, ratio ${(median(pp) / median(ep)).toFixed(2)}x`);

const before = { node: process.memoryUsage().rss / 1024, service: rssKiB(servicePid()) };
const jobs = [];
for (let i = 0; i < 1000; i++) jobs.push(await start('sleep', ['600']));
const afterStart = { node: process.memoryUsage().rss / 1024, service: rssKiB(servicePid()) };
console.log(`1000 started jobs: pmon serve RSS ${before.service} -> ${afterStart.service} KiB ` +
  `(${((afterStart.service - before.service) / 1000).toFixed(1)} KiB a job), node RSS ` +
  `${before.node.toFixed(0)} -> ${afterStart.node.toFixed(0)} KiB`);
const t0 = Date.now();
await close();
console.log(`closing the service stopped all 1000 in ${Date.now() - t0} ms`);
