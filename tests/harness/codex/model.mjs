// SPDX-License-Identifier: Apache-2.0
// A scripted stand-in for the model API Codex talks to (the Responses API:
// POST /v1/responses, streamed as server-sent events), on 127.0.0.1.
//
// Its first answer is one function call: the tool `call` returns for the
// request ({name, namespace?, args}; the tools Codex offers are in
// request.tools, an MCP server's under a namespace of their own);
// once a request carries that call's output, it answers in plain text and
// the turn ends, once `beforeAnswer` (when given) has resolved: a model
// still thinking while the job it started runs. Every request is kept
// (requests), and so is the call's output as Codex reported it (toolOutputs).
import { createServer } from 'node:http';

export async function startModel(call, beforeAnswer = async () => {}) {
  const requests = [];
  const toolOutputs = [];
  let calls = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', async () => {
      let json = null;
      try { json = JSON.parse(body); } catch {}
      requests.push({ method: req.method, url: req.url, body: json });
      if (req.method !== 'POST' || !req.url.endsWith('/responses') || !json) {
        res.writeHead(404).end();
        return;
      }
      const outputs = (json.input || []).filter((i) => i.type === 'function_call_output');
      for (const o of outputs.slice(toolOutputs.length)) toolOutputs.push(o.output);
      if (outputs.length > 0) await beforeAnswer();
      if (res.destroyed) return; // Codex went away while the model thought
      const id = `resp_${requests.length}`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (ev) => res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`);
      send({ type: 'response.created', response: { id } });
      let item;
      if (outputs.length === 0) {
        const { name, namespace, args } = call(json);
        calls++;
        item = {
          type: 'function_call', id: `fc_${calls}`, call_id: `call_${calls}`,
          name, ...(namespace ? { namespace } : {}), arguments: JSON.stringify(args),
        };
      } else {
        item = {
          type: 'message', id: `msg_${requests.length}`, role: 'assistant', status: 'completed',
          content: [{ type: 'output_text', text: 'The command ran.', annotations: [] }],
        };
      }
      send({ type: 'response.output_item.done', output_index: 0, item });
      send({
        type: 'response.completed',
        response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
      });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    requests,
    toolOutputs,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
