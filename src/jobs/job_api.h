// SPDX-License-Identifier: Apache-2.0
// What the job service is asked and what it answers, as types: both front
// ends (JSON-RPC's terminal/* methods, MCP's tools) read their requests
// into these, call the job table (jobs/job_table.h) with them, and word
// its typed results and errors each in its own terms.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/error.h"
#include "confine/limits.h"
#include "confine/session.h"
#include "core/end_words.h"
#include "jobs/output_buffer.h"
#include "jobs/output_view.h"
#include "jobs/ports.h"

namespace pmon::serve {

struct PtySize {
  uint16_t rows = 24;
  uint16_t cols = 80;
};

struct EnvVar {
  std::string name;
  std::string value;
};

// pmon's: what a job must show before its create is answered (exactly one
// of port, http and line, or port with http): a process of its tree listens
// on TCP `port`; an HTTP GET of `http` (a path) on 127.0.0.1 at `port` (or
// the first port its tree listens on) answers 2xx; a line of its output
// matches the regular expression `line` (RE2). Not ready within timeout_ms,
// the create is answered anyway (ready false), and the job runs on unless
// stop_on_timeout.
struct ReadyProbe {
  std::optional<uint16_t> port;
  std::optional<std::string> http;
  std::optional<std::string> line;
  uint64_t timeout_ms = 30'000;
  bool stop_on_timeout = false;
};

// What became of a probe: ready after `ms`, or not, and why in one line.
struct ReadyOutcome {
  bool ready = false;
  uint64_t ms = 0;
  std::string error;
};

struct CreateParams {
  std::optional<std::string> session_id;
  std::string command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::optional<std::string> cwd;
  uint64_t output_byte_limit = 1 << 20;
  // pmon's: the job's pipe is not read while outputByteLimit bytes of it
  // are kept that no read has returned yet (its writes block meanwhile),
  // so a reader that keeps up loses nothing.
  bool output_backpressure = false;
  std::optional<uint64_t> timeout_ms;
  // pmon's: stopped (as by its timeout, stoppedBy "idle timeout") when no
  // output has come for this long; a pause while readers catch up
  // (outputBackpressure) does not count.
  std::optional<uint64_t> idle_timeout_ms;
  std::optional<PtySize> pty;
  bool keep = false;
  bool wait_tree = false;
  // With a name, a job is one of its kind among the caller's jobs: a create
  // whose name a running job of the caller's has returns that job
  // (Started::existing), unless `replace`, which stops it (verified gone)
  // and then starts the new one.
  std::optional<std::string> name;
  bool replace = false;
  // pmon's, for clients shaped like child_process: stderr kept in a buffer of
  // its own (terminal/output then returns it apart), the environment given
  // whole instead of laid over the service's, the first signal of a stop.
  bool separate_stderr = false;
  // Its stdin is /dev/null (no pipe to write to) unless stdin "pipe" is
  // asked for; a job with a pty reads its pty.
  bool stdin_null = true;
  bool clear_env = false;
  std::optional<int> kill_signal;
  // memoryMax (bytes, or "512M"), pidsMax, cpuMax (cores): the job's limits.
  Limits limits;
  // MCP: its end is told with a log message (a client of a revision that
  // has them; set per request, never from the connection).
  bool tell_end = true;
  // pmon's: the create is answered once the job is ready (or not, and why).
  std::optional<ReadyProbe> ready;
  // pmon's: the most its spool file holds before it is rotated (0: no
  // spool); the service's --spool-limit when left out, and at most that.
  std::optional<uint64_t> spool_byte_limit;
};

// A request about one job, by its id.
struct TerminalParams {
  std::string terminal_id;
};
struct OutputParams {
  std::string terminal_id;
  std::optional<uint64_t> since;
  std::optional<uint64_t> stderr_since;  // a job created with separateStderr
  // pmon's: with nothing new past `since` on a running job, wait up to this
  // long for more (or its end) before answering.
  std::optional<uint64_t> wait_ms;
  // pmon's: the bytes from `since` on, as the job wrote them, into a pipe
  // whose read end comes with the reply (a Unix socket connection only);
  // with `follow` until the job's output ends, else what is there now.
  bool stream = false;
  bool follow = true;
  // The bytes as the job wrote them, not text (a front end whose wire
  // carries bytes: sandboxd's gRPC).
  bool bytes = false;
  // pmon's: at most this many bytes of each stream in one reply (`more`
  // says when kept bytes were left for the next read, from `next`).
  uint64_t max_bytes = kDefaultMaxBytes;
  // pmon's: the whole output (its spool) seen through head and tail, a
  // page at an offset, grep, ANSI stripped, lines cut (jobs/output_view.h).
  ViewParams view;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{4} << 20;
  static constexpr uint64_t kMaxMaxBytes = uint64_t{16} << 20;
};
struct WaitForExitParams {
  std::string terminal_id;
  std::optional<uint64_t> timeout_ms;
};
struct WriteParams {
  std::string terminal_id;
  std::string data;
  bool eof = false;
};
struct ResizeParams {
  std::string terminal_id;
  PtySize size;
};
struct WaitForPortParams {
  std::string terminal_id;
  std::optional<uint16_t> port;
  std::optional<uint64_t> timeout_ms;
};
struct ListParams {
  std::optional<std::string> session_id;
};
// One of the caller's jobs that runs, by its name or a TCP port one of its
// processes listens on (or both).
struct FindParams {
  std::optional<std::string> name;
  std::optional<uint16_t> port;
  std::optional<std::string> session_id;
};
struct SessionCloseParams {
  std::string session_id;
};

// How a job's main process ended: one of them set, or neither (it was
// never seen to end: stopped before its status could be read).
struct ExitStatus {
  std::optional<int> exit_code;
  std::optional<int> signal;
};

// An output read: the text of each stream from where it was asked, and
// once the job is over how it ended (none while it runs).
struct OutputRead {
  OutputBuffer::Read out;
  std::optional<OutputBuffer::Read> err;  // a job with stderr apart
  std::optional<ExitStatus> exit;
  bool waiting_for_input = false;  // while it runs: see Job::waiting_for_input
};

// Why a job ended, beyond its exit status, in the report's terms:
// timed_out (its timeout or idle timeout ended it: the report's timed_out),
// stopped_by (who or what stopped it: the report's job.stoppedBy, "" when
// it ended by itself; known from the moment its stop begins), and, where
// the limit was set, whether the kernel killed a process of it for memory
// (memoryMax) or refused a fork at pidsMax (none: no such limit, or it is
// not over yet).
struct EndFacts {
  bool timed_out = false;
  std::optional<CallEnd> stopped_by;
  // stopped_by in the service's words ("" for null).
  std::string_view stopped_by_word() const { return stopped_by ? words_of(*stopped_by).stopped_by : ""; }
  std::optional<bool> oom_killed;
  std::optional<bool> pids_max_hit;
};

// A create's answer: the job started, or (existing) the caller's running
// job of that name, returned instead of a second one.
struct Started {
  std::string id;
  bool existing = false;
  // Asked with a probe: what became of it (an existing job's, when known).
  std::optional<ReadyOutcome> ready;
};

// A stop asked for is over: whether nothing of the job is left.
struct Stopped {
  bool cleanup_verified = false;
};

// A stream's start: where it starts, whether bytes asked for were dropped
// already, and the read end of its pipe (the caller hands it to the client).
struct StreamStart {
  uint64_t since = 0;
  bool truncated = false;
  int fd = -1;  // owned by the caller once returned
};

// One job as terminal/list and MCP's list show it.
struct JobInfo {
  std::string id;
  std::string name;  // "" when it has none
  std::vector<std::string> command;
  pid_t pid = 0;
  const char* status = "running";  // running, stopping, exited
  std::chrono::system_clock::time_point started;
  bool keep = false;
  bool pty = false;
  std::optional<std::string> session;
  std::vector<ListeningPort> ports;
  bool waiting_for_input = false;  // see Job::waiting_for_input
  std::optional<ExitStatus> exit;  // once over
  EndFacts end;                    // see EndFacts
  std::optional<uint64_t> cpu_usec;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<bool> cleanup_verified;  // once over
  std::optional<bool> ready;             // started with a probe that has passed or failed
  std::string spool_path;                // "" without a spool
  std::string stderr_spool_path;         // separateStderr
  // In a service with a session envelope: the envelope, what the session
  // has used, and what this job's cgroup has (read as the list is made, or
  // as the job ended).
  struct InSession {
    std::string cgroup;
    pmon::Envelope envelope;  // (not the JSON-RPC envelope of serve/jsonrpc.h)
    CgroupUsage session, job;
  };
  std::optional<InSession> in_session;
};

// The error in one line for a client of the service: a job named
// "<noun> '<id>'", a setting by the service's own flag.
std::string words(const Error& e, std::string_view noun);
// A job's error as data beside its line (a JSON-RPC error's `data`):
// {"reason": "unknownTerminal", "terminalId": ..., and what else it has:
// "port", "timeoutMs", "name", "limit", "stdin", "budget", "detail"}; null
// for any other error. error_from_data() reads it back (the CLI words it
// its own way).
nlohmann::json error_data(const Error& e);
std::optional<Error> error_from_data(const nlohmann::json& data);
// The request is at fault (a JSON-RPC "invalid params"), not the service.
inline bool callers_fault(const Error& e) { return e.code == Errc::invalid_argument; }

}  // namespace pmon::serve
