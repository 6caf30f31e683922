// SPDX-License-Identifier: Apache-2.0
// A cgroup leaf's limits: the controllers they need (enabled in the leaves'
// parent where pmon may), memory.max, memory.high, pids.max and cpu.max as
// asked (failing closed), and the default pids.max of a call that asked none
// (never failing the call). Used by the cgroup backend (cgroup.cpp).
#pragma once

#include <cstdint>
#include <expected>
#include <mutex>
#include <string>

#include "confine/error.h"
#include "confine/limits.h"

namespace pmon::confine {

// The leaves' parent, where their controllers come from.
struct ControllerSite {
  int base_fd = -1;
  std::string base_path;
  bool base_is_pmons_own = false;  // pmon's own cgroup (it holds pmon)
  std::mutex* mu = nullptr;        // one enabling at a time
};

// The controller a limit needs, in the leaf at leaf_dir: there already (its
// `file` exists), or enabled now in the parent where it is available
// (cgroup.controllers) and the parent holds no process (the kernel refuses
// a controller beside processes). "" or the one line why not.
std::string ensure_controller(const ControllerSite& site, int leaf_dir, const char* controller, const char* file);

// Writes `limits` into the leaf (named `leaf_path` in messages). *memory is
// set once the leaf accounts memory. "" or the one line why not.
std::string write_limits(const ControllerSite& site, int leaf_dir, const std::string& leaf_path, const Limits& limits,
                         bool* memory);

// pids.max `n` in the leaf, or why it cannot be there (the reason only: the
// fixes a refusal names are for a limit asked for).
std::expected<void, Error> write_default_pids(const ControllerSite& site, int leaf_dir, const std::string& leaf_path,
                                              uint64_t n);

}  // namespace pmon::confine
