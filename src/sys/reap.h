// SPDX-License-Identifier: Apache-2.0
// Reaping and the signals of a process that reaps for others (PID 1, a
// subreaper): mechanism only, no policy.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>

namespace pmon::sys {

// The one reaper of a process: every call, restart loop and init collects
// its zombies through one. It keeps the main process's status, and how it
// collects is the caller's choice:
//  - which children are its own: all of them (a process that owns every
//    child it has: the CLI, PID 1), or only the main process (a library or
//    the service, whose other children belong to others);
//  - the main process through its pidfd (waitid P_PIDFD, never by its
//    number), the others by pid; or every child by what waitpid(-1)
//    offers (an init, the sigchld engine), the main one recognised by its
//    pid;
//  - pinned: the main zombie is left unreaped (WNOWAIT) until unpin(), so
//    that its pid and process group id name nobody else meanwhile (a
//    process-group boundary signals by group id).
class Reaper {
 public:
  explicit Reaper(bool all_children = true) noexcept : all_(all_children) {}

  // A new main process (the previous one's status is forgotten).
  void set_main(pid_t pid, int pidfd = -1, bool pinned = false) noexcept;
  void unpin() noexcept { pinned_ = false; }
  // Collects every zombie that is ours to collect, WNOHANG.
  void reap() noexcept;
  // (The name init and its boundary use.)
  void reap_all() noexcept { reap(); }

  bool main_exited() const noexcept { return main_exited_; }
  // The main process is reaped (not just exited: pinned, it is not yet).
  bool main_reaped() const noexcept { return main_reaped_; }
  const siginfo_t& main_info() const noexcept { return main_si_; }
  // Processes reaped, the main one included, and their CPU time.
  uint64_t reaped() const noexcept { return reaped_; }
  uint64_t cpu_usec() const noexcept { return cpu_usec_; }

 private:
  void reap_main() noexcept;
  void reap_by_number() noexcept;
  void note(const siginfo_t& si, const struct rusage& ru) noexcept;

  bool all_;
  pid_t main_pid_ = 0;
  int main_pidfd_ = -1;
  bool pinned_ = false;
  bool main_exited_ = false;
  bool main_reaped_ = false;
  siginfo_t main_si_{};
  uint64_t reaped_ = 0;
  uint64_t cpu_usec_ = 0;
};

// What an init does with signals before it starts the command: blocks every
// signal but the faults (and SIGKILL/SIGSTOP) to read them from a signalfd,
// and — since the kernel drops a default-action signal sent to PID 1 — gives
// each a handler that never runs while blocked (the command gets every
// disposition reset before exec). Fills *set with what it blocked; false
// (errno set) when sigprocmask fails.
bool block_init_signals(sigset_t* set) noexcept;

}  // namespace pmon::sys
