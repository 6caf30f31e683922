// One call: spawn inside a fresh boundary, wait for the main process, the
// deadline or a cancel, stop whatever remains, verify the boundary is empty,
// reap, and say what happened.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "confine/boundary.h"
#include "core/capture.h"
#include "core/spawn.h"
#include "core/stop.h"
#include "core/stopper.h"

namespace pmon {

struct RunOptions {
  SpawnSpec spawn;
  // Set on the call's cgroup leaf before it starts; fails closed (125).
  Limits limits;
  std::optional<Nanos> timeout;
  StopPlan stop = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  bool wait_tree = false;
  // A signalfd the caller owns: SIGCHLD means "reap", any other signal
  // cancels the call (a second one skips the grace period).
  int signal_fd = -1;
  // Readable means "cancel" (an eventfd or pipe; the library's way).
  int cancel_fd = -1;
  // This process owns every child it has (the CLI): reap orphans that were
  // reparented to it, and list live descendants that escaped the boundary.
  bool own_all_children = false;
  // Output capture (the binding): its child ends replace spawn.stdio, and
  // the call reads its pipes while it waits, stops and drains. Not owned.
  Capture* capture = nullptr;
  // The call's boundary goes inside this cgroup (absolute, under the
  // cgroup2 mount: the leaf of the call that asked for this one) where the
  // backend can (Backend::open_boundary_inside); else where it always goes.
  std::string inside_cgroup;
  // Progress lines for -v; library code never prints.
  std::function<void(const std::string&)> trace;
};

// not_started: the command never ran (confinement failed, not found, not
// executable); the report still says so.
enum class Outcome { exited, signaled, timeout, cancelled, not_started };
std::string_view to_string(Outcome o) noexcept;

struct RunResult {
  std::vector<std::string> command;
  pid_t pid = 0;
  ConfineKind confinement = ConfineKind::cgroup;
  std::optional<std::string> cgroup;
  std::chrono::system_clock::time_point started_at;
  double duration_ms = 0;
  Outcome outcome = Outcome::exited;
  std::optional<int> exit_code;   // when the main process exited
  std::optional<int> signal;      // when it died by a signal
  bool core_dumped = false;
  bool timed_out = false;
  int cancel_signal = 0;          // the signal that cancelled, if any
  std::vector<Leftover> leftovers;
  // Live descendants found outside the boundary once it was empty (a weak
  // boundary's setsid daemons, a call that moved itself out of its cgroup),
  // with what ended them; never one of `leftovers`.
  std::vector<Leftover> escaped;
  StopRecord stop;
  bool cleanup_verified = false;
  std::optional<uint64_t> cpu_usec;
  std::optional<uint64_t> memory_peak_bytes;
  Limits limits;  // what was asked for (and set, unless not_started)
  // Known where the matching limit was set: the kernel killed a process of
  // the call for memory (memory.events oom_kill), refused a fork at
  // pids.max (pids.events max).
  std::optional<bool> oom_killed;
  std::optional<bool> pids_max_hit;
  // Outcome::not_started: why, in one line, and the status it ends with
  // (125 confinement, 126 not executable, 127 not found).
  std::optional<std::string> error;
  int error_status = 0;

  // The timeout(1)-compatible status: child's code, 128+N, 124, and 125
  // when the boundary could not be verified empty.
  int status() const noexcept;
};

// The result of a call whose command never ran: nothing of it is alive,
// nothing is known of an exit.
RunResult not_started(std::vector<std::string> command, ConfineKind confinement, const SpawnError& err,
                      std::chrono::system_clock::time_point started_at);

// A process found outside the boundary (escaped) may be one the boundary
// held when the stop began and that left it since (pgroup: setsid during
// the stop): it stays in `leftovers`, with what finally ended it, and is
// dropped from `escaped`. Same process: same pid and start time.
void merge_escaped(std::vector<Leftover>& leftovers, std::vector<Leftover>& escaped);

std::expected<RunResult, SpawnError> run_call(Backend& backend, const RunOptions& opts);

class Runner;

// One call driven by its caller's own event loop (the binding's asyncio and
// long-lived handles): start() spawns; the caller watches pidfd() and the
// capture's fds; finish() stops whatever remains, verifies, drains, reaps.
// run_call is start + a poll loop + finish. Not thread-safe: one user at a time.
class Call {
 public:
  enum class End { main_exited, timeout, cancel };

  Call(Backend& backend, RunOptions opts);
  ~Call();  // a started, unfinished call is cancelled (the tree is stopped)
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  std::expected<void, SpawnError> start();
  int pidfd() const noexcept;
  pid_t pid() const noexcept;
  // The command's pid as the host sees it, the one to show: pid(), except
  // under pidns, where pid() is the status relay (RunResult::pid).
  pid_t command_pid() const noexcept;
  // Non-blocking.
  bool main_exited();
  // Waits up to timeout_ms (-1: no limit) for the main process to exit,
  // reading the capture meanwhile. True when it has exited.
  bool wait_main(int timeout_ms);
  // Blocks until the main process exits, the timeout fires or cancel_fd
  // turns readable (run_call's loop).
  End wait_for_end();
  // False when finish(End::main_exited) cannot block: the main process has
  // exited and the boundary is already empty.
  bool finish_may_block();
  std::vector<sys::ProcStat> members();
  void set_stop_plan(StopPlan plan);
  // Ends the call; blocks (at most the stop plan) only when something must
  // be stopped or, with wait_tree, waited for. Later calls return the same.
  const RunResult& finish(End why);
  bool finished() const noexcept;

  // finish() for a caller whose one thread must not block (pmon serve):
  // begin_finish() starts it and returns true when it is already over;
  // otherwise the caller polls finish_watch() until finish_deadline()
  // (CLOCK_MONOTONIC ns; it may change after every wake) and calls
  // resume_finish() on each wake until that returns true. The same stop
  // plan runs as in finish(), step by step. escalate skips the grace.
  bool begin_finish(End why);
  bool finishing() const noexcept;  // begun, not over
  // Finishing with wait_tree: the main process is gone and the tree is
  // waited for; resume_finish(true) stops it instead.
  bool waiting_for_tree() const noexcept;
  // While the call runs: what its boundary has used so far, where known.
  std::optional<uint64_t> cpu_usec();
  std::optional<uint64_t> memory_peak_bytes();
  bool resume_finish(bool escalate = false);
  Watch finish_watch();
  int64_t finish_deadline() const;
  const RunResult& result() const noexcept;
  // The call's cgroup once started, where it has one.
  const std::optional<std::string>& cgroup() const noexcept;

 private:
  std::unique_ptr<Runner> r_;
};

}  // namespace pmon
