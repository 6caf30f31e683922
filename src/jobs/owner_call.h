// SPDX-License-Identifier: Apache-2.0
// Which pmon call a client of the service runs inside. A job asked for from
// inside a call belongs to that call: it is stopped when the call ends, so
// the service is never a way out of a call's boundary.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  // than ours), else the nearest ancestor that is a pmon by the mark its
  // executable carries (sys/exe_note.h: any copy or version of pmon; a
  // `pmon run`, `supervise` or `init` on the subreaper or pgroup backend).
  // Invalid when there is none.
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

// What peer_call found for each socket connection, looked up on its first
// create and kept while it lasts (a peer's call does not change).
class PeerCalls {
 public:
  Result<const PeerCall*> of(uint64_t conn, int sock);
  void forget(uint64_t conn) { calls_.erase(conn); }

 private:
  std::map<uint64_t, PeerCall> calls_;
  std::optional<std::string> mount_;  // the cgroup2 mount, looked up once
};

// A job's tie to the pmon call it was asked for from inside, which it ends
// with: a job of this service, the process whose end is that call's end,
// the call's leaf when the job's leaf was made in it.
struct CallTie {
  uint64_t owner_job = 0;  // the job's number, 0: none
  Fd owner_pidfd;          // watched by the job table
  std::string owner_leaf;
  // The record of the job left for that call's pmon (jobs/call_records.h),
  // which stops it and lists it in its report; removed once it is over.
  std::string record;
  pid_t record_for = 0;  // that pmon: its kill is its call's end
  uint64_t record_for_start = 0;

  // Whether the call has ended, or is ending; `owner_job_ended`: the owner
  // job is over or stopping (or gone).
  bool call_ended(bool owner_job_ended) const;
  // Whether the client on `sock` (-1: --stdio) is the call's pmon.
  bool asked_by_call_pmon(int sock) const;
  // A call whose boundary does not hold the job (pidns, subreaper, pgroup):
  // its pmon is told where it looks when it ends.
  void leave_record(const PeerCall& from, const std::string& socket, const std::string& terminal_id, pid_t job_pid,
                    const std::vector<std::string>& command);
};

}  // namespace pmon::serve
