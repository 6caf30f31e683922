// SPDX-License-Identifier: Apache-2.0
// pmon as PID 1 of a PID namespace (pmon init in a container, the init of a
// pidns call): its boundary is the namespace itself.
#pragma once

#include <functional>
#include <memory>

#include "confine/boundary.h"

namespace pmon {

// The boundary of PID 1 in a PID namespace: the namespace itself. Every
// process in it is a descendant of PID 1 (orphans reparent to it), kill(-1)
// reaches all of them without naming any by number, and "no children left"
// means the namespace is empty. Needs no /proc of the namespace.
// `reap` is called to collect zombies before emptiness is judged.
std::unique_ptr<Boundary> make_pid1_boundary(std::function<void()> reap);

// Is the mounted /proc the one of this process's PID namespace? Scan-based
// code reading a foreign /proc would look at other processes under our pids.
bool proc_matches_pid_ns() noexcept;

}  // namespace pmon
