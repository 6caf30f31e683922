#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// A minimal ACP client (the editor side) whose terminals are pmon jobs:
// it starts an agent, sends it one prompt, prints what the agent says, and
// runs every terminal the agent asks for under pmon. Whatever the agent
// leaves running — a daemon its command forked, a terminal it never
// released — is stopped when the agent's turn and connection end.
//
//   node examples/acp_client.mjs "PROMPT" -- AGENT [ARGS...]
// (npm ci in node/ first; pmon is found through PMON, next to node/ or on PATH)
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { acp, servePmonTerminals, clientCapabilities } from '../node/acp.mjs';

// Starts AGENT, prompts it once over ACP on its stdin/stdout; resolves with
// {stopReason, text} once the turn is over and the connection is closed.
export async function promptAgent(command, args, prompt, { cwd = process.cwd(), onText } = {}) {
  const agent = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  let text = '';
  const app = servePmonTerminals(acp.client({ name: 'pmon-example' }))
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === 'agent_message_chunk' && u.content.type === 'text') {
        text += u.content.text;
        onText?.(u.content.text);
      }
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
      outcome: { outcome: 'selected', optionId: params.options[0].optionId },
    }));
  try {
    const stopReason = await app.connectWith(stream, async (ctx) => {
      await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities,
      });
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      const r = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: prompt }],
      });
      return r.stopReason;
    });
    return { stopReason, text };
  } finally {
    agent.stdin.end();
    if (agent.exitCode === null && agent.signalCode === null) await new Promise((r) => agent.once('exit', r));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sep = process.argv.indexOf('--');
  if (sep !== 3 || process.argv.length < 5) {
    process.stderr.write('usage: node examples/acp_client.mjs "PROMPT" -- AGENT [ARGS...]\n');
    process.exit(2);
  }
  const [cmd, ...cmdArgs] = process.argv.slice(sep + 1);
  const { stopReason } = await promptAgent(cmd, cmdArgs, process.argv[2], {
    onText: (t) => process.stdout.write(t),
  });
  process.stdout.write(`\n[${stopReason}]\n`);
  process.exit(0);
}
