// SPDX-License-Identifier: Apache-2.0
// Thin wrappers of the process syscalls glibc 2.36 does not wrap (or wraps
// without the arguments pmon needs). No policy here.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cstdint>
#include <limits>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::sys {

struct CloneRequest {
  bool into_cgroup = false;  // CLONE_INTO_CGROUP with cgroup_fd
  int cgroup_fd = -1;
  bool new_pid_ns = false;   // CLONE_NEWPID
  bool new_user_ns = false;  // CLONE_NEWUSER
  bool new_mount_ns = false; // CLONE_NEWNS
  bool new_cgroup_ns = false;// CLONE_NEWCGROUP
  // What the parent gets when the child ends. 0 makes a "clone child" that
  // waitpid/waitid only see with __WALL or __WCLONE — a helper of pmon's own
  // that no reaping loop over the call's children may collect.
  int exit_signal = SIGCHLD;
};

struct CloneResult {
  pid_t pid = 0;  // 0 in the child
  Fd pidfd;       // parent only: CLONE_PIDFD, CLOEXEC by the kernel
};

// clone3() with fork semantics (no CLONE_VM) and CLONE_PIDFD, so the child is
// addressed by an fd from the instant it exists. Returns pid 0 in the child.
Result<CloneResult> clone3_fork(const CloneRequest& req) noexcept;

Result<Fd> pidfd_open(pid_t pid) noexcept;

// 0 on success; ESRCH once the process is reaped (never a recycled pid).
int pidfd_send_signal(int pidfd, int sig) noexcept;

// The signal to every process of the group whose id is pidfd's process's
// pid (the group it leads, or led: it works after that process is reaped,
// and a recycled pid is never its target). One pass in the kernel, so a
// member that forks during it cannot leave a child that missed it. 0 on
// success; -ESRCH when the group is empty; -EINVAL before Linux 6.9.
int pidfd_signal_group(int pidfd, int sig) noexcept;

// waitid(2) as the kernel has it, with the rusage glibc's wrapper drops.
// Returns 0 or -errno; retries EINTR.
int waitid_raw(idtype_t type, id_t id, siginfo_t* info, int options,
               struct rusage* ru) noexcept;

// The CPU time (user + system) an rusage counts, in microseconds.
inline uint64_t usec_of(const struct rusage& ru) noexcept {
  return static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1'000'000ULL +
         static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Exit status of a finished child as reported by waitid.
struct ExitStatus {
  bool signaled = false;
  int code = 0;  // exit code, or signal number when signaled
  bool core_dumped = false;
};
ExitStatus exit_status_from(const siginfo_t& si) noexcept;

// The signals whose disposition in this process is not SIG_DFL now (a
// handler, or ignored): what a child must reset before it may unblock
// signals. SIGKILL and SIGSTOP are never in it.
sigset_t non_default_dispositions() noexcept;

// Wall-clock-free monotonic time in nanoseconds (CLOCK_MONOTONIC).
int64_t monotonic_ns() noexcept;
// A deadline that never comes, on that clock.
inline constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

}  // namespace pmon::sys
