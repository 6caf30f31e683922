// SPDX-License-Identifier: Apache-2.0
#include "core/inventory.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "confine/cgroup_fs.h"
#include "confine/cgroup_kill.h"
#include "sys/fd.h"
#include "sys/numbers.h"
#include "sys/proc.h"

namespace pmon {

namespace {

void walk(const std::string& dir, int depth, std::optional<uint64_t> self_ns, std::vector<LeafInfo>& out) {
  if (depth > 64) return;
  std::vector<std::string> subs = confine::child_cgroups(dir);
  std::sort(subs.begin(), subs.end());
  for (const std::string& s : subs) {
    std::string path = dir + "/" + s;
    if (auto n = parse_leaf_name(s)) {
      out.push_back({path, *n, judge_owner(*n, self_ns)});
      continue;  // below a leaf are the call's own cgroups
    }
    walk(path, depth + 1, self_ns, out);
  }
}


}  // namespace

std::optional<LeafName> parse_leaf_name(std::string_view name) noexcept {
  constexpr std::string_view kPrefix = "pmon-";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  std::string_view parts[4];
  size_t count = 0;
  for (;;) {
    if (count == 4) return std::nullopt;
    const size_t dash = name.find('-');
    parts[count++] = name.substr(0, dash);
    if (dash == std::string_view::npos) break;
    name.remove_prefix(dash + 1);
  }
  if (count < 3) return std::nullopt;
  LeafName n;
  uint64_t pid = 0, ns = 0;
  if (!sys::parse_name_number(parts[0], pid) || !sys::parse_name_number(parts[1], n.owner_start) ||
      !sys::parse_name_number(parts[count - 1], n.seq))
    return std::nullopt;
  if (count == 4) {
    if (!sys::parse_name_number(parts[2], ns)) return std::nullopt;
    n.pid_namespace = ns;
  }
  if (pid == 0 || pid > 4194304) return std::nullopt;  // PID_MAX_LIMIT
  n.owner_pid = static_cast<pid_t>(pid);
  return n;
}

Owner judge_owner(const LeafName& n, std::optional<uint64_t> self_ns) noexcept {
  const uint64_t self = self_ns.value_or(0);  // 0: /proc is not of our namespace
  const uint64_t theirs = n.pid_namespace.value_or(0);  // 0: unsaid (an older pmon, or unread)
  if (self == 0) return Owner::unknown_namespace;
  if (theirs != 0 && theirs != self) return Owner::other_namespace;
  const bool alive = process_alive(n.owner_pid, n.owner_start);
  if (theirs == self) return alive ? Owner::alive : Owner::gone;
  return alive ? Owner::alive : Owner::unknown_namespace;
}

bool process_alive(pid_t pid, uint64_t start_time) noexcept {
  auto st = sys::read_stat(pid);
  return st && st->start_time == start_time && !st->dead();
}

std::vector<LeafInfo> find_leaves(const std::string& mount) {
  std::vector<LeafInfo> out;
  auto ns = sys::self_pid_namespace();
  walk(mount, 0, ns ? std::optional<uint64_t>(*ns) : std::nullopt, out);
  return out;
}

std::vector<LeafProcess> leaf_processes(const std::string& path) {
  std::vector<pid_t> pids;
  confine::cgroup_tree_pids(path, pids);
  std::vector<sys::ProcStat> stats;
  for (pid_t p : pids)
    if (auto st = sys::read_stat(p)) stats.push_back(*st);
  std::sort(stats.begin(), stats.end(), [](const sys::ProcStat& a, const sys::ProcStat& b) { return a.pid < b.pid; });
  auto in_leaf = [&](pid_t p) {
    return std::any_of(stats.begin(), stats.end(), [&](const sys::ProcStat& s) { return s.pid == p; });
  };
  std::vector<LeafProcess> out;
  std::function<void(const sys::ProcStat&, int)> add = [&](const sys::ProcStat& s, int depth) {
    out.push_back({s.pid, s.ppid, s.state, sys::read_cmdline(s.pid), depth});
    for (const sys::ProcStat& c : stats)
      if (c.ppid == s.pid && c.pid != s.pid) add(c, depth + 1);
  };
  // Roots: processes whose parent is not in the leaf (the main process, and
  // daemons reparented away).
  for (const sys::ProcStat& s : stats)
    if (!in_leaf(s.ppid)) add(s, 0);
  return out;
}

Result<void> clean_leaf(const std::string& path, int timeout_ms) noexcept {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return fail(EINVAL);
  std::string parent = path.substr(0, slash), name = path.substr(slash + 1);
  Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return fail_errno();
  int e = confine::kill_and_remove_cgroup(dir.get(), name.c_str(), timeout_ms);
  if (e != 0) return fail(e);
  return {};
}

}  // namespace pmon
