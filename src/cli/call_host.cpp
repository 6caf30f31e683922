// SPDX-License-Identifier: Apache-2.0
#include "cli/call_host.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/cli.h"
#include "core/units.h"
#include "jobs/call_records.h"
#include "serve/recorded_jobs.h"
#include "sys/reap.h"
#include "sys/syscalls.h"

namespace pmon::cli {

CallHost::CallHost(Signals signals) {
  sigset_t set;
  if (signals == Signals::all) {
    // As PID 1 the kernel drops a signal whose action is the default, so
    // each also gets a handler; it never runs while the signal is blocked.
    if (!sys::block_init_signals(&set)) die(std::string("sigprocmask: ") + std::strerror(errno));
  } else {
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) die(std::string("sigprocmask: ") + std::strerror(errno));
  }
  signal_fd_ = Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) die(std::string("signalfd: ") + std::strerror(errno));
}

void CallHost::become_subreaper(bool required) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0 && required)
    die(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
}

// Why a pidfd rather than PR_SET_PDEATHSIG: the parent-death signal is sent
// when the *thread* that forked pmon exits, so a harness that starts
// commands from a worker thread would stop a call that its process still
// waits for; a pidfd of the parent process becomes readable only once the
// whole process has exited. And it is identity-checked: the parent is named
// before, and getppid() asked after the pidfd is opened. If the parent died
// in between, pmon was reparented already and getppid() differs (the pidfd
// might name a stranger that got the number); if it still says ppid, the
// pidfd is of the parent. Kernels without pidfd_open (before 5.3) get the
// parent-death signal instead (SIGHUP, which cancels the call like one
// sent by hand), with the same check after it is armed.
void CallHost::watch_parent(pid_t ppid, const std::string& sub) {
  const std::string flag = sub + ": --die-with-parent: ";
  if (ppid <= 0) die(flag + "the program that started pmon is outside its PID namespace; it cannot be watched");
  auto pfd = sys::pidfd_open(ppid);
  const int err = pfd ? 0 : pfd.error().value();
  if (err == ENOSYS) {
    if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(SIGHUP), 0UL, 0UL, 0UL) != 0)
      die(flag + "prctl: " + std::strerror(errno));
  } else if (err != 0 && err != ESRCH) {
    die(flag + "cannot watch the parent process: " + pfd.error().message());
  }
  // ESRCH: the parent is gone already (and pmon was reparented first).
  if (::getppid() != ppid || err == ESRCH)
    die(flag + "the program that started pmon has already exited; the command was not started");
  if (pfd) parent_fd_ = std::move(*pfd);
}

bool CallHost::parent_exited() const noexcept {
  // Without a pidfd (the parent-death signal) it cannot be asked: it is
  // not known to have exited.
  if (!parent_fd_) return false;
  pollfd p{parent_fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

bool CallHost::stop_recorded_jobs(std::vector<Leftover>& left, bool verbose) {
  std::vector<serve::CallRecord> records = serve::take_call_records();
  if (records.empty()) return true;
  if (verbose)
    std::fprintf(stderr, "pmon: stopping %s a service started for this call\n",
                 count_of(records.size(), "job", "jobs").c_str());
  bool verified = true;
  for (Leftover& l : serve::stop_recorded_jobs(records, &verified)) left.push_back(std::move(l));
  return verified;
}

}  // namespace pmon::cli
