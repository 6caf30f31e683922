// SPDX-License-Identifier: Apache-2.0
// What pmon serve (and pmon mcp) is started with, and how its memory
// budget is shared out among what the service holds.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "confine/error.h"
#include "core/stop.h"

namespace pmon::serve {

class ThreadedFront;

struct ServeOptions {
  // The listening socket (already bound and listening), or -1 for --stdio.
  int listen_fd = -1;
  bool stdio = false;
  bool die_with_parent = false;
  bool quiet = false;  // -q: no warnings (errors, and what the service stopped, are said)
  // Speak MCP (pmon mcp) instead of the terminal/* methods, on the same
  // jobs: which front end the service wires (serve/service.cpp).
  bool mcp = false;
  // At the job limit, the oldest job that is over and whose end was told
  // goes first, and the spools of one creator's jobs that are over are
  // kept within session_spool() (pmon mcp: a model never releases a job);
  // else a new job past the limit is refused.
  bool make_room = false;
  // Take requests from this front end's threads instead (pmon sandboxd):
  // no connection of its own then (no listen_fd, no stdio).
  ThreadedFront* threaded = nullptr;
  size_t max_jobs = 1024;
  // pmon mcp: what the spool files of one session's jobs that are over may
  // hold in all (two full spools, four times --spool-limit); past it the
  // oldest ones' spools are removed (their output is then what their
  // buffer keeps).
  uint64_t session_spool() const { return 4 * spool_limit; }
  // What one job's spool file holds before it is rotated (--spool-limit;
  // a job's spoolByteLimit when smaller), 0: no spool.
  uint64_t spool_limit = kDefaultSpoolLimit;
  static constexpr uint64_t kDefaultSpoolLimit = uint64_t{64} << 20;
  StopPlan stop = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  // A stop with no grace (pmon sandboxd's SendSignal SIGKILL).
  StopPlan stop_at_once = StopPlan::standard(SIGKILL, Nanos{0});
  // Where no boundary keeps jobs apart in one process (the subreaper
  // backend: every orphan comes to the service, whoever's it was), each
  // job's command runs under this command line, a pmon of the job's own
  // that is the subreaper of its processes ('pmon run --confine subreaper
  // ...'; the engine adds a job's first signal, --pty, '--' and the
  // command), and the service holds that pmon by its process group. Empty:
  // none.
  std::vector<std::string> job_wrapper;
  size_t max_line = 1 << 20;            // longer requests are refused
  size_t max_queue = size_t{16} << 20;  // replies behind one being sent before a client is dropped
  // What the service may hold for its jobs and clients (--memory-budget):
  // three quarters for the jobs' output buffers, a quarter for what the
  // connections hold (replies not yet sent; requests half read, at most an
  // eighth; requests waiting for their answer, at most a sixteenth, and
  // 1024 a connection; the jobs' stdin not yet taken and the pipes of
  // streams, at most a sixteenth).
  size_t memory_budget = kDefaultMemoryBudget;
  static constexpr size_t kDefaultMemoryBudget = size_t{256} << 20;
  static constexpr size_t kMinMemoryBudget = size_t{16} << 20;
  // For the report of every job.
  std::vector<Error> passed_over;
  // The socket's path (with listen_fd), named in the records of jobs asked
  // for from inside a pmon call (jobs/call_records.h).
  std::string socket_path;

  // The budget's shares: the jobs' output buffers, and the connections
  // (replies not yet sent, requests half read, requests waiting for their
  // answer, the jobs' stdin not yet read and the streams' pipes). Of the
  // connections' quarter, requests half read may take half, requests
  // waiting a quarter and stdin and streams a quarter; replies have what
  // the others leave, and a reply being built at least 64 KiB
  // (Answers::kMinReply).
  size_t output_share() const { return memory_budget / 4 * 3; }
  size_t queue_share() const { return memory_budget / 4; }
  size_t line_share() const { return memory_budget / 8; }
  size_t waiting_share() const { return memory_budget / 16; }
  size_t io_share() const { return memory_budget / 16; }
};

// Requests one connection may have waiting for their answer at once.
inline constexpr size_t kMaxWaiting = 1024;
// Storage kept for the next output reply (its text, a connection's line
// being sent), at most this large.
inline constexpr size_t kSpareMax = size_t{32} << 20;

}  // namespace pmon::serve
