// SPDX-License-Identifier: Apache-2.0
// pmon for Node: run commands so that nothing they start outlives them.
//
// Every call goes to one `pmon serve --stdio` child of this Node process,
// started on first use. The service owns the jobs; when this process exits
// or dies (its end of the pipe closes, and --die-with-parent covers a
// SIGKILL), the service stops every job's whole tree and verifies it gone.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

// The package that carries pmon for this platform, an optionalDependency of
// this one that npm installs only where its os and cpu match.
const platformPackages = {
  'linux-x64': '@pmon-runtime/linux-x64',
  'linux-arm64': '@pmon-runtime/linux-arm64',
};

// PMON when set; else the binary of this platform's package; else one beside
// the package (bin/, or the build tree of a source checkout); else PATH.
export function findPmon() {
  if (process.env.PMON) return process.env.PMON;
  const platform = `${process.platform}-${process.arch}`;
  const pkg = platformPackages[platform];
  if (pkg) {
    try {
      const dir = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
      if (existsSync(join(dir, 'bin', 'pmon'))) return join(dir, 'bin', 'pmon');
    } catch {
      // Not installed (a source checkout, or npm left it out): look on.
    }
  }
  for (const p of [join(here, 'bin', 'pmon'), join(here, '..', 'build', 'pmon')])
    if (existsSync(p)) return p;
  for (const d of (process.env.PATH || '').split(delimiter))
    if (d && existsSync(join(d, 'pmon'))) return join(d, 'pmon');
  const why = pkg ? `${pkg} is not installed` : `pmon has no package for ${platform}`;
  throw new Error(`pmon: the pmon program was not found (${why}; set PMON, or put pmon on PATH)`);
}

// One connection to the service: requests by id, replies by id, the
// terminal/exited notifications kept by terminal id until they are asked for.
class Service {
  constructor() {
    this.nextId = 1;
    this.pending = new Map();     // request id -> {resolve, reject}
    this.exited = new Map();      // terminal id -> notification params
    this.exitWaiters = new Map(); // terminal id -> [resolve]
    this.buf = '';
    this.dead = null;
    this.child = spawn(findPmon(), ['serve', '--stdio', '--die-with-parent', '-q'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.on('error', (e) => this.fail(new Error(`pmon: cannot start pmon serve: ${e.message}`)));
    this.child.on('exit', (code, sig) =>
      this.fail(new Error(`pmon: the service ended (${sig ? 'signal ' + sig : 'exit ' + code})`)));
    this.child.stdin.on('error', () => {});
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => this.onData(d));
    // The service must not keep this process alive: it is referenced only
    // while a request is outstanding.
    this.refs = 0;
    this.unref();
  }

  ref() {
    if (this.refs++ === 0) {
      this.child.ref();
      this.child.stdout.ref?.();
      this.child.stdin.ref?.();
    }
  }

  unref() {
    this.child.unref();
    this.child.stdout.unref?.();
    this.child.stdin.unref?.();
  }

  release() {
    if (--this.refs === 0) this.unref();
  }

  fail(err) {
    if (this.dead) return;
    this.dead = err;
    if (service === this) service = null;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const list of this.exitWaiters.values()) for (const w of list) w.reject(err);
    this.exitWaiters.clear();
    this.unref();
  }

  onData(d) {
    this.buf += d;
    let nl;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (!line) continue;
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        continue;
      }
      if (m.method === 'terminal/exited') {
        const id = m.params.terminalId;
        const waiters = this.exitWaiters.get(id);
        if (waiters) {
          this.exitWaiters.delete(id);
          for (const w of waiters) w.resolve(m.params);
        } else {
          this.exited.set(id, m.params);
        }
        continue;
      }
      const p = this.pending.get(m.id);
      if (!p) continue;
      this.pending.delete(m.id);
      this.release();
      if (m.error) {
        const e = new Error(`pmon: ${m.error.message}`);
        e.rpcCode = m.error.code;
        p.reject(e);
      } else {
        p.resolve(m.result);
      }
    }
  }

  request(method, params) {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ref();
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  // A request whose reply is not wanted (JSON-RPC notification).
  notify(method, params) {
    if (this.dead) return;
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }

  // Resolves with the terminal/exited params of a job once it has ended.
  whenExited(terminalId) {
    const n = this.exited.get(terminalId);
    if (n) return Promise.resolve(n);
    if (this.dead) return Promise.reject(this.dead);
    return new Promise((resolve, reject) => {
      const list = this.exitWaiters.get(terminalId) || [];
      this.ref();
      list.push({
        resolve: (v) => {
          this.release();
          resolve(v);
        },
        reject,
      });
      this.exitWaiters.set(terminalId, list);
    });
  }

  forget(terminalId) {
    this.exited.delete(terminalId);
  }
}

