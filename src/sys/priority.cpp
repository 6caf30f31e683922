// SPDX-License-Identifier: Apache-2.0
#include "sys/priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>

namespace pmon::sys {

namespace {

struct Raise {
  int holds = 0;
  int before = 0;  // the thread's value before the first hold
  bool raised = false;
};

std::mutex mu;
// Threads raised now: a spawn reads the map only when some are.
std::atomic<int> raised_threads{0};
std::map<pid_t, Raise>& raises() {
  static std::map<pid_t, Raise> m;
  return m;
}

// The lowest nice value this thread may set without CAP_SYS_NICE.
int rlimit_floor() noexcept {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NICE, &rl) != 0 || rl.rlim_cur == 0) return 20;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 40) return -20;
  return 20 - static_cast<int>(rl.rlim_cur);
}

// Nice values are per thread on Linux: PRIO_PROCESS with a thread id.
bool raise_thread(pid_t tid, int before) noexcept {
  const int want = std::max(before - kStopBoost, -20);
  if (want >= before) return false;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), want) == 0) return true;
  const int floor = std::max(want, rlimit_floor());
  return floor < before && ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), floor) == 0;
}

}  // namespace

StopPriority& StopPriority::operator=(StopPriority&& o) noexcept {
  if (this != &o) {
    release();
    tid_ = o.tid_;
    o.tid_ = 0;
  }
  return *this;
}

void StopPriority::take() noexcept {
  if (tid_ != 0) return;
  const pid_t tid = ::gettid();
  std::lock_guard lock(mu);
  Raise& r = raises()[tid];
  if (r.holds++ == 0) {
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    r.before = now;
    r.raised = (now != -1 || errno == 0) && raise_thread(tid, now);
    if (r.raised) raised_threads.fetch_add(1, std::memory_order_relaxed);
  }
  tid_ = tid;
}

void StopPriority::release() noexcept {
  if (tid_ == 0) return;
  std::lock_guard lock(mu);
  auto it = raises().find(tid_);
  if (it != raises().end() && --it->second.holds == 0) {
    // Raising a nice value back is always allowed.
    if (it->second.raised) {
      (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), it->second.before);
      raised_threads.fetch_sub(1, std::memory_order_relaxed);
    }
    raises().erase(it);
  }
  tid_ = 0;
}

int unraised_nice() noexcept {
  if (raised_threads.load(std::memory_order_relaxed) == 0) return kKeepNice;
  const pid_t tid = ::gettid();
  std::lock_guard lock(mu);
  auto it = raises().find(tid);
  return it != raises().end() && it->second.raised ? it->second.before : kKeepNice;
}

}  // namespace pmon::sys
