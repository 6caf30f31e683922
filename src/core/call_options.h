// SPDX-License-Identifier: Apache-2.0
// What a call is (CallSpec) and how it is run (RunOptions): the words of
// the call machine (core/call_machine.h) and of its handle (core/call.h),
// with how its end is asked for (CallEnd, core/result.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "confine/boundary.h"
#include "core/capture.h"
#include "core/result.h"
#include "core/stop.h"
#include "core/units.h"
#include "sys/reap.h"

namespace pmon {

// What a call is, whoever asks for it (the CLI's flags, a job's JSON, the
// binding's arguments): its command, what it may use, when it is ended and
// how it is stopped. How a caller is wired to it is RunOptions' business.
struct CallSpec {
  // The command, its environment and directory, and how it is started
  // (pdeathsig among them).
  SpawnSpec spawn;
  // Set on the call's cgroup leaf before it starts; fails closed (125).
  Limits limits;
  // pids.max for a call whose limits say nothing of pids (kDefaultPidsMax;
  // nullopt: none). Not set where it cannot be: the report says why.
  std::optional<uint64_t> default_pids_max = kDefaultPidsMax;
  std::optional<Nanos> timeout;
  // Ended (idle_timeout) when no output has been seen for this long: the
  // caller that reads the output says when it sees some (Call::note_output).
  std::optional<Nanos> idle_timeout;
  StopPlan stop = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  bool wait_tree = false;
};

// A call as the driver runs it: what it is, and how the caller is wired to
// it (the fds it watches, who reaps, what is read as it ends).
struct RunOptions {
  CallSpec call;
  // For the blocking helpers (core/driver.h): a signalfd the caller owns,
  // where SIGCHLD means "reap" and any other signal cancels the call (a
  // second one skips the grace period); an fd whose readability means
  // "cancel" (an eventfd or pipe; the binding's way).
  int signal_fd = -1;
  int cancel_fd = -1;
  // A pidfd of the process that started this one (--die-with-parent):
  // readable once it has exited, which ends the call (parent_exited).
  int parent_fd = -1;
  // An fd the caller's reader holds the other end of (pmon-shell's stdout:
  // a pipe or a terminal to the harness): once it hangs up (no reader is
  // left: the pipe's read end closed, the terminal hung up), the program
  // that would read the output is gone, and the call ends as for the
  // parent's exit. Polled for nothing but its hang-up.
  int reader_fd = -1;
  // This process owns every child it has (the CLI): reap orphans that were
  // reparented to it, and stop the live descendants that escaped the
  // boundary as the call ends.
  bool own_all_children = false;
  // Output capture (the binding): its child ends replace spawn.stdio, and
  // the driver reads its pipes while it waits. Not owned.
  Capture* capture = nullptr;
  // The call's boundary goes inside this cgroup (absolute, under the
  // cgroup2 mount: the leaf of the call that asked for this one) where the
  // backend can (Backend::open_boundary_inside); else where it always goes.
  std::string inside_cgroup;
  // In a session: read what the session and the call used as it ends
  // (RunResult::session; some twenty files); and on the cgroup backend, the
  // call's CPU time and memory peak (cpu.stat, memory.peak). Off for a
  // caller that shows no result but the exit status (pmon run without a
  // report).
  bool session_figures = true;
  // The reaper to collect with (shared by an init, whose boundary reaps
  // too, and by a restart loop); null: the call's own.
  sys::Reaper* reaper = nullptr;
  // The main process is collected through its pidfd; false: like any other
  // child, by what waitid(P_ALL) offers (an init, the sigchld engine).
  bool main_by_pidfd = true;
  // Whether the processes left when the stop begins are looked at one by
  // one (for the report's leftovers); false under a /proc that does not
  // show the boundary's PID namespace (an init's), where each pid read
  // would name somebody else.
  bool track_leftovers = true;
  // The call has its thread to itself (pmon run, an init, the bindings'
  // blocking calls): its stop runs under SCHED_RR where the system allows
  // (sys/priority.h), so that a tree that keeps the CPUs busy cannot hold
  // its own stop back. False where one thread stops many calls (the job
  // service): there a stop takes nice levels, and real time only on the
  // backends that find the tree by walking /proc.
  bool realtime_stop = true;
  // Progress lines for -v; library code never prints.
  std::function<void(const std::string&)> trace;
};

}  // namespace pmon
