// SPDX-License-Identifier: Apache-2.0
// ACP terminals served by pmon: an ACP client (the editor side, built with
// @agentclientprotocol/sdk) hands the agent's terminal requests to pmon, so
// a terminal's whole tree is stopped when the agent kills or releases it,
// and when the connection to the agent ends, whatever the agent forgot.
import * as acp from '@agentclientprotocol/sdk';

// The SDK itself, for callers that have it only through this package.
export { acp };
import { request } from './index.mjs';

const M = acp.methods.client.terminal;

// Registers terminal/create, output, wait_for_exit, kill and release on a
// ClientApp (acp.client()). The terminals belong to the app: when its
// connection closes, every terminal still there is released (stopped,
// verified gone, forgotten). Use one app per agent connection (the SDK's
// request contexts do not say which connection a request came on).
// Returns the app.
export function servePmonTerminals(app) {
  const owned = new Set();
  app.onConnect((connection) => {
    connection.closed.finally(async () => {
      const ids = [...owned];
      owned.clear();
      await Promise.allSettled(ids.map((terminalId) => request('terminal/release', { terminalId })));
    });
  });
  const exitOf = (s) => (s ? { exitCode: s.exitCode, signal: s.signal } : null);
  app.onRequest(M.create, async (ctx) => {
    const p = ctx.params;
    const { terminalId } = await request('terminal/create', {
      sessionId: p.sessionId,
      command: p.command,
      args: p.args ?? [],
      env: p.env ?? [],
      ...(p.cwd ? { cwd: p.cwd } : {}),
      ...(p.outputByteLimit != null ? { outputByteLimit: p.outputByteLimit } : {}),
    });
    owned.add(terminalId);
    return { terminalId };
  });
  app.onRequest(M.output, async (ctx) => {
    // A reply carries a bounded part of what is kept: read on while `more`.
    const p = { terminalId: ctx.params.terminalId };
    let r = await request('terminal/output', p);
    let { output, truncated } = r;
    while (r.more) {
      r = await request('terminal/output', { ...p, since: r.next });
      output += r.output;
    }
    return { output, truncated, exitStatus: exitOf(r.exitStatus) };
  });
  app.onRequest(M.waitForExit, async (ctx) => {
    const r = await request('terminal/wait_for_exit', { terminalId: ctx.params.terminalId });
    return { exitCode: r.exitCode, signal: r.signal };
  });
  app.onRequest(M.kill, async (ctx) => {
    await request('terminal/kill', { terminalId: ctx.params.terminalId });
    return {};
  });
  app.onRequest(M.release, async (ctx) => {
    await request('terminal/release', { terminalId: ctx.params.terminalId });
    owned.delete(ctx.params.terminalId);
    return {};
  });
  return app;
}

// The capabilities to announce in initialize: terminals, served by pmon.
export const clientCapabilities = { terminal: true };
