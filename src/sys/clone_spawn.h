// Creating a child that only sets itself up and execs: clone3 with
// CLONE_VM|CLONE_VFORK on a stack of its own, as posix_spawn does, so no
// page tables are copied and no copy-on-write faults follow. The caller is
// suspended until the child execs or exits.
#pragma once

#include "sys/syscalls.h"

namespace pmon::sys {

// Runs fn(arg) in the new child; fn must exec or _exit (a return ends the
// child with 127). Falls back to clone3_fork where sharing memory is not
// possible or not wise: namespace flags, sanitizer builds, other
// architectures.
Result<CloneResult> clone3_spawn(const CloneRequest& req, void (*fn)(void*),
                                 void* arg) noexcept;

}  // namespace pmon::sys
