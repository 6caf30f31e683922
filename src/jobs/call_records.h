// SPDX-License-Identifier: Apache-2.0
// Jobs asked for from inside a pmon call whose boundary cannot hold them
// (the call runs under pidns, subreaper or pgroup, or the job's leaf could
// not be made inside the call's). The service stops such a job when the
// call ends; so that the call's own report lists it too, the service leaves
// a record of it where that call's pmon looks when it ends, and that pmon
// stops it through the service (serve/recorded_jobs.h) and adds what it
// stopped to its report.
//
// Where: <runtime>/calls/<pid>/<terminal id>, <runtime> being the directory
// of the default socket as the call's pmon sees it ($XDG_RUNTIME_DIR/pmon,
// /run/pmon for root, /tmp/pmon-UID), <pid> that pmon's pid. The record
// names that pmon's start time, so a record left for a process that had
// the pid before is told apart and dropped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sys/result.h"

namespace pmon::serve {

struct CallRecord {
  uint64_t start_time = 0;  // of the call's pmon (the record's owner)
  std::string socket;       // the service that runs the job
  std::string terminal_id;
  pid_t job_pid = 0;        // the job's command, as the host sees it
  uint64_t job_start_time = 0;
  std::string command;
};

// The service's side: writes the record of `rec` for pmon process `owner`
// (checked to be a pmon, by its executable's mark), into that
// process's directory as its environment names it, with no symlink
// followed and every directory on the way owned by that process's uid and
// closed to others. Returns the record's path, to remove it by.
Result<std::string> write_call_record(pid_t owner, const CallRecord& rec);
void remove_call_record(const std::string& path) noexcept;

// The pmon that ran a call: the records left for it (its own pid, its own
// start time), each read once and removed, from a runtime directory that
// is ours (jobs/socket.h's open_runtime_dir) only. Costs one lookup when
// there are none, the common case.
std::vector<CallRecord> take_call_records();

}  // namespace pmon::serve
