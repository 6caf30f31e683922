// SPDX-License-Identifier: Apache-2.0
// What a subcommand that blocks on its calls (run, and pmon-shell through
// it; supervise; init) sets up around them, in one place: the signals it
// reads from a signalfd, the subreaper, the watch on the program that
// started pmon (--die-with-parent), and, as the calls end, the jobs a
// service started for them (jobs/call_records.h), stopped through it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/stopper.h"
#include "sys/fd.h"

namespace pmon::cli {

class CallHost {
 public:
  // Which signals arrive on the signalfd: SIGCHLD and the stop signals
  // (TERM, INT, HUP), or, for an init, every one it can catch.
  enum class Signals { stop, all };

  // Blocks `signals` and opens the signalfd they arrive on (the child gets
  // its mask reset at spawn); die() when it cannot.
  explicit CallHost(Signals signals = Signals::stop);

  // Orphans of the calls come to this process, whatever the backend, so
  // that they are reaped. required: die() when it cannot.
  void become_subreaper(bool required = false);

  // --die-with-parent: watch `ppid` (the parent as pmon started), whose
  // exit or death ends the call. die() (naming `sub`) when it is gone
  // already or cannot be watched.
  void watch_parent(pid_t ppid, const std::string& sub);

  int signal_fd() const noexcept { return signal_fd_.get(); }
  // The parent's pidfd (-1: not watched, or watched by the parent-death
  // signal on a kernel without pidfds).
  int parent_fd() const noexcept { return parent_fd_.get(); }
  // Whether the parent watched is known to have exited by now.
  bool parent_exited() const noexcept;

  // The jobs a service started for the calls of this process that their
  // boundary did not hold: stopped through their service, and what they
  // ran added to `left`. False when one could not be confirmed gone. With
  // `verbose`, one line says how many there were.
  static bool stop_recorded_jobs(std::vector<Leftover>& left, bool verbose);

 private:
  Fd signal_fd_;
  Fd parent_fd_;
};

}  // namespace pmon::cli
