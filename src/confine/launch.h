// SPDX-License-Identifier: Apache-2.0
// Starting the main process of a call: clone3 with CLONE_PIDFD (and
// CLONE_INTO_CGROUP when the boundary is a cgroup), so there is no instant in
// which the child is outside its boundary or known only by number. How a
// boundary starts its command is its own (Boundary::launch): a plain clone
// here, an init of its own for a PID namespace (confine/pidns_launch.cpp).
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "confine/error.h"
#include "sys/fd.h"

namespace pmon {

namespace sys {
struct ChildFailure;
}

struct SpawnSpec {
  std::vector<std::string> argv;
  std::optional<std::vector<std::string>> env;  // empty: this process's
  std::string cwd;                              // empty: inherit
  std::array<int, 3> stdio{-1, -1, -1};         // -1: inherit
  // A pty slave (sys/pty.h): the command's stdin, stdout and stderr (stdio
  // is ignored) and its controlling terminal, in its new session. Under a
  // PID namespace it reaches the command through pmon's init, which keeps
  // it as its own stdio but never makes it its terminal. -1: no pty.
  int pty_slave = -1;
  // Parent-death signal (seed 001), armed in the child after the clone and
  // followed by the parent-identity check. 0: none. When set, the clone runs
  // on the launcher thread (core/launcher.h), which never exits.
  int pdeathsig = 0;
  // Tests only: the child writes one byte to this socket and blocks until it
  // reads one back, just before it arms the pdeathsig, so a test can make
  // the parent die inside that window. -1 (always, outside tests): no stop.
  int test_arm_gate_fd = -1;
  bool new_session = true;
  // A cgroup namespace rooted at the call's own leaf (a call in a session,
  // where pmon may make one): where the host's cgroup2 is mounted with
  // nsdelegate, the command cannot write itself or its children into a
  // cgroup outside its leaf, nor change the limits set on it.
  bool own_cgroup_namespace = false;
  // subprocess's close_fds: no fd above 2 that the caller left inheritable
  // reaches the command (the binding; the CLI passes them on, as timeout(1)).
  bool close_other_fds = false;
  // The signals whose disposition in this process is not the default (a
  // handler, or ignored): the child resets just these before it unblocks
  // signals. Null: every one (the caller does not know). Only for a caller
  // that sets its dispositions once, up front (the service, pmon run): see
  // sys::non_default_dispositions().
  const sigset_t* changed_signals = nullptr;
  // RLIMIT_NOFILE to set before exec: a caller that raised its own soft
  // limit (the service) gives its children the one they would have had.
  // Null: as inherited.
  const rlimit* nofile = nullptr;
};

struct Child {
  pid_t pid = 0;
  // The pid a report names, when it is not `pid`: under pidns `pid` is the
  // status relay and this the command's host pid. 0: same as pid.
  pid_t report_pid = 0;
  Fd pidfd;
};

// The plain clone of spec.argv[0] (searched in PATH like execvp), into the
// cgroup `cgroup_fd` when it is one (>= 0). Exec failures are reported from
// the child over a CLOEXEC pipe, or in memory on the shared-memory path.
std::expected<Child, Error> launch_process(const SpawnSpec& spec, int cgroup_fd);

// The error of a child that failed at `f` (its stage and errno), worded
// for `spec`'s command: not found (127), not executable (126), ...
Error describe_failure(const sys::ChildFailure& f, const SpawnSpec& spec);

}  // namespace pmon
