// SPDX-License-Identifier: Apache-2.0
// Finding pmon's leaves on this host and telling whose they are. A leaf is
// named pmon-<owner pid>-<owner start time>-<seq>: the owner is alive when a
// process with that pid and that start time exists (a recycled pid has
// another start time). Used by `pmon gc` (leaves of dead owners) and
// `pmon ps` (leaves of live ones).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/result.h"

namespace pmon {

struct LeafName {
  pid_t owner_pid = 0;
  uint64_t owner_start = 0;
  uint64_t seq = 0;
};

// Parses "pmon-<pid>-<start>-<seq>" (decimal, nothing else); other names,
// e.g. pmon-test-x or pmon-bench-1, are not leaves.
std::optional<LeafName> parse_leaf_name(std::string_view name) noexcept;

struct LeafInfo {
  std::string path;  // absolute, under the cgroup2 mount
  LeafName name;
  bool owner_alive = false;
};

// Every pmon leaf below `mount` (a cgroup2 mount), found by walking the tree;
// a leaf's own sub-cgroups (the call's) are not entered. Directories we may
// not read are skipped.
std::vector<LeafInfo> find_leaves(const std::string& mount);

// Is the process (pid, start time) alive (not gone, not a zombie)?
bool process_alive(pid_t pid, uint64_t start_time) noexcept;

// A process in a leaf (or below it).
struct LeafProcess {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
  std::string command;
  int depth = 0;  // in the tree of the leaf's processes, 0 for roots
};

// The leaf's processes as a tree (parents before children, depth-first).
std::vector<LeafProcess> leaf_processes(const std::string& path);

// Stops everything in the leaf (cgroup.kill), waits up to timeout_ms for
// populated 0, and removes it with the cgroups below it.
Result<void> clean_leaf(const std::string& path, int timeout_ms) noexcept;

}  // namespace pmon
