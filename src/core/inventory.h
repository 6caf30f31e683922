// SPDX-License-Identifier: Apache-2.0
// Finding pmon's leaves on this host and telling whose they are. A leaf is
// named pmon-<owner pid>-<owner start time>-<owner's PID namespace>-<seq>
// (an older pmon's: pmon-<pid>-<start>-<seq>). Its owner is judged only from
// the PID namespace that numbered it: alive when a process with that pid
// and that start time exists (a recycled pid has another start time), gone
// when none does. A leaf of another PID namespace (a container's seen from
// the host, the host's seen from a container that shares its cgroups), or
// an older pmon's, which does not say its namespace, is never judged gone:
// its pid may be a live pmon that we cannot see. Used by `pmon gc` (leaves of
// dead owners) and `pmon ps` (leaves of live ones).
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
  std::optional<uint64_t> pid_namespace;  // none in an older pmon's name
  uint64_t seq = 0;
};

// Parses "pmon-<pid>-<start>-<pidns>-<seq>" and the older
// "pmon-<pid>-<start>-<seq>" (decimal, nothing else); other names, e.g.
// pmon-test-x or pmon-bench-1, are not leaves.
std::optional<LeafName> parse_leaf_name(std::string_view name) noexcept;

enum class Owner {
  alive,
  gone,
  // Not of this PID namespace, or not known to be: left alone.
  other_namespace,
  unknown_namespace,  // an older pmon's name, its owner not alive here
};

struct LeafInfo {
  std::string path;  // absolute, under the cgroup2 mount
  LeafName name;
  Owner owner = Owner::unknown_namespace;
  bool owner_alive() const { return owner == Owner::alive; }
  bool owner_gone() const { return owner == Owner::gone; }
};

// Every pmon leaf below `mount` (a cgroup2 mount), found by walking the tree;
// a leaf's own sub-cgroups (the call's) are not entered. Directories we may
// not read are skipped.
std::vector<LeafInfo> find_leaves(const std::string& mount);

// How the owner `n` names is, judged from this process's PID namespace
// (`self_ns`; none when /proc is not of it: nothing is judged gone then).
Owner judge_owner(const LeafName& n, std::optional<uint64_t> self_ns) noexcept;

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
