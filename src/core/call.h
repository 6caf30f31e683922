// SPDX-License-Identifier: Apache-2.0
// One call as a state machine: spawned inside a fresh boundary, it runs
// until its main process exits, its deadline passes or it is cancelled;
// then whatever remains is stopped (or, with wait_tree, waited for), the
// boundary verified empty, the zombies reaped, and the result says what
// happened. The machine does no waiting of its own: its caller waits on
// watch() until deadline() — in a loop of its own (pmon serve) or in
// core/driver.h (run, supervise, init, the binding, which also has the
// blocking ways to wait for it) — and hands it each wake through step(). The deadline and the reason of a stop exist here
// once, as values.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/call_options.h"
#include "core/result.h"
#include "core/stopper.h"

namespace pmon {

struct CallMachine;  // core/call_machine.h

class Call {
 public:
  using End = CallEnd;

  Call(Backend& backend, RunOptions opts);
  // A call in a boundary made by its caller (PID 1's namespace; a leaf
  // with its limits set already), which the call releases when it is over.
  Call(std::unique_ptr<Boundary> boundary, RunOptions opts);
  // A started call that is not over is killed (its boundary's kill, not
  // waited for: the crash guard and `pmon gc` verify it). Whoever can wait
  // ends it first (core/driver.h does).
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  std::expected<void, Error> start();

  // The machine. watch(): the fds that may change its state (the main
  // process's pidfd while it runs, the boundary's watch while it stops or
  // is waited for); deadline(): when it must look again whatever happens
  // (its timeout, a stop step's end; CLOCK_MONOTONIC ns). step(): it looks
  // and moves on (reaps, ends when its main process has exited or its
  // timeout has passed, takes the next stop step).
  Watch watch();
  int64_t deadline() const noexcept;
  // When the call's own timeout ends it (CLOCK_MONOTONIC ns; kForever: it
  // has none, or has not started). A caller that steps the call only when
  // it stops (pmon serve) starts the stop at this time.
  int64_t timeout_at() const noexcept;
  // Which of its time limits has run out at `now` (timeout, idle_timeout).
  std::optional<End> due_end(int64_t now) const noexcept;
  // Output was seen: the idle timeout starts again. hold_idle(true): the
  // caller does not read for now (its buffer is full), which is not the
  // command's idleness; the idle time starts again when it reads (false).
  void note_output();
  void hold_idle(bool held);
  void step();
  // SIGCHLD: collects the zombies that are the call's to collect (and, in
  // the phases that wait for them, moves on).
  void reap();
  // The caller ends the call: its own timer fired (timeout), or it cancels;
  // a main process that already exited ended it anyway. Later requests are
  // no-ops. `signal`: the signal that cancelled, for the report.
  void end(End why, int signal = 0);
  // Skips the grace period of the stop under way (or the next one); a
  // tree that was waited for is stopped, for `why`.
  void escalate(End why = End::cancel);

  bool started() const noexcept;
  bool finished() const noexcept;
  bool finishing() const noexcept;  // its end has begun, and is not over
  // Finishing with wait_tree: the main process is gone and the tree is
  // waited for; escalate() stops it instead.
  bool waiting_for_tree() const noexcept;
  // Why it ended, once its end has begun (main_exited until then, and when
  // its main process ended it).
  End end_cause() const noexcept;
  const RunResult& result() const noexcept;

  // While it runs.
  int pidfd() const noexcept;
  pid_t pid() const noexcept;
  // The command's pid as the host sees it, the one to show: pid(), except
  // under pidns, where pid() is the status relay (RunResult::pid).
  pid_t command_pid() const noexcept;
  bool main_exited();
  std::vector<sys::ProcStat> members();
  // The boundary's own listing of its processes (Boundary::listed_pids):
  // no read of each one's /proc; nullopt where it has none.
  std::optional<std::vector<pid_t>> listed_pids();
  // CPU time and peak memory so far (the result's once it is over).
  Figures usage();
  const std::optional<std::string>& cgroup() const noexcept;
  const RunOptions& options() const noexcept;
  // Sends sig to every process in the boundary (an init forwarding it).
  Result<int> signal_tree(int sig);
  void set_stop_plan(StopPlan plan);
  // Nobody will read what the call used or what it left behind (its caller
  // dropped it: a closed session's job): as it ends, its figures are not
  // read and the processes left are not looked at one by one. Whether its
  // tree is gone is verified all the same.
  void without_details();
  // False when ending it now (main process exited) could not block: the
  // boundary is already empty.
  bool finish_may_block();

  // The same machine under the names pmon serve uses.
  bool begin_finish(End why) {
    end(why);
    return finished();
  }
  bool resume_finish(bool escalate_now = false, End why = End::cancel) {
    if (escalate_now) escalate(why);
    step();
    return finished();
  }
  Watch finish_watch() { return watch(); }
  int64_t finish_deadline() const { return deadline(); }

 private:
  std::unique_ptr<CallMachine> s_;
};

}  // namespace pmon
