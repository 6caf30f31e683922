// SPDX-License-Identifier: Apache-2.0
// One cgroup leaf of the cgroup backend (confine/cgroup.cpp): its directory
// and the files a call reads through it, kept open while the leaf lives
// (pooled for the next call or retired), and what is known of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "confine/error.h"
#include "sys/fd.h"

namespace pmon::confine {

struct CgroupLeaf {
  std::string name;
  Fd parent;  // made inside another call's leaf (open_boundary_inside); else in the base
  Fd dir;
  Fd events;
  Fd cpu_stat;            // kept open, read with pread
  Fd procs;               // cgroup.procs: opened at the first listing, then read with pread
  bool memory = false;    // accounts memory (memory.peak): never reused
  bool limited = false;   // had limits set: never reused, so no later call inherits one
  bool pids_default = false;  // pids.max is kDefaultPidsMax (reused: the next call wants it too)
  std::optional<Error> pids_refused;  // no default pids.max here (no controller): told again for 1 s, unasked
  std::chrono::steady_clock::time_point pids_refused_at;
  uint64_t cpu_seen = 0;  // cpu.stat usage_usec when last released
};

// The leaf's cgroup.procs, read from its start through the fd kept with
// the leaf (a stop lists it two or three times; opening and closing a
// cgroup file costs more than reading it); nullopt when it cannot be read.
std::optional<std::string> read_listing(CgroupLeaf& leaf);

}  // namespace pmon::confine
