// SPDX-License-Identifier: Apache-2.0
// Types of the pmon Node package (index.mjs).

export interface CommonOptions {
  /** Working directory of the command. */
  cwd?: string | URL;
  /** The whole environment of the command (as child_process: not merged with process.env). */
  env?: Record<string, string | undefined>;
  /** Run the command through a shell: true for /bin/sh, or the shell's path. */
  shell?: boolean | string;
  /** Milliseconds after which the whole tree is stopped (timedOut: true). */
  timeout?: number;
  /**
   * Milliseconds without output after which the whole tree is stopped (a hung command;
   * timedOut and idleTimedOut: true). Time its writes wait for a reader does not count.
   */
  idleTimeout?: number;
  /** The first signal of a stop (default SIGTERM); SIGKILL follows after the service's grace. */
  killSignal?: NodeJS.Signals | number;
  /** A label shown in list(). */
  name?: string;
  /**
   * Written to the command's stdin, which is then closed. Without it the command's stdin is
   * /dev/null: a read gets end of file at once.
   */
  input?: string | Buffer | Uint8Array;
  /**
   * Most memory the call may use (its cgroup's memory.max): bytes, or a string with K, M or G
   * (powers of 1024), e.g. "512M". Past it the whole call is killed (report.oom_killed).
   */
  memoryMax?: number | string;
  /** Memory past which the call is slowed down and reclaimed (memory.high), not killed; below memoryMax. */
  memoryHigh?: number | string;
  /** Most processes and threads the call may have at once (pids.max; report.pids_max_hit). */
  pidsMax?: number;
  /** CPU time the call may use, in cores (cpu.max): 0.5 is half of one CPU. */
  cpuMax?: number;
}

export interface RunOptions extends CommonOptions {
  /** Aborting stops the whole tree; run() then rejects with an AbortError. */
  signal?: AbortSignal;
  /** Bytes of stdout and of stderr kept (the newest; `truncated` says so). Default 1 MiB. */
  maxBuffer?: number;
  /** 'utf8' (default) for strings, 'buffer' or null for Buffers, or another Buffer encoding. */
  encoding?: BufferEncoding | 'buffer' | null;
  /** Reject like child_process.execFile on a non-zero exit, a signal or a timeout. */
  reject?: boolean;
}

export interface Leftover {
  pid: number;
  action?: string;
  [key: string]: unknown;
}

/** The JSON report of the call (the same fields as `pmon run --report`). */
export interface Report {
  version: number;
  command: string[];
  pid: number;
  confinement: string;
  outcome: string;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  leftovers: Leftover[];
  cleanup_verified: boolean;
  duration_ms: number;
  memory_peak_bytes: number | null;
  /** What was set: null for each limit not asked for. */
  limits: { memory_max: number | null; pids_max: number | null; cpu_max: number | null };
  /** Known where memoryMax was set: the kernel killed the call for memory. */
  oom_killed: boolean | null;
  /** Known where pidsMax was set: a fork failed at the limit. */
  pids_max_hit: boolean | null;
  [key: string]: unknown;
}

export interface RunResult<T = string> {
  command: string;
  pid: number;
  /** The exit code, or null when it died by a signal. */
  exitCode: number | null;
  /** The signal that ended it ("SIGTERM"), or null. */
  signal: string | null;
  stdout: T;
  stderr: T;
  /** Output beyond maxBuffer was dropped (the newest bytes are kept). */
  truncated: boolean;
  timedOut: boolean;
  /** It was stopped for printing nothing for idleTimeout ms (timedOut is then true too). */
  idleTimedOut: boolean;
  /** Why pmon stopped it (the report's job.stoppedBy: "timeout", "idle timeout", ...); null: it ended by itself. */
  stoppedBy: string | null;
  /** Processes still in the call's boundary when its main process ended, and what was done to them. */
  leftovers: Leftover[];
  /** Nothing of the call is still alive. */
  cleanupVerified: boolean;
  report: Report;
}

/** What run() rejects with when `reject: true` (execFile's error shape). */
export interface RunError<T = string> extends Error, RunResult<T> {
  code: number | null;
  killed: boolean;
  cmd: string;
}

export function run(file: string, args?: readonly string[], options?: RunOptions & { encoding: 'buffer' | null }): Promise<RunResult<Buffer>>;
export function run(file: string, options?: RunOptions & { encoding: 'buffer' | null }): Promise<RunResult<Buffer>>;
export function run(file: string, args?: readonly string[], options?: RunOptions): Promise<RunResult<string>>;
export function run(file: string, options?: RunOptions): Promise<RunResult<string>>;

export interface StartOptions extends CommonOptions {
  /**
   * The job's stdin: 'null' (the default: /dev/null, a read gets end of file at once) or 'pipe'
   * (write() and end() send it input). `input` implies 'pipe'.
   */
  stdin?: 'pipe' | 'null';
  /** Run it on a pseudo-terminal of its own (true: 24 rows, 80 columns); write() types into it. */
  pty?: boolean | { rows?: number; cols?: number };
  /** Keep stderr apart from stdout (output() then has `stderr`). */
  separateStderr?: boolean;
  /** Bytes of output kept (the newest). Default 1 MiB. */
  outputByteLimit?: number;
  /**
   * With `name`: stop the running job of that name (its whole tree, verified gone) and start
   * this one. Without it, start() of a name that runs returns that job (`existing: true`).
   */
  replace?: boolean;
  /**
   * Resolve once the job is ready: a process of it listens on `port`; an HTTP GET of `http`
   * (a path) on 127.0.0.1 answers 2xx (on `port`, or the first port the job listens on); or a
   * line of its output matches `line` (RE2 syntax; a RegExp is sent as its source). Exactly
   * one of them, or `port` with `http`. When the job ends first or `timeoutMs` (default 30000)
   * passes, start() still resolves, with `ready: false` and `readyError`; the job then runs on
   * unless `stopOnTimeout`.
   */
  ready?: { port?: number; http?: string; line?: string | RegExp; timeoutMs?: number; stopOnTimeout?: boolean };
}

