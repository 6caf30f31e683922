// SPDX-License-Identifier: Apache-2.0
// A stop's scheduling priority. A tree being stopped may keep every CPU
// busy with hundreds of runnable processes (a fork storm), and the thread
// that stops it is then one runnable task among them: its /proc walks and
// kills, a few milliseconds of CPU, take seconds. While a stop is under
// way the thread raises its own priority by kStopBoost nice levels, as far
// as the system lets it (CAP_SYS_NICE, RLIMIT_NICE; otherwise not at all),
// and takes back its own value once no stop of its is left. A child
// cloned meanwhile starts at the value the thread had before (ChildPlan::nice).
#pragma once

#include <sys/types.h>

#include <climits>

namespace pmon::sys {

constexpr int kStopBoost = 10;
// ChildPlan::nice: leave the child's nice value as it is.
constexpr int kKeepNice = INT_MIN;

// Held for as long as one stop is under way. Stops held on one thread at
// the same time share one raise; the last one to end takes it back. Moved,
// not copied; released on the thread it was taken on or any other.
class StopPriority {
 public:
  StopPriority() noexcept = default;
  StopPriority(StopPriority&& o) noexcept : tid_(o.tid_) { o.tid_ = 0; }
  StopPriority& operator=(StopPriority&& o) noexcept;
  StopPriority(const StopPriority&) = delete;
  StopPriority& operator=(const StopPriority&) = delete;
  ~StopPriority() { release(); }

  // Takes one hold for the calling thread (a second take is a no-op).
  void take() noexcept;
  void release() noexcept;
  bool held() const noexcept { return tid_ != 0; }

 private:
  pid_t tid_ = 0;
};

// The nice value a child cloned by the calling thread should start with:
// the thread's own before its stops raised it, or kKeepNice when it holds
// none.
int unraised_nice() noexcept;

}  // namespace pmon::sys
