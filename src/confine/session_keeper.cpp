// SPDX-License-Identifier: Apache-2.0
#include "confine/session_keeper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "confine/cgroup_kill.h"
#include "confine/scan.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::confine {

namespace {

constexpr int kGiveUpMs = 600'000;
constexpr int kRetryMs = 200;

// In the keeper, a forked copy of a process that may have threads: only
// calls that are safe after fork (plain system calls), no allocation.
[[noreturn]] void keeper_main(int harness, int base, const char* name) noexcept {
  sigset_t all;
  ::sigfillset(&all);
  (void)::sigprocmask(SIG_SETMASK, &all, nullptr);
  (void)::setsid();
  (void)::prctl(PR_SET_NAME, "pmon-session");
  (void)::chdir("/");
  // No fd of the caller's but the two it needs: a pipe the harness reads
  // for the call's end must not stay open here.
  const int lo = harness < base ? harness : base, hi = harness < base ? base : harness;
  if (lo > 0) (void)::syscall(SYS_close_range, 0U, static_cast<unsigned>(lo - 1), 0U);
  if (hi > lo + 1) (void)::syscall(SYS_close_range, static_cast<unsigned>(lo + 1), static_cast<unsigned>(hi - 1), 0U);
  (void)::syscall(SYS_close_range, static_cast<unsigned>(hi + 1), ~0U, 0U);
  pollfd p{harness, POLLIN, 0};
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
  for (int waited = 0; waited < kGiveUpMs; waited += kRetryMs) {
    const int dir = ::openat(base, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) ::_exit(0);  // removed by someone else
    if (::flock(dir, LOCK_EX | LOCK_NB) == 0) {
      // Nobody runs a call in it: what is still inside is a crashed call's.
      if (::unlinkat(base, name, AT_REMOVEDIR) == 0 || errno == ENOENT) ::_exit(0);
      (void)kill_and_remove_cgroup(base, name, 2000);
      ::_exit(0);
    }
    (void)::close(dir);
    const timespec t{0, kRetryMs * 1'000'000L};
    (void)::nanosleep(&t, nullptr);
  }
  ::_exit(0);
}

}  // namespace

void start_session_keeper(const SessionKey& key, int base_fd, const std::string& name) noexcept {
  if (key.kind != SessionKey::Kind::harness || name.size() >= 256) return;
  auto harness = sys::pidfd_open(key.pid);
  if (!harness) return;
  // The pid is the harness's while its pidfd says it runs and its start time
  // is the one in the session's name.
  auto st = sys::read_stat(key.pid);
  if (!st || st->start_time != key.start || sys::pidfd_alive(harness->get()) == false) return;
  char copy[256];
  std::memcpy(copy, name.c_str(), name.size() + 1);
  sys::CloneRequest req;
  req.exit_signal = 0;  // a clone child: no reaping loop of the call's sees it
  auto child = sys::clone3_fork(req);
  if (!child) return;
  if (child->pid == 0) keeper_main(harness->get(), base_fd, copy);
  // A child of ours that is no call's (a subreaper's scan must not stop it).
  register_helper(child->pid);
}

}  // namespace pmon::confine
