// SPDX-License-Identifier: Apache-2.0
// Where the cgroup backend makes its leaves: below pmon's own cgroup, in a
// scope systemd delegates to it when that is not writable (or is a
// manager's), or below a cgroup root the caller names; checked for what
// CLONE_INTO_CGROUP needs.
#pragma once

#include <expected>
#include <string>

#include "confine/cgroup_fs.h"
#include "confine/error.h"
#include "sys/fd.h"

namespace pmon::confine {

struct LeafBase {
  CgroupLocation loc;     // the mount and pmon's own cgroup (after a move into a scope)
  std::string base_rel;   // where the leaves go, relative to the mount
  std::string base_path;  // the same, absolute
  Fd base;                // its directory
  std::string systemd_note;   // why no scope came, for the errors that follow
  std::string fallback_note;  // a manager's cgroup used all the same, for -v and doctor
};

// `cgroup_root`: the caller's choice ("" for pmon's own cgroup).
std::expected<LeafBase, Error> choose_leaf_base(const std::string& cgroup_root);

// The lowest common ancestor of two relative cgroup paths.
std::string common_ancestor(const std::string& a, const std::string& b);

}  // namespace pmon::confine