let service = null;
function getService() {
  if (!service) service = new Service();
  return service;
}

// Shuts the service down: every job still running is stopped and verified
// gone. The next call starts a new one.
export async function close() {
  const s = service;
  if (!s) return;
  service = null;
  s.ref();
  const done = new Promise((resolve) => s.child.once('exit', resolve));
  s.child.stdin.end();
  await done;
}

function commandOf(file, args, options) {
  if (!options.shell) return { command: file, args: args.map(String) };
  const sh = typeof options.shell === 'string' ? options.shell : '/bin/sh';
  return { command: sh, args: ['-c', [file, ...args].join(' ')] };
}

function createParams(file, args, options, extra) {
  const { command, args: argv } = commandOf(file, args, options);
  const p = { command, args: argv, ...extra };
  if (options.cwd !== undefined) p.cwd = String(options.cwd instanceof URL ? fileURLToPath(options.cwd) : options.cwd);
  if (options.env) {
    p.env = Object.entries(options.env)
      .filter(([, v]) => v !== undefined)
      .map(([name, value]) => ({ name, value: String(value) }));
    p.clearEnv = true;
  }
  if (options.timeout > 0) p.timeoutMs = Math.round(options.timeout);
  if (options.idleTimeout > 0) p.idleTimeoutMs = Math.max(1, Math.round(options.idleTimeout));
  if (options.killSignal !== undefined) p.killSignal = options.killSignal;
  if (options.name) p.name = options.name;
  // Limits of the call's cgroup leaf; the service checks them and fails
  // closed (the request rejects) where the leaf cannot get the controller.
  if (options.memoryMax !== undefined) p.memoryMax = options.memoryMax;
  if (options.memoryHigh !== undefined) p.memoryHigh = options.memoryHigh;
  if (options.pidsMax !== undefined) p.pidsMax = options.pidsMax;
  if (options.cpuMax !== undefined) p.cpuMax = options.cpuMax;
  return p;
}

function decode(text, encoding) {
  if (encoding === 'buffer' || encoding === null) return Buffer.from(text, 'utf8');
  if (!encoding || encoding === 'utf8' || encoding === 'utf-8') return text;
  return Buffer.from(text, 'utf8').toString(encoding);
}

function parseArgs(args, options) {
  if (!Array.isArray(args)) return [[], args || {}];
  return [args, options || {}];
}

function abortError(signal) {
  const e = new Error('The operation was aborted', { cause: signal?.reason });
  e.name = 'AbortError';
  e.code = 'ABORT_ERR';
  return e;
}

