// SPDX-License-Identifier: Apache-2.0
// Shared by the backends that find their members by scanning /proc
// (subreaper, pgroup): signalling through verified pidfds and watching them.
#pragma once

#include <vector>

#include "confine/boundary.h"
#include "sys/fd.h"

namespace pmon::confine {

// Signals each listed process through a pidfd that is checked to still be
// the scanned process (pid + start time). Gone processes are skipped.
int signal_listed(const std::vector<sys::ProcStat>& procs, int sig) noexcept;

// Keeps pidfds of the current members so a waiter can poll for their exits.
class PidfdWatch {
 public:
  Watch refresh(const std::vector<sys::ProcStat>& members);

 private:
  std::vector<Fd> fds_;
};

// pmon's own helper processes (the cgroup backend's E11 guard): children of
// ours that are no call's, so no scan of our descendants may count them.
void register_helper(pid_t pid);
void unregister_helper(pid_t pid);
bool is_helper(pid_t pid);

// Drops zombies: they are dead, only not yet reaped.
std::vector<sys::ProcStat> live_only(std::vector<sys::ProcStat> procs);

}  // namespace pmon::confine
