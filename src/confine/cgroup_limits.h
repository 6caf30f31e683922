// SPDX-License-Identifier: Apache-2.0
// A cgroup leaf's limits: the controllers they need (enabled in the leaves'
// parent where pmon may), memory.max, memory.high, pids.max and cpu.max as
// asked (failing closed), and the default pids.max of a call that asked none
// (never failing the call). Used by the cgroup backend (cgroup.cpp).
#pragma once

#include <cstdint>
#include <expected>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

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

// Why a limit cannot be set: which one, what was found, and what to do
// where there is something (""). Put into words where it is told:
// limit_words().
struct LimitRefusal {
  std::string limit;  // "memory", "pids", "cpu"
  std::string facts;
  std::string remedy;
};
// "cannot set the [WHOSE ]LIMIT limit: FACTS[; REMEDY]"; whose: "" or
// e.g. "session's".
std::string limit_words(const LimitRefusal& r, std::string_view whose = "");

// The controller a limit needs, in the leaf at leaf_dir: there already (its
// `file` exists), or enabled now in the parent where it is available
// (cgroup.controllers) and the parent holds no process (the kernel refuses
// a controller beside processes). Nothing, or why not.
std::optional<LimitRefusal> ensure_controller(const ControllerSite& site, int leaf_dir, const char* controller,
                                              const char* file);

// Writes `limits` into the leaf (named `leaf_path` in messages). *memory is
// set once the leaf accounts memory. Nothing, or why not.
std::optional<LimitRefusal> write_limits(const ControllerSite& site, int leaf_dir, const std::string& leaf_path,
                                         const Limits& limits, bool* memory);

// pids.max `n` in the leaf, or why it cannot be there (the reason only: the
// fixes a refusal names are for a limit asked for).
std::expected<void, Error> write_default_pids(const ControllerSite& site, int leaf_dir, const std::string& leaf_path,
                                              uint64_t n);

}  // namespace pmon::confine
