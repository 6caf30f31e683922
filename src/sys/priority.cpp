// SPDX-License-Identifier: Apache-2.0
#include "sys/priority.h"

#include <sched.h>
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
  bool raised = false;    // its nice value, or
  bool realtime = false;  // its policy (SCHED_RR, from SCHED_OTHER)
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

// SCHED_RR at the lowest real-time priority, for a thread that runs
// SCHED_OTHER now (one that runs under another policy was put there by
// someone: it is left as it is).
bool to_realtime(pid_t tid) noexcept {
  if (::sched_getscheduler(tid) != SCHED_OTHER) return false;
  struct sched_param sp {};
  sp.sched_priority = 1;
  return ::sched_setscheduler(tid, SCHED_RR | SCHED_RESET_ON_FORK, &sp) == 0;
}

}  // namespace

void StopPriority::take(bool realtime) noexcept {
  if (tid_ != 0 && (realtime_ || !realtime)) return;
  const pid_t tid = tid_ != 0 ? tid_ : ::gettid();
  std::lock_guard lock(mu);
  Raise& r = raises()[tid];
  if (tid_ == 0 && r.holds++ == 0) {
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    r.before = now;
    if (now == -1 && errno != 0) r.before = 0;
    else if (!(realtime && (r.realtime = to_realtime(tid)))) r.raised = raise_thread(tid, now);
    if (r.raised || r.realtime) raised_threads.fetch_add(1, std::memory_order_relaxed);
  } else if (realtime && !r.realtime && (r.realtime = to_realtime(tid))) {
    if (!r.raised) raised_threads.fetch_add(1, std::memory_order_relaxed);
  }
  tid_ = tid;
  realtime_ = realtime_ || realtime;
}

void StopPriority::release() noexcept {
  if (tid_ == 0) return;
  std::lock_guard lock(mu);
  auto it = raises().find(tid_);
  if (it != raises().end() && --it->second.holds == 0) {
    // Raising a nice value back is always allowed.
    const Raise& r = it->second;
    if (r.realtime) {
      struct sched_param sp {};
      (void)::sched_setscheduler(tid_, SCHED_OTHER, &sp);
    }
    if (r.raised) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), r.before);
    if (r.raised || r.realtime) raised_threads.fetch_sub(1, std::memory_order_relaxed);
    raises().erase(it);
  }
  tid_ = 0;
  realtime_ = false;
}

bool lend_priority(pid_t pid) noexcept {
  if (pid <= 0 || raised_threads.load(std::memory_order_relaxed) == 0) return false;
  const pid_t tid = ::gettid();
  std::lock_guard lock(mu);
  auto it = raises().find(tid);
  if (it == raises().end()) return false;
  if (it->second.realtime) return to_realtime(pid);
  if (!it->second.raised) return false;
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  return errno == 0 && ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), now) == 0;
}

int unraised_nice() noexcept {
  if (raised_threads.load(std::memory_order_relaxed) == 0) return kKeepNice;
  const pid_t tid = ::gettid();
  std::lock_guard lock(mu);
  auto it = raises().find(tid);
  return it != raises().end() && (it->second.raised || it->second.realtime) ? it->second.before : kKeepNice;
}

}  // namespace pmon::sys
