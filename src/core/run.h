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
#include "core/spawn.h"
#include "core/stop.h"
#include "core/stopper.h"

namespace pmon {

struct RunOptions {
  SpawnSpec spawn;
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
  // Progress lines for -v; library code never prints.
  std::function<void(const std::string&)> trace;
};

enum class Outcome { exited, signaled, timeout, cancelled };
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
  std::vector<Leftover> escaped;  // live descendants outside a weak boundary
  StopRecord stop;
  bool cleanup_verified = false;
  std::optional<uint64_t> cpu_usec;
  std::optional<uint64_t> memory_peak_bytes;

  // The timeout(1)-compatible status: child's code, 128+N, 124, and 125
  // when the boundary could not be verified empty.
  int status() const noexcept;
};

std::expected<RunResult, SpawnError> run_call(Backend& backend, const RunOptions& opts);

}  // namespace pmon
