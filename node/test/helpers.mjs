// SPDX-License-Identifier: Apache-2.0
// Shared by the tests: processes checked by pid AND start time from /proc.
import { existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { after } from 'node:test';
import { close } from '../index.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const HELPERS = process.env.PMON_HELPERS || join(root, 'build', 'tests', 'helpers');
export const ESCAPER = join(HELPERS, 'escaper');
if (!process.env.PMON && existsSync(join(root, 'build', 'pmon'))) process.env.PMON = join(root, 'build', 'pmon');

// Field 22 (start time) and field 3 (state) of /proc/PID/stat, or null.
export function procStat(pid) {
  let s;
  try {
    s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], start: f[19] };
}

// The process recorded as {pid, start} is still there (alive or a zombie).
export function present(p) {
  const st = procStat(p.pid);
  return st !== null && st.start === String(p.start);
}

// Those of `list` still running (present and not a zombie).
export function running(list) {
  return list.filter((p) => present(p) && procStat(p.pid)?.state !== 'Z');
}

// "pid start_time name" lines that escaper (and the tests' scripts) write.
export function records(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [pid, start, name] = l.split(' ');
      return { pid: Number(pid), start, name };
    });
}

// Waits up to `ms` for every recorded process to be gone; returns those left.
export async function gone(list, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const left = list.filter(present);
    if (left.length === 0 || Date.now() > end) return left;
    await sleep(20);
  }
}

// Waits (bounded) until FILE has at least N records.
export async function waitRecords(file, n, ms = 10000) {
  const end = Date.now() + ms;
  while (records(file).length < n) {
    if (Date.now() > end) throw new Error(`${file}: fewer than ${n} processes recorded`);
    await sleep(10);
  }
  return records(file);
}

export function scratch() {
  const d = mkdtempSync(join(tmpdir(), 'pmon-node-'));
  return { dir: d, path: (n) => join(d, n), remove: () => rmSync(d, { recursive: true, force: true }) };
}

// Kills (SIGKILL) whatever of `list` a failed test left, so no test leaks.
export function cleanup(list) {
  for (const p of list) if (present(p)) try { process.kill(p.pid, 'SIGKILL'); } catch {}
}

// A test file's scratch directory and the list its tests push the processes
// they record to. After the file's last test, whatever a failed test left is
// killed (by pid and start time), the package's service is closed and the
// directory removed.
export function perFile() {
  const tmp = scratch();
  const started = [];
  after(async () => {
    cleanup(started);
    await close();
    tmp.remove();
  });
  return { tmp, started };
}

export { sleep };
