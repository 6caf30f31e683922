// SPDX-License-Identifier: Apache-2.0
// Shared by the harness tests (tests/harness/<harness>/*.test.mjs): the
// workload a scripted model asks for, what it left (by pid AND start time),
// the port it held, and a harness run that can end normally or by SIGKILL.
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { records, running, cleanup, scratch } from '../../node/test/helpers.mjs';

export { records, running, cleanup, scratch };

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
// The pmon under test and its shell-prefix name (a link to it).
export const PMON = process.env.PMON || join(root, 'build', 'pmon');
export const PMON_SHELL = process.env.PMON_SHELL || join(dirname(PMON), 'pmon-shell');
export const WORKLOAD = join(here, 'workload.sh');

// The shell line the model sends: a setsid daemon and a dev server on PORT,
// each recorded in REC; with hold, the line runs until the server ends.
export function workloadLine(rec, port, hold = false) {
  return `bash ${WORKLOAD} ${rec} ${port}${hold ? ' hold' : ''}`;
}

// A port on 127.0.0.1 nobody listens on now.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Whether something accepts connections on 127.0.0.1:PORT.
export function portBound(port) {
  return new Promise((resolve) => {
    const c = connect({ host: '127.0.0.1', port });
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

// Polls COND (sync or async) every 20 ms until it is truthy or MS pass;
// returns its last value.
export async function waitFor(cond, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v || Date.now() > end) return v;
    await sleep(20);
  }
}

// Starts a harness: { child, out() , ended } where ended resolves to
// { code, signal } once it exits (killed after `timeoutMs`, a failure).
export function startHarness(cmd, args, { env = {}, cwd, timeoutMs = 120000 } = {}) {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
  const ended = new Promise((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut });
    });
  });
  return { child, out: () => out, ended };
}

// What is left of a run once the harness is over: the recorded processes
// still running and whether the port is still bound. Waits up to MS for the
// processes to go (a stop in progress), then reports.
export async function leftover(rec, port, ms = 5000) {
  const list = records(rec);
  await waitFor(() => running(list).length === 0, ms);
  return { alive: running(list), bound: await portBound(port), recorded: list };
}
