// SPDX-License-Identifier: Apache-2.0
// A stop's scheduling priority. A tree being stopped may keep every CPU
// busy with hundreds of runnable processes (a fork storm), and the thread
// that stops it is then one runnable task among them: its /proc walks and
// kills, a few milliseconds of CPU, take seconds. While a stop is under
// way (for a call with a deadline and a thread of its own, from the
// call's start) the thread raises its own priority by kStopBoost nice
// levels, as far as the system lets it (CAP_SYS_NICE, RLIMIT_NICE;
// otherwise not at all), and takes back its own value once no stop of its
// is left. A child
// cloned meanwhile starts at the value the thread had before (ChildPlan::nice).
//
// Nice levels count only among the processes of one session where the
// kernel groups them by session (autogroup): a storm whose every member
// starts a session of its own then gets a share per member, and the stop
// thread one among hundreds whatever its nice value. A stop that finds
// the tree by walking /proc, and a call with a thread of its own, ask for
// `realtime`: the thread then runs under SCHED_RR at the lowest real-time
// priority, which is above every ordinary process, with
// SCHED_RESET_ON_FORK so that no child inherits it (where the system
// refuses it, the nice levels as above).
#pragma once

#include <sys/types.h>

#include <climits>

namespace pmon::sys {

constexpr int kStopBoost = 10;
// ChildPlan::nice: leave the child's nice value as it is.
constexpr int kKeepNice = INT_MIN;

// Held for as long as one stop is under way. Stops held on one thread at
// the same time share one raise; the last one to end takes it back.
// Released on the thread it was taken on or any other.
class StopPriority {
 public:
  StopPriority() noexcept = default;
  StopPriority(const StopPriority&) = delete;
  StopPriority& operator=(const StopPriority&) = delete;
  ~StopPriority() { release(); }

  // Takes one hold for the calling thread (a second take is a no-op but
  // for asking for `realtime`, which a hold may do later).
  void take(bool realtime = false) noexcept;
  void release() noexcept;

 private:
  pid_t tid_ = 0;
  bool realtime_ = false;
};

// Gives pid, a process of pmon's own that passes a stop's signals on (a
// PID namespace's init), the calling thread's raise if it holds one: the
// real-time policy (with SCHED_RESET_ON_FORK) or its nice value. Without
// that a busy tree starves the helper, and the signal it is to pass on
// arrives late. Where the system refuses, nothing changes. The helper is
// not lowered again: it ends with the stop. The caller keeps pid from
// being reused meanwhile (a child not yet reaped).
bool lend_priority(pid_t pid) noexcept;

// The nice value a child cloned by the calling thread should start with:
// the thread's own before its stops raised it, or kKeepNice when it holds
// none.
int unraised_nice() noexcept;

}  // namespace pmon::sys
