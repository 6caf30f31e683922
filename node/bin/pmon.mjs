#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The `pmon` command of the npm package (npx pmon-runtime mcp): runs the pmon
// program of this platform's package with the same arguments, stdio and
// exit status. Signals that would end this launcher are passed on, so a
// client that stops `npx ... mcp` stops pmon, which then stops every job; if
// the launcher is killed outright, pmon notices its parent's death.
import { spawn } from 'node:child_process';
import { findPmon } from '../index.mjs';

let pmon;
try {
  pmon = findPmon();
} catch (e) {
  process.stderr.write(`${e.message}\n`);
  process.exit(127);
}
const child = spawn(pmon, process.argv.slice(2), { stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'])
  process.on(sig, () => child.kill(sig));
child.on('error', (e) => {
  process.stderr.write(`pmon: cannot run ${pmon}: ${e.message}\n`);
  process.exit(126);
});
child.on('exit', (code, signal) => {
  if (signal) {
    // Die by the same signal, so the caller sees what pmon saw.
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
