// SPDX-License-Identifier: Apache-2.0
#include "confine/scan.h"

#include <algorithm>
#include <mutex>

#include "sys/syscalls.h"

namespace pmon::confine {

namespace {
// Past this many members a waiter re-scans on a timer instead of polling
// one pidfd each (keeps the fd table small during a fork storm).
constexpr size_t kMaxWatched = 256;
constexpr int kRescanMs = 5;
}  // namespace

int signal_listed(const std::vector<sys::ProcStat>& procs, int sig) noexcept {
  int sent = 0;
  for (const sys::ProcStat& p : procs) {
    auto fd = sys::open_identified(p.pid, p.start_time, p.ppid);
    if (!fd) continue;
    if (sys::pidfd_send_signal(fd->get(), sig) == 0) ++sent;
  }
  return sent;
}

Watch PidfdWatch::refresh(const std::vector<sys::ProcStat>& members) {
  fds_.clear();
  Watch w;
  for (const sys::ProcStat& p : members) {
    if (fds_.size() == kMaxWatched) {
      w.rescan_ms = kRescanMs;
      break;
    }
    auto fd = sys::open_identified(p.pid, p.start_time);
    if (!fd) continue;
    w.fds.push_back({fd->get(), POLLIN, 0});
    fds_.push_back(std::move(*fd));
  }
  // A member that was unreachable (a zombie or gone) makes the scan stale:
  // look again soon rather than trust a set we could not watch.
  if (fds_.size() < std::min(members.size(), kMaxWatched)) w.rescan_ms = kRescanMs;
  // No members now, though the caller saw some a moment ago (empty() and
  // watch() are two scans): the last one died in between, and an empty watch
  // would sleep until the deadline. Look again at once.
  if (members.empty()) w.rescan_ms = 0;
  return w;
}

namespace {
std::mutex g_helpers_mu;
std::vector<pid_t> g_helpers;
}  // namespace

void register_helper(pid_t pid) {
  std::lock_guard lock(g_helpers_mu);
  g_helpers.push_back(pid);
}

void unregister_helper(pid_t pid) {
  std::lock_guard lock(g_helpers_mu);
  std::erase(g_helpers, pid);
}

bool is_helper(pid_t pid) {
  std::lock_guard lock(g_helpers_mu);
  return std::find(g_helpers.begin(), g_helpers.end(), pid) != g_helpers.end();
}

std::vector<sys::ProcStat> live_only(std::vector<sys::ProcStat> procs) {
  std::erase_if(procs, [](const sys::ProcStat& p) { return p.dead(); });
  return procs;
}

}  // namespace pmon::confine
