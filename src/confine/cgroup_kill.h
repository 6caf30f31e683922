// SPDX-License-Identifier: Apache-2.0
// Killing everything in a cgroup, for every path that does it: the stop's
// kill step (CgroupBoundary::kill_all), the E11 guard after the supervisor
// died, and `pmon gc`.
//
// One write to cgroup.kill is atomic against forks, but not enough: a
// kernel may leave alive a process whose thread-group leader has exited
// while another thread runs (the leader is a zombie that cgroup.kill
// addresses, and the signal never reaches the live thread). kill(2) by the
// process's pid does reach it. So after cgroup.kill every process that
// cgroup.procs lists, in the cgroup and below it, also gets SIGKILL
// through a pidfd, and the callers repeat until cgroup.events says
// "populated 0".
//
// Raw syscalls only, no allocation, no errno (the guard shares our memory
// but not our thread; cgroup_guard.h): results are 0 or an errno value.
#pragma once

namespace pmon::confine {

// cgroup.kill of the cgroup `dirfd` (an O_DIRECTORY fd), then SIGKILL to each
// process listed in cgroup.procs of it and of the cgroups below it. A pid
// read from cgroup.procs may be recycled before its pidfd is opened, so a
// pidfd is used only when a second read of the same cgroup.procs, after it
// was opened, still lists that pid (a live process keeps its pid, and a
// pidfd's process never changes). Returns the error of the cgroup.kill
// write (0 when it worked); the pids are signalled whatever it says.
int kill_cgroup(int dirfd) noexcept;

// cgroup.kill alone, the first kill of a stop: a write that reaches every
// process but one whose main thread has exited, and the listed pass only
// where the write fails (no cgroup.kill). Its callers come back within a
// few milliseconds with kill_cgroup for whatever is left, instead of
// opening a pidfd for each of a thousand processes that are dying anyway.
int kill_cgroup_at_once(int dirfd) noexcept;

// Writes "0" to cgroup.freeze of the cgroup `dirfd`: a leaf the supervisor
// froze for a signal pass (CgroupBoundary::signal_all) and died before
// thawing. cgroup.kill kills frozen tasks all the same; the thaw is for
// whatever the leaf still holds, and for the record. 0 or an errno.
int thaw_cgroup(int dirfd) noexcept;

// "populated 0" in cgroup.events read through events_fd (pread at 0, which
// also re-arms its POLLPRI): 1 yes, 0 no, -1 unreadable.
int cgroup_events_empty(int events_fd) noexcept;

// kill_cgroup_at_once, then kill_cgroup on every change of cgroup.events
// and at least every few milliseconds, until it says "populated 0" or
// timeout_ms has passed.
// 0, ETIMEDOUT (still populated) or an errno.
int kill_cgroup_until_empty(int dirfd, int events_fd, int timeout_ms) noexcept;

// Stops cgroup `name` below parent_fd (kill_cgroup_until_empty), then
// removes it and any cgroup below it, deepest first. Returns 0, or an
// errno (ETIMEDOUT: still populated; the cgroup stays).
int kill_and_remove_cgroup(int parent_fd, const char* name, int timeout_ms) noexcept;

}  // namespace pmon::confine