export interface ExitStatus {
  exitCode: number | null;
  signal: string | null;
}

/**
 * Why a job ended, beside its exit status (the same facts as its report's timed_out,
 * job.stoppedBy, oom_killed and pids_max_hit).
 */
export interface EndFacts {
  /** Its timeout or idle timeout stopped it. */
  timedOut: boolean;
  /**
   * Why pmon stopped it: "kill", "release", "timeout", "idle timeout", "replaced", "not ready",
   * "owner call ended", "connection closed", "session closed", "service stopped"...; null: it
   * ended by itself.
   */
  stoppedBy: string | null;
  /** Killed for going past memoryMax (null: no memoryMax). */
  oomKilled: boolean | null;
  /** A fork failed at pidsMax (null: no pidsMax). */
  pidsMaxHit: boolean | null;
}

/** What wait() resolves with: how the job ended and why, or that it still runs. */
export type WaitResult =
  | (ExitStatus & EndFacts & { running?: undefined })
  | { exitCode: null; signal: null; running: true; /** Blocked reading its stdin: it waits for input, not for time. */ waitingForInput: boolean };

export interface OutputChunk {
  output: string;
  truncated: boolean;
  /** The offset to pass as `since` to get only what is new. */
  next: number;
  /** More is kept past `next` already (a reply carries at most maxBytes): read on. */
  more: boolean;
  /** null while the job runs. */
  exitStatus: ExitStatus | null;
  /** While the job runs: a process of it is blocked reading its stdin (it waits for input, not for time). */
  waitingForInput?: boolean;
  stderr?: { output: string; truncated: boolean; next: number; more: boolean };
}

export interface ListeningPort {
  port: number;
  address: string;
  v6: boolean;
  pid: number;
}

export interface JobInfo {
  terminalId: string;
  name: string | null;
  command: string[];
  pid: number;
  status: 'running' | 'stopping' | 'exited';
  started: string;
  ports: ListeningPort[];
  /** A process of it is blocked reading its stdin (its pipe or pty). */
  waitingForInput: boolean;
  exitStatus: ExitStatus | null;
  /** Once over: its timeout or idle timeout stopped it. */
  timedOut: boolean;
  /** Why pmon stopped it, from the moment its stop begins (see EndFacts); null: not stopped. */
  stoppedBy: string | null;
  /** Once over, with memoryMax: killed for going past it; else null. */
  oomKilled: boolean | null;
  /** Once over, with pidsMax: a fork failed at it; else null. */
  pidsMaxHit: boolean | null;
  [key: string]: unknown;
}

export interface Job extends AsyncIterable<string>, NodeJS.EventEmitter {
  readonly id: string;
  /**
   * 'exit' is emitted once the job has ended, with how, whether its whole tree is confirmed
   * gone, and why it ended (timedOut, stoppedBy, oomKilled, pidsMaxHit); a listener keeps Node
   * alive until then, as a child process's does.
   */
  on(event: 'exit', listener: (exitCode: number | null, signal: string | null, cleanupVerified: boolean, end: EndFacts) => void): this;
  once(event: 'exit', listener: (exitCode: number | null, signal: string | null, cleanupVerified: boolean, end: EndFacts) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  /** start() found a running job of the same name and returned it; nothing new was started. */
  readonly existing?: boolean;
  /** Started with `ready`: whether it became ready (a running job of the name: when known). */
  readonly ready?: boolean;
  /** How long after its start it was ready, in ms. */
  readonly readyMs?: number;
  /** Why it is not ready, in one line (it ended first, or the time ran out). */
  readonly readyError?: string;
  /**
   * New output from `since`; or, with head, tail, offset/length, grep, stripAnsi or maxLineBytes,
   * a view of the whole output as the service's spool file keeps it.
   */
  output(options?: {
    since?: number; stderrSince?: number; waitMs?: number;
    head?: number; tail?: number; offset?: number; length?: number; grep?: string;
    stripAnsi?: boolean; maxLineBytes?: number;
  }): Promise<OutputChunk & { from?: number; leftOut?: number; total?: number; matches?: number; spoolPath?: string | null }>;
  wait(options?: { timeout?: number }): Promise<WaitResult>;
  write(data: string | Buffer, options?: { eof?: boolean }): Promise<{}>;
  end(data?: string | Buffer): Promise<{}>;
  kill(): Promise<{ cleanupVerified: boolean }>;
  release(): Promise<{ cleanupVerified: boolean }>;
  report(): Promise<Report>;
  info(): Promise<JobInfo | null>;
  ports(): Promise<ListeningPort[]>;
  waitForPort(options?: { port?: number; timeout?: number }): Promise<ListeningPort>;
}

export function start(file: string, args?: readonly string[], options?: StartOptions): Promise<Job>;
export function start(file: string, options?: StartOptions): Promise<Job>;

/** One of this process's running jobs, by its name or a TCP port it listens on; rejects when none is. */
export function find(options: { name?: string; port?: number }): Promise<Job>;

/** Every job of this process. */
export function list(): Promise<JobInfo[]>;

/** Stops the service and every job still running; a later call starts a new service. */
export function close(): Promise<void>;

/** Where the pmon program is taken from: PMON, next to the package, or PATH. */
export function findPmon(): string;

/** The pid of this process's pmon service, once started. */
export function servicePid(): number | null;

/** One request to this process's pmon service by its JSON-RPC method name (terminal/create, ...). */
export function request(method: string, params: Record<string, unknown>): Promise<any>;
