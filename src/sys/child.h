// SPDX-License-Identifier: Apache-2.0
// The code that runs in the child between clone and exec. It is treated as
// signal-handler code: no allocation, no locks, no stdio — everything it
// needs is computed by the parent before the clone.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "sys/priority.h"

namespace pmon::sys {

struct ChildPlan {
  const char* const* candidates = nullptr;  // NULL-terminated exec paths
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // may be null
  int stdio[3] = {-1, -1, -1};
  int report_fd = -1;         // write end of the CLOEXEC error pipe, or:
  struct ChildFailure* shared_failure = nullptr;  // where a child that shares our memory says it
  int pdeathsig = 0;
  pid_t expected_parent = 0;  // for the pdeathsig identity check
  int arm_gate_fd = -1;       // SpawnSpec::test_arm_gate_fd
  bool new_session = true;
  // SpawnSpec::own_cgroup_namespace: unshare(CLONE_NEWCGROUP) once in the
  // leaf, so the leaf is the root of what the command sees and may write.
  bool new_cgroup_ns = false;
  bool close_other_fds = false;  // SpawnSpec::close_other_fds
  // stdio[0] is a pty slave: make it the controlling terminal of the new
  // session (TIOCSCTTY), after the dup2s.
  bool controlling_tty = false;
  // Set for the init of a PID namespace (confine/pidns.h): the child arms
  // PR_SET_PDEATHSIG(SIGKILL), proves its parent alive through the sync
  // pipe (getppid() is 0 across CLONE_NEWPID), mounts its /proc, and execs
  // pmon's init (init_argv) instead of the command.
  const struct NsChildPlan* ns = nullptr;
  // SpawnSpec::changed_signals: the dispositions to reset (null: all).
  const sigset_t* changed_signals = nullptr;
  const rlimit* nofile = nullptr;  // SpawnSpec::nofile
  // The nice value to start with: the cloning thread's own before a stop
  // raised it (sys/priority.h), or kKeepNice.
  int nice = kKeepNice;
};

struct NsChildPlan {
  int sync_r = -1;             // "go" byte, then POLLHUP if the parent died
  int sync_w = -1;             // the parent's end: closed in the child
  int exe_fd = -1;             // pmon's binary, for execveat
  const char* cgroup2_mount = nullptr;  // --isolate: the leaf's view here
  int keep_fds[3] = {-1, -1, -1};       // CLOEXEC cleared: the init uses them
  char* const* init_argv = nullptr;
};

// What the namespace init tells the status relay when the command is
// reaped: its si_code/si_status, and whether the namespace was empty then
// (the init exits right after, and the relay waits for that).
struct NsStatus {
  int code = 0;
  int status = 0;
  int ns_empty = 0;
};

// The status relay: pmon's direct child that stands for the command of a
// PID namespace call (whose real parent is the init). It exits the way the
// command did, once the init has reported it; SIGKILL when the init died
// without a word (the namespace was killed).
struct RelayPlan {
  int status_r = -1;
  int init_pidfd = -1;
  pid_t expected_parent = 0;
};

// What the child writes on the error pipe (or into shared_failure) before
// _exit.
struct ChildFailure {
  enum Stage : int { kSetup = 1, kChdir = 2, kExec = 3, kParentGone = 4, kNsMount = 5, kNsInit = 6 };
  int stage = 0;
  int err = 0;
};

[[noreturn]] void run_child(const ChildPlan& plan) noexcept;

// The mounts of a namespace init, done between clone and exec (raw
// syscalls only): in a fresh mount namespace, as PID 1 of a fresh PID
// namespace, makes every mount private, mounts this namespace's /proc, and
// when cgroup2_mount is given, re-roots the cgroup namespace at the current
// cgroup and mounts that view there. Shared by the availability probe and
// the real clone, so that what was probed is what runs. 0, or the errno of
// the first failure.
int ns_setup_mounts(const char* cgroup2_mount) noexcept;
[[noreturn]] void run_status_relay(const RelayPlan& plan) noexcept;

}  // namespace pmon::sys
