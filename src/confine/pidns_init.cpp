// SPDX-License-Identifier: Apache-2.0
#include "confine/pidns_init.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstring>

#include "sys/child.h"
#include "confine/pid1.h"
#include "confine/launch.h"
#include "sys/numbers.h"
#include "sys/reap.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

void write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}


// Is anybody else left in the namespace? Every process of it descends from
// us, so "no children" (once the zombies are reaped) is "nobody".
bool namespace_empty() {
  siginfo_t si{};
  return sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr) == -ECHILD;
}

}  // namespace

int nsinit_main(const std::vector<std::string>& args) {
  int report_fd = -1, status_fd = -1, sync_fd = -1, pdeathsig = 0;
  if (args.size() < 8 || args[6] != "--" || !sys::parse_whole(args[0], report_fd) ||
      !sys::parse_whole(args[1], status_fd) || !sys::parse_whole(args[2], sync_fd) ||
      !sys::parse_whole(args[3], pdeathsig) || (args[4] != "0" && args[4] != "1") || (args[5] != "0" && args[5] != "1"))
    return 125;  // not started by spawn_in_pidns: nobody to tell
  for (int fd : {report_fd, status_fd, sync_fd}) (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
  auto setup_failed = [&](int err) {
    sys::ChildFailure f{sys::ChildFailure::kNsInit, err};
    write_all(report_fd, &f, sizeof f);
    return 125;
  };

  // Armed before the exec already; an exec that changed credentials clears
  // it, so arm again and look once more whether pmon is still there.
  if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(SIGKILL), 0UL, 0UL, 0UL) != 0) return setup_failed(errno);
  {
    pollfd p{sync_fd, POLLIN, 0};
    if (retry_eintr([&] { return ::poll(&p, 1, 0); }) > 0 && (p.revents & POLLHUP)) return 125;
  }

  // Every signal but the faults is blocked and read from a signalfd. As PID
  // 1 the kernel drops signals whose action is the default, so each also
  // gets a handler (never run while blocked); the command gets them reset.
  sigset_t set;
  if (!sys::block_init_signals(&set)) return setup_failed(errno);
  Fd sigfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) return setup_failed(errno);

  sys::Reaper reaper;
  std::unique_ptr<Boundary> self = make_pid1_boundary([&reaper] { reaper.reap_all(); });
  SpawnSpec spec;
  spec.argv.assign(args.begin() + 7, args.end());
  spec.pdeathsig = pdeathsig;
  spec.new_session = args[4] == "1";
  if (args[5] == "1") spec.pty_slave = 0;
  auto child = spawn(spec, *self);
  if (!child) {
    // pmon words the failure from the stage and errno, as for any spawn.
    const Error& e = child.error();
    sys::ChildFailure f{exit_status(e) == 125 ? sys::ChildFailure::kSetup : sys::ChildFailure::kExec, e.err};
    write_all(report_fd, &f, sizeof f);
    return exit_status(e);
  }
  (void)::close(report_fd);  // EOF: the command runs
  // pmon looks up the command's host pid among our children: reap nothing
  // before it says so. EOF instead: pmon died (the SIGKILL is on its way).
  {
    char ack = 0;
    if (retry_eintr([&] { return ::read(sync_fd, &ack, 1); }) != 1) {
      (void)::kill(-1, SIGKILL);
      return 125;
    }
  }
  reaper.set_main(child->pid);

  // From here on nothing is fatal (catatonit's rule): carry on, say nothing.
  bool reported = false;
  for (;;) {
    reaper.reap_all();
    if (reaper.main_exited() && !reported) {
      sys::NsStatus st;
      st.code = reaper.main_info().si_code;
      st.status = reaper.main_info().si_status;
      st.ns_empty = namespace_empty() ? 1 : 0;
      write_all(status_fd, &st, sizeof st);
      (void)::close(status_fd);
      reported = true;
      if (st.ns_empty) return 0;
    }
    if (reported && namespace_empty()) return 0;

    pollfd fds[2] = {{sigfd.get(), POLLIN, 0}, {sync_fd, POLLIN, 0}};
    int n = ::poll(fds, 2, reaper.main_exited() || sys::pidfd_alive(child->pidfd.get()) ? -1 : 0);
    if (n < 0) continue;
    if (fds[1].revents & (POLLHUP | POLLERR)) {
      // pmon is gone and the SIGKILL it should have meant did not come
      // (cannot happen with the pdeathsig armed; a backstop): end it all.
      (void)::kill(-1, SIGKILL);
      return 125;
    }
    for (;;) {
      signalfd_siginfo info;
      if (::read(sigfd.get(), &info, sizeof info) != static_cast<ssize_t>(sizeof info)) break;
      int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) continue;  // reaped at the top of the loop
      (void)::kill(-1, sig);
    }
  }
}

}  // namespace pmon
