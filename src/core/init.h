// pmon init: the PID-1 / subreaper shim, tree-wide. Starts one command, reaps
// every zombie that lands on this process (adopted orphans included),
// forwards signals to the command's whole boundary, and when the command
// exits stops whatever it left behind (or waits for it) and hands back the
// command's status. tini's and catatonit's job, without their blind spots:
// orphans that outlive the command, and daemons that left the process group.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "confine/boundary.h"
#include "core/spawn.h"
#include "core/stop.h"
#include "sys/syscalls.h"

namespace pmon {

// Where a signal sent to pmon init goes: the command only, its process group
// (dumb-init's default), or every process of the boundary (pmon's default).
enum class ForwardMode { child, group, tree };
std::optional<ForwardMode> parse_forward_mode(std::string_view s) noexcept;

struct InitOptions {
  SpawnSpec spawn;
  ForwardMode forward = ForwardMode::tree;
  StopPlan stop = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  bool wait_all = false;  // wait for the boundary to empty instead of stopping it
  // A signalfd the caller owns, for every signal it blocked: SIGCHLD means
  // "reap", any other signal is forwarded.
  int signal_fd = -1;
  // Once the command runs nothing is fatal: problems are reported here and
  // the loop carries on. Library code never prints.
  std::function<void(const std::string&)> warn;
  std::function<void(const std::string&)> trace;
};

struct InitResult {
  pid_t pid = 0;
  sys::ExitStatus main;       // the command's own status
  bool cleanup_verified = false;
  uint64_t reaped = 0;        // processes reaped, the command included
  // Still running when the command exited; nullopt when pmon could not
  // count them (PID 1 under a /proc that cannot show its namespace).
  std::optional<size_t> leftovers = 0;
  // The command's code, 128+N for signal N, 125 when what it left behind
  // could not be confirmed gone.
  int status() const noexcept;
};

// The boundary of PID 1 in a PID namespace: the namespace itself. Every
// process in it is a descendant of PID 1 (orphans reparent to it), kill(-1)
// reaches all of them without naming any by number, and "no children left"
// means the namespace is empty. Needs no /proc of the namespace.
// `reap` is called to collect zombies before emptiness is judged.
std::unique_ptr<Boundary> make_pid1_boundary(std::function<void()> reap);

// Is the mounted /proc the one of this process's PID namespace? Scan-based
// code reading a foreign /proc would look at other processes under our pids.
bool proc_matches_pid_ns() noexcept;

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

// Runs the command under `boundary` and returns when it and everything it
// left are gone. This process owns every child it has: `reaper` collects
// them all (P_ALL), which is what PID 1 and a subreaper must do.
// Errors are returned only from before the command started.
std::expected<InitResult, SpawnError> run_init(Boundary& boundary, Reaper& reaper,
                                               const InitOptions& opts);

// What an init does with signals before it starts the command: blocks every
// signal but the faults (and SIGKILL/SIGSTOP) to read them from a signalfd,
// and — since the kernel drops a default-action signal sent to PID 1 — gives
// each a handler that never runs while blocked (the command gets every
// disposition reset before exec). Fills *set with what it blocked; false
// (errno set) when sigprocmask fails.
bool block_init_signals(sigset_t* set) noexcept;

}  // namespace pmon
