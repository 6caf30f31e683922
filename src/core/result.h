// What a call ended with: the result every front end reports (the JSON
// report, the CLI's lines and exit status, serve's terminal/report, the
// Python and Node results).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/boundary.h"

namespace pmon {

struct Leftover {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string cmdline;
  // What ended it: "SIGTERM" (or whichever first signal), "SIGKILL",
  // "waited" (--wait-tree), "survived" (still there: a failure), "none"
  // (outside a weak boundary, left as it was).
  std::string action;
};

struct StopRecord {
  std::string reason;  // "", "leftovers", "timeout", "cancel", ...
  int first_signal = SIGTERM;
  std::optional<double> signal_sent_ms;  // since the call started
  std::optional<double> kill_sent_ms;
  std::optional<double> empty_confirmed_ms;
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

}  // namespace pmon
