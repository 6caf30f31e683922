// Reaping and the signals of a process that reaps for others (PID 1, a
// subreaper): mechanism only, no policy.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>

namespace pmon::sys {

// Reaps every zombie child of this process, WNOHANG, and keeps the status
// of the command. Shared by the init loop and make_pid1_boundary's callback.
class Reaper {
 public:
  // Collects every zombie child; remembers the status of `main_pid`.
  void reap_all() noexcept;
  void set_main(pid_t pid) noexcept { main_pid_ = pid; }
  bool main_exited() const noexcept { return main_exited_; }
  const siginfo_t& main_info() const noexcept { return main_si_; }
  uint64_t reaped() const noexcept { return reaped_; }

 private:
  pid_t main_pid_ = 0;
  bool main_exited_ = false;
  siginfo_t main_si_{};
  uint64_t reaped_ = 0;
};

// What an init does with signals before it starts the command: blocks every
// signal but the faults (and SIGKILL/SIGSTOP) to read them from a signalfd,
// and — since the kernel drops a default-action signal sent to PID 1 — gives
// each a handler that never runs while blocked (the command gets every
// disposition reset before exec). Fills *set with what it blocked; false
// (errno set) when sigprocmask fails.
bool block_init_signals(sigset_t* set) noexcept;

}  // namespace pmon::sys
