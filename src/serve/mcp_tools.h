// SPDX-License-Identifier: Apache-2.0
// The tools of pmon mcp, one row each: its name, the type of its
// arguments (read by mcp.cpp's read_args overload for it, answered by the
// adapter's overload for it: serve/mcp_adapter.h), and how the model sees
// it (title, description, annotations: whether it only reads, whether
// what it does may destroy something, input and output schemas). tools/list is these
// rows; the arguments a call may pass, and those it must, are its input
// schema's; its structuredContent matches its output schema. Written for a
// model that finds tools by search. Every result is also given as text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "jobs/job_api.h"
#include "serve/table.h"

namespace pmon::serve::mcp {

// run: a shell job, waited for up to its timeout, or until
// background_after (then it goes on as a job).
struct RunArgs {
  CreateParams create;
  std::optional<uint64_t> background_after_ms;
};

// kill: a job by its id, or one of this session's running jobs by its name
// or a TCP port it listens on.
struct KillArgs {
  std::optional<std::string> id;
  FindParams by;
};

template <class A>
struct Tool {
  std::string_view name;
  const char* spec;  // a JSON object: title, description, inputSchema, outputSchema
};

inline constexpr std::tuple kTools{
    Tool<RunArgs>{"run", R"JSON({
      "title": "Run a shell command",
      "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
      "description": "Runs a shell command (sh -c) and waits for it. Returns its output (stdout and stderr as a terminal shows them; head and tail when long), its exit code or signal, and any processes it left running, which are stopped: nothing it started outlives the call. With background_after_s, a command still running after that long goes on as a job: the result then has its id and running: true, for output, wait and kill.",
      "inputSchema": {
        "type": "object",
        "properties": {
          "command": {"type": "string", "description": "a shell command line"},
          "cwd": {"type": "string", "description": "working directory"},
          "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "variables set on top of the environment"},
          "timeout_s": {"type": "number", "minimum": 0, "description": "stop the whole tree after this many seconds (default 120; 0: no timeout)"},
          "idle_timeout_s": {"type": "number", "minimum": 0, "description": "stop the whole tree when it has printed nothing for this many seconds (a hung command)"},
          "background_after_s": {"type": "number", "minimum": 0, "description": "keep a command still running after this many seconds as a job and return"},
          "memory_max": {"type": ["integer", "string"], "description": "most memory the command may use: bytes, or a string with K, M or G (powers of 1024), e.g. \"512M\"; past it the whole command is killed"},
          "memory_high": {"type": ["integer", "string"], "description": "memory past which the command is slowed down and its memory reclaimed rather than killed; below memory_max"},
          "pids_max": {"type": "integer", "minimum": 0, "description": "most processes and threads it may have at once (default 4096; 0: no limit)"},
          "cpu_max": {"type": "number", "minimum": 0.01, "description": "CPU time it may use, in cores (0.5: half of one CPU)"}
        },
        "required": ["command"],
        "additionalProperties": false
      },
      "outputSchema": {
        "type": "object",
        "properties": {
          "running": {"type": "boolean"},
          "id": {"type": "string"},
          "output": {"type": "string"},
          "truncated": {"type": "boolean"},
          "exit_code": {"type": ["integer", "null"]},
          "signal": {"type": ["string", "null"]},
          "timed_out": {"type": "boolean"},
          "idle_timed_out": {"type": "boolean", "description": "stopped for printing nothing for idle_timeout_s (timed_out is then true too)"},
          "leftovers": {"type": "array", "items": {"type": "object", "properties": {"pid": {"type": "integer"}, "command": {"type": "string"}, "action": {"type": "string"}}}},
          "cleanup_verified": {"type": "boolean"},
          "duration_ms": {"type": "number"},
          "oom_killed": {"type": ["boolean", "null"], "description": "killed for going past memory_max (null: no memory_max)"},
          "pids_max_hit": {"type": ["boolean", "null"], "description": "a fork failed at pids_max (null: no pids_max)"},
          "stopped_by": {"type": ["string", "null"], "description": "why pmon stopped it (\"timeout\", \"idle timeout\", \"kill\", \"cancelled\", ...); null: it ended by itself"},
          "left_out": {"type": "integer", "description": "bytes of a long output left out between its first 4 KiB and last 12 KiB"},
          "spool_path": {"type": "string", "description": "a job still running: the file that holds its whole output"},
          "session": {"type": "object", "description": "in a session with an envelope: the envelope (memory_max, memory_high, pids_max, cpu_max), and what the session (usage) and this command (call_usage) used: memory_peak, memory_events (high, max, oom, oom_kill), pids_events_max, memory_pressure_avg10"}
        },
        "required": ["running", "output", "truncated"]
      }
    })JSON"},
    Tool<CreateParams>{"start", R"JSON({
      "title": "Start a background job",
      "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
      "description": "Starts a shell command as a job that runs on (a dev server, a watcher) and returns its id at once. The job and everything it starts are stopped when killed, and when this session ends. With ready_port, ready_http or ready_line it returns once the job is ready (ready after N ms), or says why it is not (it ended first, or ready_timeout_s passed: the job then runs on).",
      "inputSchema": {
        "type": "object",
        "properties": {
          "command": {"type": "string", "description": "a shell command line"},
          "cwd": {"type": "string"},
          "env": {"type": "object", "additionalProperties": {"type": "string"}},
          "pty": {"type": "boolean", "description": "run it on a pseudo-terminal (write sends it input)"},
          "stdin": {"type": "string", "enum": ["null", "pipe"], "description": "null (the default): its stdin is /dev/null, a read gets end of file at once; pipe: write sends it input"},
          "timeout_s": {"type": "number", "minimum": 0, "description": "stop the job and all it started after this many seconds (default, and 0: no timeout; it runs until killed or this session ends)"},
          "idle_timeout_s": {"type": "number", "minimum": 0, "description": "stop the job and all it started when it has printed nothing for this many seconds (a hung build or test run)"},
          "name": {"type": "string", "description": "a label shown by list; while a job of this name runs, start returns it (already_running: true) instead of starting a second"},
          "replace": {"type": "boolean", "description": "with name: stop the running job of that name (and all it started, confirmed gone) and start this one"},
          "memory_max": {"type": ["integer", "string"], "description": "most memory the command may use: bytes, or a string with K, M or G (powers of 1024), e.g. \"512M\"; past it the whole command is killed"},
          "memory_high": {"type": ["integer", "string"], "description": "memory past which the command is slowed down and its memory reclaimed rather than killed; below memory_max"},
          "pids_max": {"type": "integer", "minimum": 0, "description": "most processes and threads it may have at once (default 4096; 0: no limit)"},
          "cpu_max": {"type": "number", "minimum": 0.01, "description": "CPU time it may use, in cores (0.5: half of one CPU)"},
          "ready_port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "return once a process of the job listens on this TCP port"},
          "ready_http": {"type": "string", "description": "return once an HTTP GET of this path (e.g. \"/health\") on 127.0.0.1 answers 2xx: on ready_port, or the first port the job listens on"},
          "ready_line": {"type": "string", "description": "return once a line of the job's output matches this regular expression (RE2 syntax)"},
          "ready_timeout_s": {"type": "number", "minimum": 0, "description": "how long to wait for ready (default 30); the job runs on after it"}
        },
        "required": ["command"],
        "additionalProperties": false
      },
      "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "already_running": {"type": "boolean", "description": "a job of this name was running: this is its id, nothing new was started"},
        "ready": {"type": "boolean", "description": "with a ready_ probe: whether the job became ready"}, "ready_ms": {"type": "integer", "description": "how long after its start it was ready"},
        "ready_error": {"type": "string", "description": "why it is not ready"}}, "required": ["id"]}
    })JSON"},
    Tool<OutputParams>{"output", R"JSON({
      "title": "Read a job's output",
      "annotations": {"readOnlyHint": true, "openWorldHint": false},
      "description": "The output of a job (stdout and stderr as a terminal shows them). By default its first 4 KiB and last 12 KiB, the middle left out (left_out says how many bytes), ANSI escapes and progress redraws removed, lines cut at 2000 bytes. The whole output is kept in a file (spool_path): page through it with offset and length, or find lines with grep (numbered). Pass the returned next as since (or offset) to get only what is new.",
      "inputSchema": {
        "type": "object",
        "properties": {
          "id": {"type": "string"},
          "since": {"type": "integer", "minimum": 0, "description": "start at this byte offset (a next returned before)"},
          "offset": {"type": "integer", "minimum": 0, "description": "start at this byte offset since the job began"},
          "length": {"type": "integer", "minimum": 1, "description": "read this many bytes from offset (a page; at most 64 KiB a call) instead of head and tail"},
          "head": {"type": "integer", "minimum": 0, "description": "bytes from the start to show (default 4096, with tail 12288)"},
          "tail": {"type": "integer", "minimum": 0, "description": "bytes from the end to show"},
          "grep": {"type": "string", "description": "only the lines matching this regular expression (RE2 syntax), each after its line number and a colon; as many as fit in 64 KiB (more: true when more matched)"},
          "strip_ansi": {"type": "boolean", "description": "remove ANSI escapes and carriage-return redraws (default true)"},
          "max_line_bytes": {"type": "integer", "minimum": 1, "description": "cut longer lines here (default 2000)"}
        },
        "required": ["id"],
        "additionalProperties": false
      },
      "outputSchema": {
        "type": "object",
        "properties": {
          "output": {"type": "string"}, "truncated": {"type": "boolean", "description": "bytes asked for are no longer kept (the spool was rotated): it starts at from"},
          "from": {"type": "integer"}, "next": {"type": "integer"},
          "left_out": {"type": "integer", "description": "bytes left out between head and tail"},
          "total": {"type": "integer", "description": "bytes the job has written"},
          "matches": {"type": "integer", "description": "grep: lines that matched"},
          "spool_path": {"type": ["string", "null"], "description": "the file that holds the whole output (null: none is kept, or nothing was written)"},
          "more": {"type": "boolean"}, "running": {"type": "boolean"}, "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]},
          "waiting_for_input": {"type": "boolean", "description": "it runs, blocked reading its stdin: it waits for input, not for time"}
        },
        "required": ["output", "truncated", "next", "running"]
      }
    })JSON"},
    Tool<WaitForExitParams>{"wait", R"JSON({
      "title": "Wait for a job to end",
      "annotations": {"readOnlyHint": true, "openWorldHint": false},
      "description": "Waits for a job to end (up to timeout_s seconds when given) and returns its exit code or signal, or running: true if it still runs (with waiting_for_input: true when it is blocked reading its stdin, which only write or kill ends).",
      "inputSchema": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "timeout_s": {"type": "number", "minimum": 0}},
        "required": ["id"],
        "additionalProperties": false
      },
      "outputSchema": {
        "type": "object",
        "properties": {"running": {"type": "boolean"}, "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]},
                       "waiting_for_input": {"type": "boolean", "description": "it runs, blocked reading its stdin"},
                       "timed_out": {"type": "boolean", "description": "it ended: its timeout or idle timeout stopped it"},
                       "stopped_by": {"type": ["string", "null"], "description": "it ended: why pmon stopped it (\"kill\", \"idle timeout\", \"timeout\", ...); null: it ended by itself"},
                       "oom_killed": {"type": ["boolean", "null"], "description": "it ended: killed for going past memory_max (null: no memory_max)"},
                       "pids_max_hit": {"type": ["boolean", "null"], "description": "it ended: a fork failed at pids_max (null: no pids_max)"},
                       "session": {"type": "object", "description": "it ended, in a session with an envelope: the envelope, and what the session (usage) and the job (call_usage) used"}},
        "required": ["running"]
      }
    })JSON"},
    Tool<WriteParams>{"write", R"JSON({
      "title": "Write to a job's stdin",
      "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
      "description": "Writes data to a job's stdin; eof: true closes it afterwards.",
      "inputSchema": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "data": {"type": "string"}, "eof": {"type": "boolean"}},
        "required": ["id", "data"],
        "additionalProperties": false
      },
      "outputSchema": {"type": "object", "properties": {"written": {"type": "integer"}}, "required": ["written"]}
    })JSON"},
    Tool<KillArgs>{"kill", R"JSON({
      "title": "Kill a job",
      "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
      "description": "Stops a job and every process it started, and confirms they are gone. Its output stays readable. The job is given by its id, or by its name or a TCP port it listens on (only this session's jobs: never another process of the machine).",
      "inputSchema": {"type": "object", "properties": {
        "id": {"type": "string"},
        "name": {"type": "string", "description": "the running job started with this name"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "the running job one of whose processes listens on this TCP port"}
      }, "additionalProperties": false},
      "outputSchema": {"type": "object", "properties": {"cleanup_verified": {"type": "boolean"}}, "required": ["cleanup_verified"]}
    })JSON"},
    Tool<ListParams>{"list", R"JSON({
      "title": "List jobs",
      "annotations": {"readOnlyHint": true, "openWorldHint": false},
      "description": "Every job of this session: its status (and whether it waits for input on its stdin) and the TCP ports its processes listen on.",
      "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
      "outputSchema": {
        "type": "object",
        "properties": {
          "jobs": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "name": {"type": ["string", "null"]}, "command": {"type": "string"},
            "status": {"type": "string"}, "pid": {"type": "integer"}, "ports": {"type": "array", "items": {"type": "integer"}},
            "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]},
            "waiting_for_input": {"type": "boolean"},
            "timed_out": {"type": "boolean", "description": "its timeout or idle timeout stopped it (once over)"},
            "stopped_by": {"type": ["string", "null"], "description": "why pmon stopped it, once its stop has begun (\"kill\", \"idle timeout\", ...); null: not stopped"},
            "oom_killed": {"type": ["boolean", "null"], "description": "killed for going past memory_max (null: no memory_max, or not over)"},
            "pids_max_hit": {"type": ["boolean", "null"], "description": "a fork failed at pids_max (null: no pids_max, or not over)"},
            "memory_peak": {"type": ["integer", "null"], "description": "in a session: the most memory the job has used"},
            "oom_kill": {"type": ["integer", "null"], "description": "in a session: processes of the job the kernel killed for memory"}}}},
          "session": {"type": "object", "description": "in a session with an envelope: the envelope and what the session has used (memory_current, memory_peak, memory_events, pids_current, pids_events_max, memory and cpu pressure)"}
        },
        "required": ["jobs"]
      }
    })JSON"},
    Tool<WaitForPortParams>{"wait_for_port", R"JSON({
      "title": "Wait until a job listens",
      "annotations": {"readOnlyHint": true, "openWorldHint": false},
      "description": "Waits until a process of the job listens on a TCP port (the given one, or any) and returns it; fails after timeout_s (default 30) or when the job ends first.",
      "inputSchema": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}, "timeout_s": {"type": "number", "minimum": 0}},
        "required": ["id"],
        "additionalProperties": false
      },
      "outputSchema": {
        "type": "object",
        "properties": {"port": {"type": "integer"}, "address": {"type": "string"}, "pid": {"type": "integer"}},
        "required": ["port", "address", "pid"]
      }
    })JSON"},
};

// Every tool's arguments, one type a tool.
using ToolArgs = variant_of<decltype(kTools)>;

}  // namespace pmon::serve::mcp
