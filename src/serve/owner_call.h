// Which pmon call a client of the service runs inside. A job asked for from
// inside a call belongs to that call: it is stopped when the call ends, so
// the service is never a way out of a call's boundary.
#pragma once

#include <sys/types.h>

#include <string>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::serve {

struct PeerCall {
  // The innermost pmon leaf (pmon-<pid>-<start>-<n>) the peer is in, as an
  // absolute path under the cgroup2 mount; "" when it is in none.
  std::string leaf;
  // The child of this service the peer descends from (one of our jobs:
  // its main process, or its namespace's init), or 0.
  pid_t service_child = 0;
  // The process whose end is the call's end, as a pidfd checked against
  // its start time: the init of the PID namespace the peer is in (deeper
  // than ours), else the nearest ancestor running this same pmon
  // executable (a `pmon run`, `supervise` or `init` on the subreaper or
  // pgroup backend). Invalid when there is none.
  Fd supervisor;
  pid_t supervisor_pid = 0;
  // That process was found but had exited by the time its pidfd was opened:
  // the call is over.
  bool call_over = false;
  // The pmon that runs that call and writes its report (the supervisor, or
  // the parent of a namespace's init), with its start time; 0 when none.
  pid_t call_pmon = 0;
  uint64_t call_pmon_start = 0;

  bool any() const noexcept { return !leaf.empty() || service_child != 0 || supervisor.valid(); }
};

// Looks at the process that connected on `sock` (SO_PEERPIDFD where the
// kernel has it, 6.5+; else SO_PEERCRED's pid) and at its ancestors. Every
// /proc read is confirmed by the peer's pidfd afterwards: a peer already
// reaped (its pid may be someone else's by now) is an error (ESRCH), never
// a guess. `mount` is the cgroup2 mount ("" where there is none).
Result<PeerCall> peer_call(int sock, const std::string& mount);

}  // namespace pmon::serve
