// SPDX-License-Identifier: Apache-2.0
// Where cgroup v2 lives on this host and where this process sits in it; the
// cgroups below a directory, their processes, and their removal.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "confine/error.h"

namespace pmon::confine {

struct CgroupLocation {
  std::string mount;     // e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified
  std::string own;       // this process's cgroup, relative ("/" or "/a/b")
  std::string own_path;  // mount + own
};

// The cgroup2 mount and this process's cgroup ("0::" in /proc/self/cgroup).
// The mount is /sys/fs/cgroup or /sys/fs/cgroup/unified when either is a
// cgroup2 mount of the whole hierarchy (statfs, no mountinfo), else the
// first cgroup2 mount in /proc/self/mountinfo. Else why not (unsupported).
std::expected<CgroupLocation, Error> locate_cgroup2();

// The same from mountinfo alone (the first cgroup2 mount, any root).
std::expected<CgroupLocation, Error> locate_cgroup2_by_mountinfo();

// The names of the cgroups directly below `dir` (empty when unreadable).
std::vector<std::string> child_cgroups(const std::string& dir);

// Appends the pids in cgroup.procs of `dir` and of every cgroup below it (a
// call may make sub-cgroups where it can write), at most 32 levels deep.
void cgroup_tree_pids(const std::string& dir, std::vector<int>& out, int depth = 0);

// Appends the pids of a cgroup.procs text (one decimal a line) to `out`.
void parse_pid_list(const std::string& text, std::vector<int>& out);

// The cgroup of another process, relative to the same mount ("" if gone or
// not on cgroup2).
std::string cgroup_of(int pid);

// Child cgroups of a cgroup directory without listing it: kernfs counts
// them in the link count (2 + subdirectories). -1 when unknown.
long child_cgroup_count(int dirfd) noexcept;

// Removes cgroup `name` under `parent` and every cgroup a call made below
// it, deepest first: rmdir refuses a cgroup that has children. `childless`:
// the caller has just seen it has none (no need to open it to look). A
// cgroup whose last task is still exiting may answer EBUSY for a moment:
// tried again for up to about 50 ms.
void remove_cgroup_tree(int parent, const char* name, bool childless = false) noexcept;

}  // namespace pmon::confine
