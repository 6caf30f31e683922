// SPDX-License-Identifier: Apache-2.0
// The machine of one call, behind its handle (core/call.h): its state and
// phases, held by call.cpp (start, run, stop, collect, result) and
// call_escapes.cpp (the zombies on their way, what escaped the boundary).
// Not for anyone else.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/call_options.h"
#include "core/result.h"
#include "core/stopper.h"
#include "sys/priority.h"
#include "sys/syscalls.h"

namespace pmon {

namespace call_detail {

using sys::kForever;
// How long the main process may take to be collectable once its tree was
// stopped; how long processes that just left the boundary may take to
// become our zombies; how often to look meanwhile.
constexpr int64_t kCollectNs = 5'000'000'000;
constexpr int64_t kSettleNs = 100'000'000;
constexpr int64_t kSettlePollNs = 5'000'000;

enum class Phase {
  created,
  running,          // until the main process exits, the timeout or a cancel
  waiting_tree,     // wait_tree: the main process is gone, the rest waited for
  stopping,         // the stop plan on the boundary
  collecting_main,  // the stop is over; the main process is collected
  settling,         // zombies of the call still on their way to us
  escapes_waiting,  // wait_tree: what escaped the boundary, waited for
  escapes_stopping, // the stop plan on what escaped the boundary
  done,
};

}  // namespace call_detail

struct CallMachine {
  using Phase = call_detail::Phase;
  using End = CallEnd;

  CallMachine(Backend* b, RunOptions o)
      : backend(b), opts(std::move(o)), own_reaper(opts.own_all_children),
        reaper(opts.reaper != nullptr ? opts.reaper : &own_reaper) {}

  Backend* backend;  // null: the boundary was given
  RunOptions opts;
  sys::Reaper own_reaper;
  sys::Reaper* reaper;
  int64_t t0 = 0;
  int64_t timeout_at = call_detail::kForever;
  // When no output for opts.idle_timeout ends it (kForever: none, or held
  // while the caller does not read).
  int64_t idle_at = call_detail::kForever;
  bool idle_held = false;
  // The end whose time has come at `now`, if any: timeout before
  // idle_timeout.
  std::optional<CallEnd> due_end(int64_t now) const noexcept {
    if (timeout_at != call_detail::kForever && now >= timeout_at) return CallEnd::timeout;
    if (idle_at != call_detail::kForever && now >= idle_at) return CallEnd::idle_timeout;
    return std::nullopt;
  }
  int64_t next_end_at() const noexcept { return std::min(timeout_at, idle_at); }
  // When the processes left at the timeout are looked at ahead of it (see
  // LeftoverTracker::snapshot_ahead), so that the stop's signals go out at
  // the timeout itself; kForever: not (taken, or no timeout to come).
  int64_t ahead_at = call_detail::kForever;
  void look_ahead(int64_t now);
  std::unique_ptr<Boundary> b;
  Child child;
  RunResult res;
  RunResult result;
  bool main_exited = false;
  uint64_t cpu_before = 0;  // the reaper's count when the call began
  // In a session: its memory.events high and pids.events max when the call
  // began, so that a throttle or a refused fork while it ran is the call's
  // to report too (the session's limit, not the call's leaf, counted it).
  CgroupUsage session_before;
  int cancel_sig = 0;
  bool escalated = false;
  StopReason reason = StopReason::none;
  LeftoverTracker leftovers;
  Phase phase = Phase::created;
  std::unique_ptr<StopMachine> machine;
  // Held until the call is done (sys/priority.h), so that a busy tree
  // cannot starve its own stop: from the first look at what is left, or
  // from the start for a call with a deadline and a thread of its own
  // (RunOptions::realtime_stop). Real-time for such a call, and wherever
  // the boundary is found by walking /proc.
  sys::StopPriority priority;
  void raise_priority() {
    const ConfineKind k = b->kind();
    priority.take(opts.realtime_stop || k == ConfineKind::subreaper || k == ConfineKind::pgroup);
  }
  int64_t phase_deadline = call_detail::kForever;
  bool boundary_empty = false;  // the boundary's own verdict, for its release
  // Settling: waiting first for the tracked processes to finish exiting;
  // the round after the escapes' stop is the last.
  bool settle_exiting = false;
  bool settled_once = false;
  int64_t settle_until = 0;
  // What escaped the boundary: everything below this process, by the
  // subreaper backend's walk.
  std::unique_ptr<Backend> below_backend;
  std::unique_ptr<Boundary> below;
  LeftoverTracker found;
  std::vector<Leftover> escaped;
  StopRecord escape_record;

  double since_start_ms() const { return (sys::monotonic_ns() - t0) / 1e6; }
  void trace(const std::string& line) const {
    if (opts.trace) opts.trace(line);
  }

  void note_main_exit();
  void begin_end(End why);
  // The call ends for `why` (not main_exited): its tree is stopped.
  void stop_for(End why);
  void start_stop(StopReason why);
  void stop_context(StopContext& ctx);
  void check_tree();
  void after_stop();
  void collect_main();
  void start_settling();
  void settle();
  void start_escapes();
  void check_escapes();
  void start_escape_stop(StopReason why);
  void end_escape_stop();
  void end_escapes(bool verified);
  void wrap_up();
  void take_step();
};

}  // namespace pmon
