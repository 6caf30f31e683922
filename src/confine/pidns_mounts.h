// The mounts of a namespace init, done between clone and exec (so: raw
// syscalls only, async-signal-safe). Shared by the availability probe and
// the real clone so that what was probed is what runs.
#pragma once

namespace pmon {

// In a fresh mount namespace, as PID 1 of a fresh PID namespace: makes every
// mount private, mounts this namespace's /proc, and when cgroup2_mount is
// given, re-roots the cgroup namespace at the current cgroup and mounts that
// view there. 0, or the errno of the first failure.
int ns_setup_mounts(const char* cgroup2_mount) noexcept;

}  // namespace pmon
