// SPDX-License-Identifier: Apache-2.0
#include "sys/reap.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::sys {

void Reaper::set_main(pid_t pid, int pidfd, bool pinned) noexcept {
  main_pid_ = pid;
  main_pidfd_ = pidfd;
  pinned_ = pinned;
  main_exited_ = main_reaped_ = false;
  main_si_ = {};
}

void Reaper::note(const siginfo_t& si, const struct rusage& ru) noexcept {
  ++reaped_;
  cpu_usec_ += usec_of(ru);
  if (main_pid_ != 0 && si.si_pid == main_pid_ && !main_reaped_) {
    main_si_ = si;
    main_exited_ = main_reaped_ = true;
  }
}

// Through its pidfd: exactly that process, whatever its number is now.
void Reaper::reap_main() noexcept {
  if (main_pidfd_ < 0 || main_reaped_) return;
  siginfo_t si{};
  struct rusage ru {};
  if (waitid_raw(P_PIDFD, static_cast<id_t>(main_pidfd_), &si, WEXITED | WNOHANG | (pinned_ ? WNOWAIT : 0),
                 pinned_ ? nullptr : &ru) != 0 ||
      si.si_pid == 0)
    return;
  if (pinned_) {
    main_si_ = si;
    main_exited_ = true;
    return;
  }
  note(si, ru);
}

// Every zombie child, by what waitpid(-1) offers (one SIGCHLD may stand
// for many exits): the main process among them, recognised by its pid,
// which is still its own until this very call frees it.
void Reaper::reap_by_number() noexcept {
  for (;;) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) return;
    ++reaped_;
    if (p != main_pid_ || main_pid_ == 0 || main_reaped_) continue;
    main_si_ = {};
    main_si_.si_pid = p;
    if (WIFSIGNALED(st)) {
      main_si_.si_code = WCOREDUMP(st) ? CLD_DUMPED : CLD_KILLED;
      main_si_.si_status = WTERMSIG(st);
    } else {
      main_si_.si_code = CLD_EXITED;
      main_si_.si_status = WEXITSTATUS(st);
    }
    main_exited_ = main_reaped_ = true;
  }
}

void Reaper::reap() noexcept {
  if (main_pidfd_ < 0 && all_) return reap_by_number();
  reap_main();
  if (!all_) return;
  for (;;) {
    siginfo_t si{};
    if (main_reaped_) {
      // Nothing to hold back: each one collected in one call (a killed
      // tree of a thousand leaves a thousand zombies to us).
      struct rusage ru {};
      if (waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG, &ru) != 0 || si.si_pid == 0) return;
      note(si, ru);
      continue;
    }
    // Peeked first: the main process is not collected here when its pidfd
    // collects it, nor while it is pinned.
    if (waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr) != 0 || si.si_pid == 0) return;
    if (si.si_pid == main_pid_ && !main_reaped_ && main_pid_ != 0) {
      if (main_pidfd_ >= 0 && !pinned_) {
        reap_main();
        if (main_reaped_) continue;
      }
      if (main_pidfd_ < 0 && !pinned_) {
        struct rusage ru {};
        if (waitid_raw(P_PID, static_cast<id_t>(si.si_pid), &si, WEXITED | WNOHANG, &ru) == 0 && si.si_pid != 0)
          note(si, ru);
        continue;
      }
      // A pinned main zombie is what waitid offers first, and hides the
      // others behind it: they are found by name.
      if (pinned_ && !main_exited_) reap_main();
      bool any = false;
      for (pid_t pid : zombie_children()) {
        if (pid == main_pid_) continue;
        struct rusage ru {};
        siginfo_t other{};
        if (waitid_raw(P_PID, static_cast<id_t>(pid), &other, WEXITED | WNOHANG, &ru) == 0 && other.si_pid != 0) {
          note(other, ru);
          any = true;
        }
      }
      if (!any) return;
      continue;
    }
    struct rusage ru {};
    if (waitid_raw(P_PID, static_cast<id_t>(si.si_pid), &si, WEXITED | WNOHANG, &ru) == 0 && si.si_pid != 0)
      note(si, ru);
  }
}

namespace {
void noop_handler(int) {}
}  // namespace

bool block_init_signals(sigset_t* set) noexcept {
  sigemptyset(set);
  struct sigaction sa = {};
  sa.sa_handler = noop_handler;
  sa.sa_flags = SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int s = 1; s < SIGRTMIN; ++s) {
    switch (s) {
      case SIGKILL: case SIGSTOP:  // cannot be caught
      case SIGFPE: case SIGILL: case SIGSEGV: case SIGBUS: case SIGABRT:
      case SIGTRAP: case SIGSYS:   // faults are about the init itself
        continue;
      default:
        break;
    }
    sigaddset(set, s);
    (void)::sigaction(s, &sa, nullptr);
  }
  return ::sigprocmask(SIG_BLOCK, set, nullptr) == 0;
}

}  // namespace pmon::sys
