// SPDX-License-Identifier: Apache-2.0
// Used by npm_package.sh: the official MCP SDK client starts the MCP server
// the way a client's configuration would, `npx pmon-runtime mcp` in the
// directory the packages were installed into; lists the tools, runs a call
// that leaves a setsid daemon, and checks that the daemon is gone.
// argv: the scratch directory (for the daemon's pid file).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readFileSync } from 'node:fs';

const dir = process.argv[2];
const fail = (m) => { console.error(`FAIL: npx pmon-runtime mcp: ${m}`); process.exit(1); };
const transport = new StdioClientTransport({
  command: 'npx', args: ['--offline', '--no-install', 'pmon-runtime', 'mcp'], cwd: process.cwd(), stderr: 'inherit',
});
const client = new Client({ name: 'pmon-npm-test', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === 'run')) fail(`no run tool among ${tools.map((t) => t.name)}`);
const r = await client.callTool({
  name: 'run',
  arguments: { command: `setsid sh -c 'echo $$ > ${dir}/daemon; exec sleep 1000' & while [ ! -s ${dir}/daemon ]; do sleep 0.01; done; echo from-npx; exit 3` },
});
const s = r.structuredContent;
if (!s || s.exit_code !== 3 || !s.output.includes('from-npx')) fail(`run returned ${JSON.stringify(r)}`);
if (!s.cleanup_verified || s.leftovers.length < 1) fail(`the daemon was not reported stopped: ${JSON.stringify(s)}`);
const pid = Number(readFileSync(`${dir}/daemon`, 'utf8'));
let stat = null;
try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { /* gone */ }
if (stat && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') fail(`the daemon ${pid} is still running`);
await client.close();
console.log(`ok: npx pmon-runtime mcp: ${tools.length} tools; run exit 3, its setsid daemon stopped (${s.leftovers.length} leftover)`);
