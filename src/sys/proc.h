// SPDX-License-Identifier: Apache-2.0
// Reading /proc. A process is named by (pid, start time): the pair is unique
// for the life of the boot, a bare pid is not (pid_max wraps).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::sys {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  uint64_t start_time = 0;  // clock ticks since boot (field 22)
  int num_threads = 0;      // field 20
  std::string comm;

  // Exited: a zombie (or being reaped). State Z alone is not that: a
  // process whose main thread has exited shows Z while its other threads
  // run on, and it is alive until the last of them ends.
  bool dead() const noexcept { return (state == 'Z' || state == 'X') && num_threads <= 1; }
};

// /proc/<pid>/stat, parsed. ENOENT/ESRCH when the process is gone.
Result<ProcStat> read_stat(pid_t pid) noexcept;

// This process's start time (from /proc/self/stat), read once per process:
// the names of its cgroups and its systemd scope carry it.
Result<uint64_t> self_start_time() noexcept;

// The NSpid line of a /proc/<pid>/status text: the process's pid in each
// PID namespace from the one that mounted this /proc down to its own.
// Empty when there is no such line (or it does not parse).
std::vector<pid_t> parse_nspid(std::string_view status);
Result<std::vector<pid_t>> read_nspid(pid_t pid) noexcept;

// This process's pid in the PID namespace of the mounted /proc (where
// /proc/self leads); ENOENT when that namespace cannot see this process.
Result<pid_t> pid_in_proc() noexcept;

// The inode of this process's PID namespace (/proc/self/ns/pid): the
// namespace's name for as long as it lives, the same seen from any other.
// EXDEV when the mounted /proc is another namespace's (its pids are not
// ours: nothing this process names by pid can be looked up in it).
Result<uint64_t> self_pid_namespace() noexcept;

// The fd `pid` is blocked reading from, when it sleeps in read(2),
// readv(2), pread64(2) or preadv(2) (from /proc/<pid>/syscall, which a
// running process, or one in any other call, does not give).
std::optional<int> blocked_read_fd(pid_t pid) noexcept;

// What fd `fd` of `pid` is open on: its device and inode, and for a
// device file the device it is (stat(2) through /proc/<pid>/fd).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  dev_t rdev = 0;
};
std::optional<FileId> open_file_of(pid_t pid, int fd) noexcept;

// /proc/<pid>/cmdline with NULs turned to spaces; unnamed_cmdline(comm)
// when empty (kernel threads, zombies).
std::string read_cmdline(pid_t pid);

// How a process whose command line is not known is named: "[comm]".
std::string unnamed_cmdline(std::string_view comm);

// Every numeric entry of /proc, parsed; processes that vanish mid-scan are
// skipped.
std::vector<ProcStat> scan_processes();

// The descendants of `root` (not root itself) in `table`, breadth first.
std::vector<ProcStat> descendants_of(const std::vector<ProcStat>& table,
                                     pid_t root);

// The children of this process that are zombies, from its children files
// (the cost is per child, not per process of the host); where the kernel
// has none, from a scan of /proc. A child for which `leave_out` says true
// is not looked at.
std::vector<pid_t> zombie_children(const std::function<bool(pid_t)>& leave_out = {});

// The descendants of `root` (not root itself), breadth first, found through
// each one's children files (/proc/PID/task/TID/children): the cost is per
// descendant, however many processes the host has. A process that a walk
// lists but cannot read any more (it exited, its children reparented in
// the meantime) makes the walk start over, a few times at most. Where the
// kernel has no children files: descendants_of(scan_processes(), root).
// A process for which `leave_out` says true is left out, and all below it.
std::vector<ProcStat> descendants_by_children(pid_t root, const std::function<bool(pid_t)>& leave_out = {});

// A pidfd for exactly the process (pid, start_time), or ESRCH if that process
// is gone — even if the number now belongs to someone else. The check runs
// after pidfd_open, so a pid recycled in between is caught.
// With `ppid` (> 0), the process's parent must also still be `ppid` or
// this process (a subreaper adopts orphans): start times have a clock
// tick's resolution, and a pid recycled within the same tick by a process
// outside our tree has another parent.
Result<Fd> open_identified(pid_t pid, uint64_t start_time, pid_t ppid = 0) noexcept;

// Is the process behind `pidfd` still alive (not yet exited)?
bool pidfd_alive(int pidfd) noexcept;

// Whole small file; errors are errno codes.
Result<std::string> read_file(const std::string& path) noexcept;
Result<std::string> read_file_at(int dirfd, const char* name) noexcept;
Result<void> write_file_at(int dirfd, const char* name,
                           std::string_view data) noexcept;

// Ticks per second for start times (sysconf(_SC_CLK_TCK)).
long clock_ticks() noexcept;

}  // namespace pmon::sys