// run(file, args?, options?): runs file to its end, its whole tree stopped
// after it; resolves with what it wrote and how it ended.
export async function run(file, args, options) {
  [args, options] = parseArgs(args, options);
  const signal = options.signal;
  if (signal?.aborted) throw abortError(signal);
  const s = getService();
  const maxBuffer = options.maxBuffer ?? 1024 * 1024;
  const input = options.input;
  // Without input its stdin is /dev/null: a read gets end of file at once.
  const params = createParams(file, args, options, {
    separateStderr: true,
    outputByteLimit: Math.max(1, Math.min(maxBuffer, 1 << 30)),
    stdin: input === undefined ? 'null' : 'pipe',
  });
  const { terminalId } = await s.request('terminal/create', params);
  if (input !== undefined) {
    s.notify('terminal/write', {
      terminalId,
      data: Buffer.isBuffer(input) || input instanceof Uint8Array ? Buffer.from(input).toString('utf8') : String(input),
      eof: true,
    });
  }
  let aborted = false;
  const onAbort = () => {
    aborted = true;
    s.request('terminal/kill', { terminalId }).catch(() => {});
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  // An abort while the create was on its way had no job to stop yet.
  if (signal?.aborted) onAbort();
  let exited;
  try {
    exited = await s.whenExited(terminalId);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  // Output, report and release in one write, when one reply holds all the
  // output there can be (the service's default bound, 4 MiB a stream);
  // else the output is read on first.
  const oneReply = params.outputByteLimit <= 4 * 1024 * 1024;
  const [out, report] = await Promise.all([
    oneReply ? s.request('terminal/output', { terminalId }) : readAll(s, terminalId),
    s.request('terminal/report', { terminalId }),
    ...(oneReply ? [s.request('terminal/release', { terminalId })] : []),
  ]);
  if (!oneReply) await s.request('terminal/release', { terminalId });
  s.forget(terminalId);
  const encoding = options.encoding;
  const result = {
    command: [params.command, ...params.args].join(' '),
    pid: report.pid,
    exitCode: exited.exitStatus.exitCode,
    signal: exited.exitStatus.signal,
    stdout: decode(out.output, encoding),
    stderr: decode(out.stderr.output, encoding),
    truncated: out.truncated || out.stderr.truncated,
    timedOut: report.timed_out === true,
    idleTimedOut: report.stop?.reason === 'idle_timeout',
    stoppedBy: report.job?.stoppedBy ?? null,
    leftovers: report.leftovers || [],
    cleanupVerified: report.cleanup_verified === true,
    report,
  };
  if (aborted) throw Object.assign(abortError(signal), result);
  if (options.reject && (result.exitCode !== 0 || result.timedOut)) {
    const cmd = result.command;
    const e = new Error(`Command failed: ${cmd}\n${typeof result.stderr === 'string' ? result.stderr : result.stderr.toString()}`);
    Object.assign(e, result, {
      code: result.exitCode,
      killed: result.timedOut,
      cmd,
    });
    throw e;
  }
  return result;
}

// All that is kept of a job's output (stdout, and stderr apart): a reply
// carries a bounded part of it, `more` says to read on from `next`.
async function readAll(s, terminalId) {
  const p = { terminalId };
  let r = await s.request('terminal/output', p);
  const all = { output: r.output, truncated: r.truncated, stderr: r.stderr };
  while (r.more || r.stderr?.more) {
    p.since = r.next;
    if (r.stderr) p.stderrSince = r.stderr.next;
    r = await s.request('terminal/output', p);
    all.output += r.output;
    if (r.stderr) all.stderr = { ...r.stderr, output: all.stderr.output + r.stderr.output, truncated: all.stderr.truncated };
  }
  return all;
}

// Why a job ended, from its terminal/exited notification: {timedOut,
// stoppedBy (null: it ended by itself), oomKilled, pidsMaxHit (null: no
// such limit)}.
function endOf(n) {
  return {
    timedOut: n.timedOut === true,
    stoppedBy: n.stoppedBy ?? null,
    oomKilled: n.oomKilled ?? null,
    pidsMaxHit: n.pidsMaxHit ?? null,
  };
}

// A job started with start(): a call that runs on until it ends, is
// killed, or this process ends. It emits 'exit' (exitCode, signal,
// cleanupVerified, and why it ended: {timedOut, stoppedBy, oomKilled,
// pidsMaxHit}) when it ends, once somebody listens: a listener keeps Node
// alive until then, as a child process's does.
class Job extends EventEmitter {
  constructor(s, id, separateStderr) {
    super();
    this.service = s;
    this.id = id;
    this.separateStderr = separateStderr;
    this.watching = false;
    this.on('newListener', (event) => {
      if (event !== 'exit' || this.watching) return;
      this.watching = true;
      this.service.whenExited(this.id).then(
        (n) => this.emit('exit', n.exitStatus.exitCode, n.exitStatus.signal, n.cleanupVerified === true, endOf(n)),
        (e) => { if (this.listenerCount('error') > 0) this.emit('error', e); });
    });
  }

  // {output, next, truncated, exitStatus} from `since` (a byte offset;
  // `next` is the one to ask from next time), and while the job runs
  // waitingForInput (it is blocked reading its stdin). waitMs waits for new
  // output.
  // head, tail, offset, length, grep, stripAnsi, maxLineBytes read the
  // whole output from the service's spool file instead (the reply then has
  // from, leftOut, total, matches and spoolPath).
  output({ since, stderrSince, waitMs, head, tail, offset, length, grep, stripAnsi, maxLineBytes } = {}) {
    const p = { terminalId: this.id };
    if (since !== undefined) p.since = since;
    if (stderrSince !== undefined) p.stderrSince = stderrSince;
    if (waitMs !== undefined) p.waitMs = waitMs;
    const view = { head, tail, offset, length, grep, stripAnsi, maxLineBytes };
    for (const [k, v] of Object.entries(view)) if (v !== undefined) p[k] = v;
    return this.service.request('terminal/output', p);
  }

  // {exitCode, signal, timedOut, stoppedBy, oomKilled, pidsMaxHit}; with a
  // timeout (ms) and the job still running, {exitCode: null, signal: null,
  // running: true, waitingForInput}.
  wait({ timeout } = {}) {
    const p = { terminalId: this.id };
    if (timeout !== undefined) p.timeoutMs = Math.round(timeout);
    return this.service.request('terminal/wait_for_exit', p);
  }

  write(data, { eof = false } = {}) {
    return this.service.request('terminal/write', {
      terminalId: this.id,
      data: Buffer.isBuffer(data) ? data.toString('utf8') : String(data),
      eof,
    });
  }

  end(data = '') {
    return this.write(data, { eof: true });
  }

  // Stops the whole tree; resolves once it is gone ({cleanupVerified}).
  kill() {
    return this.service.request('terminal/kill', { terminalId: this.id });
  }

  // Kills it if it runs, then forgets it (its output and report go too).
  async release() {
    const r = await this.service.request('terminal/release', { terminalId: this.id });
    this.service.forget(this.id);
    return r;
  }

  // The report of an ended job (the same fields as pmon run --report).
  report() {
    return this.service.request('terminal/report', { terminalId: this.id });
  }

  async info() {
    const { terminals } = await this.service.request('terminal/list', {});
    return terminals.find((t) => t.terminalId === this.id) ?? null;
  }

  // The TCP ports its processes listen on: [{port, address, v6, pid}].
  async ports() {
    return (await this.info())?.ports ?? [];
  }

  // Resolves with {port, address, v6, pid} once any process of the job
  // listens on `port` (any port when not given); rejects after `timeout` ms
  // or when the job ends first.
  waitForPort({ port, timeout = 30000 } = {}) {
    const p = { terminalId: this.id, timeoutMs: Math.round(timeout) };
    if (port !== undefined) p.port = port;
    return this.service.request('terminal/wait_for_port', p);
  }

  // Every piece of output as it comes, until the job has ended.
  async *[Symbol.asyncIterator]() {
    let since = 0;
    for (;;) {
      const r = await this.output({ since, waitMs: 60000 });
      if (r.output) yield r.output;
      since = r.next;
      if (r.exitStatus && !r.output) return;
    }
  }
}

// The ready option as terminal/create's: {port?, http?, line?, timeoutMs?,
// stopOnTimeout?}; a RegExp line goes as its source.
function readyParams(ready) {
  const p = {};
  if (ready.port !== undefined) p.port = ready.port;
  if (ready.http !== undefined) p.http = ready.http;
  if (ready.line !== undefined) p.line = ready.line instanceof RegExp ? ready.line.source : String(ready.line);
  if (ready.timeoutMs !== undefined) p.timeoutMs = Math.max(1, Math.round(ready.timeoutMs));
  if (ready.stopOnTimeout !== undefined) p.stopOnTimeout = !!ready.stopOnTimeout;
  return p;
}

// start(file, args?, options?): starts file as a job and returns its handle
// once it runs; with options.ready, once it is ready or cannot be
// (job.ready true, job.readyMs; or job.ready false and job.readyError: the
// job ended first, or was not ready within ready.timeoutMs and runs on).
export async function start(file, args, options) {
  [args, options] = parseArgs(args, options);
  const s = getService();
  const extra = {};
  // Its stdin: /dev/null unless stdin 'pipe' (input implies it), or a pty.
  if (options.pty) {
    const size = options.pty === true ? {} : options.pty;
    extra.pty = { rows: size.rows ?? 24, cols: size.cols ?? 80 };
  } else {
    const stdin = options.stdin ?? (options.input !== undefined ? 'pipe' : 'null');
    if (stdin !== 'pipe' && stdin !== 'null') throw new TypeError(`pmon: stdin must be 'pipe' or 'null', not ${stdin}`);
    if (stdin === 'null' && options.input !== undefined)
      throw new TypeError("pmon: input is written to the job's stdin: give stdin 'pipe' (or leave it out) with it");
    extra.stdin = stdin;
  }
  if (options.separateStderr) extra.separateStderr = true;
  if (options.outputByteLimit) extra.outputByteLimit = options.outputByteLimit;
  if (options.replace) extra.replace = true;
  if (options.ready) extra.ready = readyParams(options.ready);
  const r = await s.request('terminal/create', createParams(file, args, options, extra));
  const { terminalId, existing } = r;
  const job = new Job(s, terminalId, !!options.separateStderr);
  // A job of that name was running: it is returned, nothing new started.
  job.existing = existing === true;
  if (r.ready !== undefined) {
    job.ready = r.ready;
    if (r.readyMs !== undefined) job.readyMs = r.readyMs;
    if (r.readyError !== undefined) job.readyError = r.readyError;
  }
  if (options.input !== undefined && !job.existing) await job.end(options.input);
  return job;
}

// find({name, port}): one of this process's running jobs, by its name or a
// TCP port one of its processes listens on; rejects when none is.
export async function find({ name, port } = {}) {
  const s = getService();
  const p = {};
  if (name !== undefined) p.name = name;
  if (port !== undefined) p.port = port;
  const { terminalId } = await s.request('terminal/find', p);
  return new Job(s, terminalId, false);
}

// Every job of this process: terminal/list's entries.
export async function list() {
  return (await getService().request('terminal/list', {})).terminals;
}

// One request to this process's pmon service, by its JSON-RPC method name
// (terminal/create, terminal/output, ...): for front ends such as ./acp.mjs.
export function request(method, params) {
  return getService().request(method, params);
}

// The pid of the service, once started (for tests and diagnostics).
export function servicePid() {
  return service?.child.pid ?? null;
}
