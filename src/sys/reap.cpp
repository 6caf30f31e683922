#include "sys/reap.h"

#include "sys/syscalls.h"

namespace pmon::sys {

void Reaper::reap_all() noexcept {
  for (;;) {
    siginfo_t si{};
    int r = waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG, nullptr);
    if (r != 0 || si.si_pid == 0) return;  // ECHILD, or only live children
    ++reaped_;
    if (main_pid_ != 0 && si.si_pid == main_pid_ && !main_exited_) {
      main_si_ = si;
      main_exited_ = true;
    }
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
