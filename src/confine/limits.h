// SPDX-License-Identifier: Apache-2.0
// What one call may use, set on its cgroup leaf before anything runs in it:
// memory.max (with memory.oom.group, so an out-of-memory call dies whole),
// memory.high (past it the call is slowed and reclaimed, not killed),
// pids.max and cpu.max. An empty field sets nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "confine/error.h"

namespace pmon {

// The pids.max a call gets when it asks for none: a fork chain stops there
// instead of taking the host's last pids. Where it cannot be set (no pids
// controller, no cgroup) the call runs without it and its report says so.
inline constexpr uint64_t kDefaultPidsMax = 4096;

struct Limits {
  std::optional<uint64_t> memory_max;   // bytes
  std::optional<uint64_t> memory_high;  // bytes: throttled past it
  std::optional<uint64_t> pids_max;     // processes and threads; 0: none, not even the default
  std::optional<double> cpu_max;        // cores (1.5: one and a half CPUs' time)

  bool any() const noexcept { return memory_max || memory_high || has_pids_max() || cpu_max; }
  bool has_pids_max() const noexcept { return pids_max && *pids_max > 0; }
  // The call asked nothing of pids: the default applies.
  bool wants_default_pids() const noexcept { return !pids_max; }
};

// The period cpu.max is written with, in microseconds (the kernel's default).
inline constexpr uint64_t kCpuPeriodUsec = 100'000;
// The smallest quota the kernel accepts (1 ms per period): 0.01 cores.
inline constexpr double kMinCores = 0.01;
inline constexpr double kMaxCores = 100'000;

// cpu.max for `cores` of CPU time per period: 1.5 -> "150000 100000".
std::string cpu_max_line(double cores);

// "memory", "pids and cpu": the limits set, for messages.
std::string limit_names(const Limits& l);

// The one line for limits asked of a boundary without a cgroup (named as
// "the pgroup backend", "a PID namespace without --isolate").
Error no_cgroup_for_limits(const Limits& l, std::string_view boundary);

}  // namespace pmon
