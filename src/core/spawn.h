// SPDX-License-Identifier: Apache-2.0
// Starting a call's command in a boundary just opened for it, with its limits.
#pragma once

#include <expected>
#include <memory>

#include "confine/boundary.h"
#include "confine/launch.h"

namespace pmon {

// spawn() into *boundary, a boundary just opened from backend. A pooled
// cgroup leaf that a previous call turned into an inner node (controllers
// enabled in its cgroup.subtree_control) refuses new processes with EBUSY:
// it is dropped and the next one (at last a fresh one) is used, so the pool
// need not read every leaf it takes back. *boundary is replaced then.
// `limits` are set on each boundary first (Boundary::set_limits); one that
// cannot be set fails the spawn with 125 and its one line. A call that asked
// for no pids limit gets `default_pids` (none: nullopt) where it can be set;
// where not, it runs without and *default_skipped says why.
std::expected<Child, Error> spawn_in(const SpawnSpec& spec, Backend& backend, std::unique_ptr<Boundary>& boundary,
                                     const Limits& limits = {}, std::optional<uint64_t> default_pids = std::nullopt,
                                     std::optional<Error>* default_skipped = nullptr);

}  // namespace pmon
