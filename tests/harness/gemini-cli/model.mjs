// SPDX-License-Identifier: Apache-2.0
// A scripted stand-in for the Gemini API on 127.0.0.1, for Gemini CLI.
// First turn: a functionCall of TOOL with ARGS (the CLI's own shell tool
// run_shell_command, or an MCP tool). Once the conversation holds the
// tool's functionResponse: plain text, and the turn ends. Every request is
// kept in `requests` ({ method, url, body }) so a test can see what the
// CLI sent and that the tool's result came back.
import { createServer } from 'node:http';

// Whether a request's conversation already carries a tool's result.
function hasToolResult(body) {
  return (body?.contents || []).some((c) => (c.parts || []).some((p) => p.functionResponse));
}

// Whether the request offers the model the tool it is to call.
function offersTool(body, name) {
  return (body?.tools || []).some((t) => (t.functionDeclarations || []).some((f) => f.name === name));
}

function answer(parts) {
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: 'scripted',
  };
}

// startModel({ tool, args, stall }) -> { url, requests, toolResults(), close() }.
// `call` may be changed between runs. With stall, the reply to the turn
// that carries the tool's result never comes: the CLI is still busy when a
// test kills it. With until (an async predicate), that reply waits for it.
export async function startModel(call) {
  const requests = [];
  const state = { call };
  const stalled = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', async () => {
      let body = null;
      try { body = raw ? JSON.parse(raw) : null; } catch { body = raw; }
      requests.push({ method: req.method, url: req.url, body, at: Date.now() });
      if (process.env.MODEL_LOG) console.error('model:', req.method, req.url, raw.slice(0, 4000));
      const url = new URL(req.url, 'http://x');
      if (url.pathname.endsWith(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      let reply;
      if (!/:(stream)?[gG]enerateContent$/.test(url.pathname)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 404, message: 'not here', status: 'NOT_FOUND' } }));
        return;
      } else if (state.call?.stall && hasToolResult(body)) {
        stalled.push(res);  // the model "thinks" until the test ends the run
        return;
      } else if (state.call?.until && hasToolResult(body) && !(await state.call.until())) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 500, message: 'the scripted wait failed', status: 'INTERNAL' } }));
        return;
      } else if (state.call && offersTool(body, state.call.tool) && !hasToolResult(body)) {
        reply = answer([{ functionCall: { name: state.call.tool, args: state.call.args } }]);
      } else {
        reply = answer([{ text: 'Done.' }]);
      }
      if (url.pathname.endsWith(':streamGenerateContent')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(reply)}\r\n\r\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    set call(c) { state.call = c; },
    // The functionResponse parts the CLI sent back, in order.
    toolResults: () => requests.flatMap((r) => (r.body?.contents || [])
      .flatMap((c) => (c.parts || []).filter((p) => p.functionResponse).map((p) => p.functionResponse))),
    close: () => new Promise((resolve) => {
      for (const res of stalled) res.destroy();
      server.closeAllConnections?.();
      server.close(resolve);
    }),
  };
}
