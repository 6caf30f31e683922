// SPDX-License-Identifier: Apache-2.0
#include "sys/syscalls.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pmon::sys {

Result<CloneResult> clone3_fork(const CloneRequest& req) noexcept {
  int pidfd = -1;
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = static_cast<uint64_t>(req.exit_signal);
  if (req.into_cgroup) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(req.cgroup_fd);
  }
  if (req.new_pid_ns) args.flags |= CLONE_NEWPID;
  if (req.new_user_ns) args.flags |= CLONE_NEWUSER;
  if (req.new_mount_ns) args.flags |= CLONE_NEWNS;
  if (req.new_cgroup_ns) args.flags |= CLONE_NEWCGROUP;

  long r = ::syscall(SYS_clone3, &args, sizeof args);
  if (r < 0) return fail_errno();
  CloneResult out;
  out.pid = static_cast<pid_t>(r);
  if (r > 0) out.pidfd = Fd(pidfd);
  return out;
}

Result<Fd> pidfd_open(pid_t pid) noexcept {
  long r = ::syscall(SYS_pidfd_open, pid, 0);
  if (r < 0) return fail_errno();
  return Fd(static_cast<int>(r));
}

int pidfd_send_signal(int pidfd, int sig) noexcept {
  long r = retry_eintr(
      [&] { return ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0); });
  return r < 0 ? -1 : 0;
}

int pidfd_signal_group(int pidfd, int sig) noexcept {
  constexpr unsigned kProcessGroup = 1U << 2;  // PIDFD_SIGNAL_PROCESS_GROUP
  long r = retry_eintr(
      [&] { return ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, kProcessGroup); });
  return r < 0 ? -errno : 0;
}

int waitid_raw(idtype_t type, id_t id, siginfo_t* info, int options,
               struct rusage* ru) noexcept {
  for (;;) {
    long r = ::syscall(SYS_waitid, type, id, info, options, ru);
    if (r == 0) return 0;
    if (errno != EINTR) return -errno;
  }
}

namespace {

// The SigIgn and SigCgt masks of /proc/self/status: the signals ignored and
// the signals caught, in one read instead of a sigaction(2) for each.
bool dispositions_from_proc(sigset_t& set) noexcept {
  Fd fd(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[4096];
  size_t len = 0;
  for (ssize_t n; len < sizeof buf - 1 && (n = ::read(fd.get(), buf + len, sizeof buf - 1 - len)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    len += static_cast<size_t>(n);
  }
  buf[len] = '\0';
  int found = 0;
  for (const char* key : {"\nSigIgn:", "\nSigCgt:"}) {
    const char* at = std::strstr(buf, key);
    if (at == nullptr) return false;
    at += std::strlen(key);
    while (*at == ' ' || *at == '\t') ++at;
    char* end = nullptr;
    unsigned long long mask = std::strtoull(at, &end, 16);
    if (end == at || (*end != '\n' && *end != '\0')) return false;
    for (int sig = 1; sig <= 64 && sig < NSIG; ++sig)
      if ((mask >> (sig - 1)) & 1ULL) ::sigaddset(&set, sig);
    ++found;
  }
  return found == 2;
}

}  // namespace

sigset_t non_default_dispositions() noexcept {
  sigset_t set;
  ::sigemptyset(&set);
  if (dispositions_from_proc(set)) {
    ::sigdelset(&set, SIGKILL);
    ::sigdelset(&set, SIGSTOP);
    return set;
  }
  ::sigemptyset(&set);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction old = {};
    // glibc's own signals answer EINVAL: they are not ours to reset.
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) ::sigaddset(&set, sig);
  }
  return set;
}

ExitStatus exit_status_from(const siginfo_t& si) noexcept {
  ExitStatus st;
  switch (si.si_code) {
    case CLD_EXITED:
      st.code = si.si_status;
      break;
    case CLD_DUMPED:
      st.core_dumped = true;
      [[fallthrough]];
    default:
      st.signaled = true;
      st.code = si.si_status;
  }
  return st;
}

int64_t monotonic_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace pmon::sys
