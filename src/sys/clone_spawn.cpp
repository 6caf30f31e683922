// SPDX-License-Identifier: Apache-2.0
#include "sys/clone_spawn.h"

#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define PMON_NO_VFORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PMON_NO_VFORK 1
#endif
#endif

#if !defined(PMON_NO_VFORK) && (defined(__x86_64__) || defined(__aarch64__))
#define PMON_HAVE_VFORK_TRAMPOLINE 1
#endif

#ifdef PMON_HAVE_VFORK_TRAMPOLINE
// long pmon_clone3_trampoline(clone_args*, size_t, void (*fn)(void*), void* arg)
// The parent gets clone3's return value. The child starts on the stack the
// kernel gave it (no frame of the caller is touched), calls fn(arg), and
// exits with 127 should fn return.
extern "C" long pmon_clone3_trampoline(void* args, unsigned long size, void (*fn)(void*), void* arg);
#if defined(__x86_64__)
asm(R"(
  .text
  .globl pmon_clone3_trampoline
  .type pmon_clone3_trampoline, @function
pmon_clone3_trampoline:
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jnz 1f
  xor %ebp, %ebp
  and $-16, %rsp
  mov %r9, %rdi
  call *%r8
  mov $127, %edi
  mov $60, %eax
  syscall
  hlt
1:
  ret
  .size pmon_clone3_trampoline, .-pmon_clone3_trampoline
  .section .note.GNU-stack,"",@progbits
  .text
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .globl pmon_clone3_trampoline
  .type pmon_clone3_trampoline, %function
pmon_clone3_trampoline:
  mov x10, x2
  mov x11, x3
  mov x8, #435
  svc #0
  cbnz x0, 1f
  mov x29, xzr
  mov x0, x11
  blr x10
  mov x0, #127
  mov x8, #93
  svc #0
1:
  ret
  .size pmon_clone3_trampoline, .-pmon_clone3_trampoline
  .section .note.GNU-stack,"",%progbits
  .text
)");
#endif
#endif

namespace pmon::sys {

namespace {

#ifdef PMON_HAVE_VFORK_TRAMPOLINE
// One child stack per thread, kept for the thread's life: the caller is
// suspended while its child uses it, so it is never used twice at once.
constexpr size_t kStackSize = 64 * 1024;

struct ChildStack {
  void* base = MAP_FAILED;
  ~ChildStack() {
    if (base != MAP_FAILED) (void)::munmap(base, kStackSize);
  }
};

void* child_stack() noexcept {
  thread_local ChildStack s;
  if (s.base == MAP_FAILED)
    s.base = ::mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  return s.base == MAP_FAILED ? nullptr : s.base;
}
#endif

[[maybe_unused]] bool new_namespaces(const CloneRequest& req) noexcept {
  return req.new_pid_ns || req.new_user_ns || req.new_mount_ns || req.new_cgroup_ns;
}

Result<CloneResult> fork_and_run(const CloneRequest& req, void (*fn)(void*), void* arg) noexcept {
  auto r = clone3_fork(req);
  if (r && r->pid == 0) {
    fn(arg);
    ::_exit(127);
  }
  return r;
}

}  // namespace

bool clone3_spawn_shares_memory(const CloneRequest& req) noexcept {
#ifdef PMON_HAVE_VFORK_TRAMPOLINE
  return !new_namespaces(req) && child_stack() != nullptr;  // the stack, once mapped, stays
#else
  (void)req;
  return false;
#endif
}

#ifdef PMON_HAVE_VFORK_TRAMPOLINE
namespace {

// clone3 with `flags` (CLONE_VM and more) on `stack`, fn(arg) in the child.
// The child shares our memory and, until it resets them, our signal
// handlers: no handler of ours may run on its stack. Everything is blocked
// across the clone, so the child starts with everything blocked.
Result<CloneResult> clone_on_stack(uint64_t flags, int exit_signal, const CloneRequest& req,
                                   void (*fn)(void*), void* arg, void* stack, size_t size) noexcept {
  int pidfd = -1;
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_PIDFD | flags;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = static_cast<uint64_t>(exit_signal);
  args.stack = reinterpret_cast<uint64_t>(stack);
  args.stack_size = size;
  if (req.into_cgroup) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(req.cgroup_fd);
  }
  sigset_t all, old;
  ::sigfillset(&all);
  (void)::pthread_sigmask(SIG_SETMASK, &all, &old);
  long r = pmon_clone3_trampoline(&args, sizeof args, fn, arg);
  (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (r < 0) return fail(static_cast<int>(-r));  // the raw syscall's -errno
  CloneResult out;
  out.pid = static_cast<pid_t>(r);
  out.pidfd = Fd(pidfd);
  return out;
}

}  // namespace
#endif

Result<CloneResult> clone3_spawn(const CloneRequest& req, void (*fn)(void*), void* arg) noexcept {
#ifdef PMON_HAVE_VFORK_TRAMPOLINE
  if (!clone3_spawn_shares_memory(req)) return fork_and_run(req, fn, arg);
  // The child sets its own mask before exec; we wait until it has exec'd.
  return clone_on_stack(CLONE_VM | CLONE_VFORK, SIGCHLD, req, fn, arg, child_stack(), kStackSize);
#else
  return fork_and_run(req, fn, arg);
#endif
}

Result<CloneResult> clone3_shared(const CloneRequest& req, void (*fn)(void*), void* arg,
                                  void* stack, size_t size) noexcept {
#ifdef PMON_HAVE_VFORK_TRAMPOLINE
  if (new_namespaces(req)) return fail(EINVAL);
  // It runs beside us, with everything blocked for good.
  return clone_on_stack(CLONE_VM, req.exit_signal, req, fn, arg, stack, size);
#else
  (void)req, (void)fn, (void)arg, (void)stack, (void)size;
  return fail(ENOSYS);
#endif
}

}  // namespace pmon::sys
