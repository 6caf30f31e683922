// SPDX-License-Identifier: Apache-2.0
// Syscalls without libc: no errno (a thread-local), no cancellation points,
// no interposition. For code that runs where thread-local storage is not its
// own: a child that shares our memory but not our thread (the E11 guard,
// cgroup_guard.cpp). The result is the kernel's: >= 0, or -errno.
#pragma once

#include <sys/syscall.h>

namespace pmon::sys {

#if defined(__x86_64__)
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                        long f = 0) noexcept {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#define PMON_HAVE_RAW_SYSCALL 1
#elif defined(__aarch64__)
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                        long f = 0) noexcept {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#define PMON_HAVE_RAW_SYSCALL 1
#else
// Elsewhere: libc's syscall(2), which does set errno. Only the shared-memory
// guard needs the difference, and it is not used there (clone_spawn.h).
#include <unistd.h>

#include <cerrno>
inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                        long f = 0) noexcept {
  long r = ::syscall(nr, a, b, c, d, e, f);
  return r < 0 ? -errno : r;
}
#endif

}  // namespace pmon::sys
