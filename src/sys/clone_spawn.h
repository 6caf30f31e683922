// SPDX-License-Identifier: Apache-2.0
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

// Whether clone3_spawn(req, ...) on this thread will share our memory with
// the child (and suspend us until it execs or exits), rather than fork: then
// the child may report to the parent through memory instead of a pipe.
bool clone3_spawn_shares_memory(const CloneRequest& req) noexcept;

// A child that shares our memory but runs beside us (CLONE_VM without
// CLONE_VFORK) on `stack` (size bytes, the caller's, kept mapped until the
// child is reaped): no page tables are copied, so it costs a fraction of a
// fork. fn(arg) must _exit. The child runs on our thread's TLS, so fn may
// use neither errno nor anything else thread-local (sys/raw_syscall.h), nor
// allocate, lock or read the stack guard (mark it no_stack_protector). All
// signals are blocked in the child on entry. ENOSYS where this is not
// available (sanitizer builds, other architectures): fork instead.
Result<CloneResult> clone3_shared(const CloneRequest& req, void (*fn)(void*), void* arg,
                                  void* stack, size_t size) noexcept;

}  // namespace pmon::sys
