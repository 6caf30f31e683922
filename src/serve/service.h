// pmon serve: one process, one thread, one epoll, many jobs. Each job is a
// full call (core/run.h Call: its own boundary, stop plan, verification and
// report) started in the background, owned by the session that created it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "confine/boundary.h"
#include "core/stop.h"
#include "sys/fd.h"

namespace pmon::serve {

struct ServeOptions {
  // The listening socket (already bound and listening), or -1 for --stdio.
  int listen_fd = -1;
  bool stdio = false;
  bool die_with_parent = false;
  // Speak MCP (pmon mcp) instead of the terminal/* methods, on the same jobs.
  bool mcp = false;
  size_t max_jobs = 1024;
  StopPlan stop = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  size_t max_line = 1 << 20;            // longer requests are refused
  size_t max_queue = size_t{16} << 20;  // replies behind one being sent before a client is dropped
  // What the service may hold for its jobs and clients (--memory-budget):
  // three quarters for the jobs' output buffers, a quarter for what the
  // connections hold (replies not yet sent; requests half read, at most an
  // eighth; requests waiting for their answer, at most a sixteenth, and
  // 1024 a connection).
  size_t memory_budget = kDefaultMemoryBudget;
  static constexpr size_t kDefaultMemoryBudget = size_t{256} << 20;
  static constexpr size_t kMinMemoryBudget = size_t{16} << 20;
  // For the report of every job.
  std::vector<std::string> passed_over;
  // The socket's path (with listen_fd), named in the records of jobs asked
  // for from inside a pmon call (serve/call_records.h).
  std::string socket_path;
};

// Runs the service until SIGTERM/SIGINT, EOF on stdin (--stdio) or the
// parent's death (die_with_parent); every job is stopped and verified gone
// before it returns. 0 when every job was, 125 otherwise.
// Blocks SIGTERM, SIGINT and SIGHUP (read from a signalfd), ignores SIGPIPE.
int serve(Backend& backend, const ServeOptions& opts);

}  // namespace pmon::serve
