// SPDX-License-Identifier: Apache-2.0
// Executes a StopPlan on a Boundary: signal, wait for empty, escalate,
// verify. The caller supplies how to wait (its own event loop: a signalfd to
// keep reaping, a second cancel to skip the grace), so run, supervise, init
// and the binding all stop trees the same way.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "confine/boundary.h"
#include "core/result.h"
#include "core/stop.h"
#include "sys/fd.h"

namespace pmon {

enum class StopWake { changed, deadline, escalate };

// How the stopper blocks: until one of `w` fires (or its rescan interval
// passes), until `deadline` (CLOCK_MONOTONIC ns), or until the user asks to
// skip the grace period.
class StopWaiter {
 public:
  virtual ~StopWaiter() = default;
  virtual StopWake wait(int64_t deadline, const Watch& w) = 0;
};

// A waiter that polls the boundary only.
class PollWaiter final : public StopWaiter {
 public:
  StopWake wait(int64_t deadline, const Watch& w) override;
};

// The processes of a boundary at one moment, each held by a pidfd so that
// what happened to it can be told later without trusting its number.
class LeftoverTracker {
 public:
  // A snapshot looks at its first kAlwaysLooked processes whatever the
  // time, and at more only for `look_ns` (counted from the end of the
  // listing): a tree that starves pmon of CPU makes each look slow, and
  // what is not looked at is still stopped and verified gone, only not
  // named. Their command lines are read on a thread of their own and
  // waited for within the same time: a read waits for the process's
  // memory map, which a process in the middle of a fork holds, and a
  // storm of them starved of CPU can hold it for seconds. One not read in
  // time is named by its process name ("[name]"), or by its command line
  // if that comes before the call's result is made.
  static constexpr size_t kAlwaysLooked = 64;
  static constexpr int64_t kLookNs = 100'000'000;
  LeftoverTracker() = default;
  // `read_cmdline`: how a command line is read (sys::read_cmdline; a
  // test's own, to hold one back).
  explicit LeftoverTracker(int64_t look_ns, std::string (*read_cmdline)(pid_t) = nullptr)
      : look_ns_(look_ns), read_cmdline_(read_cmdline) {}

  // The boundary's processes now, `exclude_pid` left out. After a snapshot
  // taken ahead, only what is new is looked at: what was tracked and is
  // still listed and alive is kept as it was read then, what is gone is
  // dropped (it ended before the stop: not left over).
  void snapshot(Boundary& b, pid_t exclude_pid);
  // A snapshot taken ahead of a known deadline, so that looking at each
  // process (a pidfd, its stat and cmdline: some 40 us each) is done
  // before the stop's first signal instead of delaying it; the stop's own
  // snapshot() then refreshes it.
  void snapshot_ahead(Boundary& b, pid_t exclude_pid);
  bool taken_ahead() const noexcept { return ahead_; }
  // Gives `fate` to every tracked process that has died since.
  void label_dead(Fate fate);
  // Gives `fate` to every tracked process without one.
  void label_rest(Fate fate);
  // Waits until every tracked process has finished exiting (its pidfd is
  // readable: the kernel has reparented its children by then), or until
  // the deadline. A boundary reads empty a moment before that.
  void wait_exited(int64_t deadline) const;
  // Whether every tracked process has finished exiting, and what to poll
  // until they have (their pidfds).
  bool all_exited() const;
  Watch watch() const;
  // The boundary's listing the last snapshot ended with (listed_pids(), the
  // main process included), where the boundary has one.
  const std::optional<std::vector<pid_t>>& last_listing() const noexcept { return listing_; }
  bool empty() const noexcept { return tracked_.empty(); }
  size_t size() const noexcept { return tracked_.size(); }
  std::vector<Leftover> take();

 private:
  struct Tracked {
    Leftover info;
    Fd pidfd;
    std::string comm;     // its name, from the stat read when it was looked at
    bool named = false;   // its command line read (info.cmdline)
    // Set by the thread that has read its command line (Names::One::done):
    // a later snapshot's thread skips it then. Null until first asked for.
    std::shared_ptr<std::atomic<bool>> done;
  };
  struct Names;  // command lines being read on a thread of their own
  // What a snapshot taken ahead still says of now: drops what is not in
  // `listed` (sorted) or has died, and returns the pids it keeps, sorted.
  std::vector<pid_t> keep_listed(const std::vector<pid_t>& listed);
  bool enough(size_t looked, int64_t from) const;
  int64_t names_by(int64_t from) const;
  // Reads the command lines of what is tracked and not yet named, waiting
  // for them until `deadline` at most (see read_names in stopper.cpp).
  void read_names(int64_t deadline);
  // Takes the command lines read since.
  void take_names();
  bool track(pid_t pid);  // a listed pid, looked at; false: gone meanwhile
  std::vector<pid_t> tracked_pids() const;  // sorted

  std::vector<Tracked> tracked_;
  std::optional<std::vector<pid_t>> listing_;
  bool ahead_ = false;
  int64_t look_ns_ = kLookNs;
  std::string (*read_cmdline_)(pid_t) = nullptr;  // nullptr: sys::read_cmdline
  std::vector<std::shared_ptr<Names>> names_;  // read on, or not yet taken
};

struct StopContext {
  Boundary* boundary = nullptr;
  const StopPlan* plan = nullptr;
  StopWaiter* waiter = nullptr;
  LeftoverTracker* leftovers = nullptr;  // may be null
  int main_pidfd = -1;     // also signalled directly while alive; -1: none
  pid_t main_pid = 0;      // main_pidfd's process (a child not yet reaped), or 0
  // The main process's pidfd, whether it has exited or not: the process
  // group it started (it leads a session of its own) gets each SIGKILL in
  // one pass in the kernel, which no member can outrun by forking, as it
  // can a /proc walk. Members that left the group are the boundary's to
  // find. -1: none.
  int group_pidfd = -1;
  int64_t t0_ns = 0;       // for the *_ms fields of the record
  // The boundary's members as listed a moment ago (a snapshot taken for
  // this stop), where the first signal pass starts instead of listing
  // again; null: the pass lists. (One that appears since gets the kill.)
  const std::vector<pid_t>* listed = nullptr;
  bool skip_grace = false; // start at the first kill step
};

// The plan as a state machine, for a caller whose one thread serves other
// work while a tree stops (pmon serve): start() sends the first step's
// action; the caller waits on watch() and deadline() in its own event loop
// and hands each wake to on_wake(). execute_stop is this machine driven by
// a StopWaiter, so every front end escalates the same way.
class StopMachine {
 public:
  StopMachine(const StopContext& ctx, StopRecord& record) : ctx_(ctx), record_(record) {}
  void start();
  void on_wake(StopWake wake);
  bool done() const noexcept { return done_; }
  bool verified() const noexcept { return verified_; }
  // CLOCK_MONOTONIC ns at which the current step gives up waiting.
  int64_t deadline() const noexcept { return deadline_; }
  // What to poll until the boundary may have changed (refreshed per call).
  Watch watch() { return ctx_.boundary->watch(); }

 private:
  void run_steps();  // from step i_ on, until one has to wait
  bool step_is_kill() const;
  void kill_group();
  void end_step(bool emptied);
  void finish(bool verified);
  double since_ms() const;

  StopContext ctx_;
  StopRecord& record_;
  size_t i_ = 0;
  bool skip_grace_ = false;
  int64_t deadline_ = 0;
  bool done_ = false;
  bool verified_ = false;
};

// Runs the plan; true when the boundary was confirmed empty.
bool execute_stop(const StopContext& ctx, StopRecord& record);

}  // namespace pmon
