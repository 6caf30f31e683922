// SPDX-License-Identifier: Apache-2.0
// A scripted stand-in for the Anthropic Messages API on 127.0.0.1, enough for
// Claude Code in print mode. For the conversation that offers the tool TOOL,
// the first turn asks for one call of TOOL with INPUT; once the request
// carries the tool's result, the answer is plain text and the turn ends.
// INPUT may be a list: one call a turn, each once the previous one's result
// came back, then the answer.
// Any other request (a title, a quota check, a token count) gets a short
// plain-text answer. Every request is logged: { path, model, tools, kind }.
// With holdAnswer, the final answer waits until release() is called (the
// harness stays in its turn, e.g. while a background command runs).
import { createServer } from 'node:http';

function reply(res, body, stream) {
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const { content, stop_reason, usage, ...message } = body;
  send('message_start', { message: { ...message, content: [], stop_reason: null, usage } });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      send('content_block_delta', {
        index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
      });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: 10 } });
  send('message_stop', {});
  res.end();
}

let ids = 0;
function message(model, content, stop_reason) {
  ids += 1;
  return {
    id: `msg_scripted_${ids}`, type: 'message', role: 'assistant', model, content,
    stop_reason, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 10 },
  };
}

// Tool results in the user messages after the last assistant message of a
// request (a system message may follow them), as text.
function toolResults(body) {
  const msgs = body.messages || [];
  const since = msgs.slice(msgs.findLastIndex((m) => m.role === 'assistant') + 1);
  return since.filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content.filter((b) => b.type === 'tool_result')).map((b) =>
      typeof b.content === 'string' ? b.content
        : (b.content || []).map((c) => c.text ?? '').join(''));
}

// Starts the server; resolves to { port, url, log, results, close }.
// results gets the text of each tool result the harness sent back.
export function startModel({ tool, input, answer = 'Done.', holdAnswer = false }) {
  const calls = [input].flat();
  const log = [];
  const results = [];
  const held = [];
  let released = !holdAnswer;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch {}
      const path = req.url.split('?')[0];
      const entry = { path, model: body.model, tools: (body.tools || []).map((t) => t.name) };
      log.push(entry);
      if (path === '/v1/messages/count_tokens') {
        entry.kind = 'count';
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      if (req.method !== 'POST' || path !== '/v1/messages') {
        entry.kind = 'other';
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not here' } }));
        return;
      }
      const model = body.model || 'scripted';
      const done = toolResults(body);
      results.push(...done);
      const step = (body.messages || []).filter((m) => m.role === 'assistant').length;
      let msg;
      if (entry.tools.includes(tool) && step < calls.length && (step === 0 || done.length > 0)) {
        entry.kind = 'tool_use';
        msg = message(model, [{ type: 'tool_use', id: `toolu_scripted_${ids + 1}`, name: tool, input: calls[step] }], 'tool_use');
      } else if (done.length > 0) {
        entry.kind = 'answer';
        msg = message(model, [{ type: 'text', text: answer }], 'end_turn');
        if (!released) {
          held.push(() => reply(res, msg, body.stream === true));
          return;
        }
      } else {
        entry.kind = 'text';
        msg = message(model, [{ type: 'text', text: 'ok' }], 'end_turn');
      }
      reply(res, msg, body.stream === true);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        port, url: `http://127.0.0.1:${port}`, log, results,
        release: () => { released = true; held.splice(0).forEach((f) => f()); },
        close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
      });
    });
  });
}
