// SPDX-License-Identifier: Apache-2.0
// Directory and file helpers on raw syscalls, for the code that runs in the
// E11 guard (cgroup_guard.cpp, cgroup_kill.cpp): no errno, no allocation.
// Results are the kernel's: >= 0, or -errno. Both files are built without
// the stack protector; the helpers are local to each (an unnamed
// namespace), so the linker never hands the guard a copy built with it.
#pragma once

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "sys/raw_syscall.h"

namespace pmon::confine::raw {
namespace {

using sys::raw_syscall;

inline long openat(int dirfd, const char* path, int flags) noexcept {
  return raw_syscall(SYS_openat, dirfd, reinterpret_cast<long>(path), flags | O_CLOEXEC, 0);
}

inline void close(long fd) noexcept { (void)raw_syscall(SYS_close, fd); }

inline bool starts_with(const char* s, const char* prefix, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    if (s[i] != prefix[i]) return false;
  return true;
}

inline void sleep_ms(long ms) noexcept {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (raw_syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, reinterpret_cast<long>(&ts),
                     reinterpret_cast<long>(&ts)) == -EINTR) {
  }
}

inline int64_t now_ms() noexcept {
  timespec ts{};
  (void)raw_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<long>(&ts));
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

// Calls fn(name) for every subdirectory entry of dirfd (not . and ..).
// Returns false when the directory cannot be listed.
template <class F>
bool for_each_subdir(int dirfd, F&& fn) noexcept {
  constexpr unsigned char kDirType = 4;      // DT_DIR
  constexpr unsigned char kUnknownType = 0;  // DT_UNKNOWN
  if (raw_syscall(SYS_lseek, dirfd, 0, SEEK_SET) < 0) return false;
  alignas(8) char buf[2048];
  for (;;) {
    long n = raw_syscall(SYS_getdents64, dirfd, reinterpret_cast<long>(buf), sizeof buf);
    if (n == -EINTR) continue;
    if (n <= 0) return n == 0;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      off += d->reclen;
      if (d->type != kDirType && d->type != kUnknownType) continue;
      if (d->name[0] == '.' && (d->name[1] == '\0' || (d->name[1] == '.' && d->name[2] == '\0'))) continue;
      fn(static_cast<const char*>(d->name));
    }
  }
}

}  // namespace
}  // namespace pmon::confine::raw
