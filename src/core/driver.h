// SPDX-License-Identifier: Apache-2.0
// The one blocking loop of a process that runs calls (run, supervise, init,
// the binding's blocking helpers): it waits on a call's watch and deadline,
// the caller's signalfd (its inbox: SIGCHLD means "reap", the others are
// the front end's to say), a cancel fd and the call's output capture, and
// hands each wake to the call. pmon serve has a loop of its own (epoll, many
// calls) and drives the same machine.
#pragma once

#include <cstdint>
#include <functional>

#include "core/call.h"
#include "sys/reap.h"

namespace pmon {

// What a front end does with the signals it reads (not SIGCHLD, which
// always means "reap"). The default, run's: the first stop signal cancels a
// running call (or is noted while it already ends), every later one skips
// the grace period of the stop.
struct SignalPolicy {
  std::function<void(int sig)> on_signal;
  // SIGCHLD while no call is waited on (a restart loop between children).
  std::function<void()> on_chld;
};

class Driver {
 public:
  // Uses the call's signal_fd, cancel_fd, parent_fd and capture
  // (RunOptions).
  explicit Driver(Call& call, SignalPolicy policy = {});
  // No call yet (or between calls): only the caller's signalfd.
  Driver(int signal_fd, SignalPolicy policy);

  // A call started and not over is ended (cancel) and waited for: a tree
  // is never left behind because its handle was dropped.
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Until the main process exits (main_exited), the call ends itself
  // (timeout) or is cancelled (a signal, the cancel fd: cancel), or `until`
  // (CLOCK_MONOTONIC ns) passes. The call is not ended for the caller.
  Call::End wait_for_end(int64_t until);
  // Up to timeout_ms (-1: no limit) for the main process to exit; true when
  // it has.
  bool wait_main(int timeout_ms);
  // Ends the call (Call::end) and waits until it is over; later calls
  // return the same.
  const RunResult& finish(Call::End why);
  // Until the call is over.
  void run_to_end();

  // One wait, on the call (null: only the inbox) until `until` at the
  // latest; true when it stopped for a cancel (the cancel fd or a signal
  // the policy took as one).
  bool wait_once(Call* call, int64_t until);
  // The call waited on from now on (a restart loop's next child), and none
  // (before that call is destroyed).
  void attach(Call& call);
  void detach() noexcept { call_ = nullptr; }
  // The first stop signal read, 0 before.
  int first_signal() const noexcept { return first_signal_; }
  // The parent_fd said the parent exited.
  bool parent_exited() const noexcept { return parent_exited_; }

 private:
  void drain_signals(Call* call);
  void on_cancel_fd(Call* call);
  void on_parent_exit(Call* call);

  Call* call_;
  SignalPolicy policy_;
  int signal_fd_ = -1;
  int cancel_fd_ = -1;
  int parent_fd_ = -1;
  int reader_fd_ = -1;
  Capture* capture_ = nullptr;
  int first_signal_ = 0;
  bool cancelled_ = false;  // a cancel came (a signal, the cancel fd, finish)
  bool cancel_done_ = false;
  bool cancelled_now_ = false;
  bool parent_exited_ = false;
};

// Processes of this one's that may still be on their way to become its
// zombies (they just left a boundary) get up to `bound_ns` to arrive and are
// reaped: until no child is a zombie and, with wait_live, none is alive
// either (a live one below a strong boundary is exiting). `helper` (pmon's
// own, 0: none) is left alone. The driver reads signals meanwhile.
void reap_stragglers(Driver& driver, sys::Reaper& reaper, int64_t bound_ns, bool wait_live, pid_t helper);

}  // namespace pmon
