// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "confine/cgroup_kill.h"
#include "confine/raw_dir.h"
#include "confine/scan.h"
#include "sys/clone_spawn.h"
#include "sys/raw_syscall.h"
#include "sys/syscalls.h"

namespace pmon::confine {

namespace {

// Everything below runs in the guard, a child that shares our memory but not
// our thread (clone_spawn.h), or a forked copy of a possibly multi-threaded
// process: raw syscalls only (no errno, which is thread-local), no
// allocation, no locks, no library call that is not a plain function of
// its arguments. This file is built without the stack protector, whose
// canary is thread-local too.

using sys::raw_syscall;
using raw::for_each_subdir;
using raw::starts_with;

long r_openat(int dirfd, const char* path, int flags) noexcept { return raw::openat(dirfd, path, flags); }
void r_close(long fd) noexcept { raw::close(fd); }

struct GuardPlan {
  int self_pidfd = -1;
  int quit_r = -1;
  int base_fd = -1;
  char prefix[96] = {};
  size_t prefix_len = 0;
  char remove_base[128] = {};  // "" or the base's name, removed last
};

bool owned(const GuardPlan& p, const char* name) noexcept {
  if (!starts_with(name, p.prefix, p.prefix_len)) return false;
  const char* s = name + p.prefix_len;
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// Kills every owned leaf first (the kill is what matters; one cgroup.kill
// each, before any waiting), then kills each again until it is empty (a
// process whose main thread has exited by pidfd too), and removes it.
void clean_up(const GuardPlan& p) noexcept {
  for (int pass = 0; pass < 5; ++pass) {
    bool any = false;
    (void)for_each_subdir(p.base_fd, [&](const char* name) {
      if (!owned(p, name)) return;
      any = true;
      long fd = r_openat(p.base_fd, name, O_RDONLY | O_DIRECTORY);
      if (fd < 0) return;
      (void)kill_cgroup_at_once(static_cast<int>(fd));
      (void)thaw_cgroup(static_cast<int>(fd));  // if we died mid-pass (frozen)
      r_close(fd);
    });
    if (!any) return;
    (void)for_each_subdir(p.base_fd, [&](const char* name) {
      if (owned(p, name)) (void)kill_and_remove_cgroup(p.base_fd, name, 2000);
    });
  }
}

[[noreturn]] void guard_exit() noexcept {
  for (;;) (void)raw_syscall(SYS_exit_group, 0);
}

[[noreturn]] void guard_main(void* arg) noexcept {
  const GuardPlan& p = *static_cast<const GuardPlan*>(arg);
  // Only SIGKILL ends the guard: a signal to the supervisor's process group
  // or a stray TERM must not take the E11 promise away.
  const unsigned long all = ~0UL;
  (void)raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all), 0, sizeof all);
  (void)raw_syscall(SYS_setsid);
  (void)raw_syscall(SYS_prctl, PR_SET_NAME, reinterpret_cast<long>("pmon-guard"));
  (void)raw_syscall(SYS_chdir, reinterpret_cast<long>("/"));
  // No fd of the supervisor's but the three we need: a pipe or a socket a
  // caller waits on for EOF must not stay open in us.
  int keep[3] = {p.self_pidfd, p.quit_r, p.base_fd};
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      if (keep[j] < keep[i]) std::swap(keep[i], keep[j]);
  unsigned lo = 0;
  for (int k : keep) {
    if (static_cast<unsigned>(k) > lo) (void)raw_syscall(SYS_close_range, lo, static_cast<unsigned>(k) - 1, 0);
    lo = static_cast<unsigned>(k) + 1;
  }
  (void)raw_syscall(SYS_close_range, lo, ~0U, 0);
  long null = r_openat(AT_FDCWD, "/dev/null", O_RDWR);
  if (null >= 0)
    for (int fd = 0; fd < 3; ++fd)
      if (fd != null && fd != keep[0] && fd != keep[1] && fd != keep[2])
        (void)raw_syscall(SYS_dup3, null, fd, 0);

  pollfd fds[2] = {{p.self_pidfd, POLLIN, 0}, {p.quit_r, POLLIN, 0}};
  for (;;) {
    long n = raw_syscall(SYS_ppoll, reinterpret_cast<long>(fds), 2, 0, 0, 0);
    if (n == -EINTR) continue;
    if (n < 0) break;
    if (fds[1].revents & POLLIN) {
      char c;
      if (raw_syscall(SYS_read, p.quit_r, reinterpret_cast<long>(&c), 1) == 1) guard_exit();  // told to go
      break;  // EOF: the supervisor is gone
    }
    if (fds[1].revents & (POLLHUP | POLLERR)) break;
    if (fds[0].revents != 0) break;
  }
  clean_up(p);
  if (p.remove_base[0] != '\0') {
    long parent = r_openat(p.base_fd, "..", O_RDONLY | O_DIRECTORY);
    if (parent >= 0) {
      (void)raw_syscall(SYS_unlinkat, parent, reinterpret_cast<long>(p.remove_base), AT_REMOVEDIR);
      r_close(parent);
    }
  }
  guard_exit();
}

// The guard's stack and, at its low end, its plan: ours until the guard is
// reaped (it lives on in the guard if we die). remove_tree recurses up to 32
// cgroups deep with a 2 KiB listing buffer each; pages never touched cost
// nothing.
constexpr size_t kGuardStack = 256 * 1024;

}  // namespace

Result<std::unique_ptr<CgroupGuard>> CgroupGuard::start(int base_fd, const std::string& prefix,
                                                         Memory memory, const std::string& remove_base) noexcept {
  // A page that faults below the stack: an overflow ends the guard, never
  // writes into memory it shares with us.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, page + kGuardStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return fail_errno();
  StackMapping mapping(map, page + kGuardStack);
  if (::mprotect(map, page, PROT_NONE) != 0) return fail_errno();
  void* stack = static_cast<char*>(map) + page;
  auto* plan = new (stack) GuardPlan;
  if (prefix.size() >= sizeof plan->prefix) return fail(ENAMETOOLONG);
  std::memcpy(plan->prefix, prefix.data(), prefix.size());
  plan->prefix_len = prefix.size();
  if (remove_base.size() >= sizeof plan->remove_base || remove_base.find('/') != std::string::npos)
    return fail(ENAMETOOLONG);
  std::memcpy(plan->remove_base, remove_base.data(), remove_base.size());
  plan->base_fd = base_fd;

  auto self = sys::pidfd_open(::getpid());
  if (!self) return std::unexpected(self.error());
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return fail_errno();
  Fd quit_r(pipefd[0]), quit_w(pipefd[1]);
  plan->self_pidfd = self->get();
  plan->quit_r = quit_r.get();

  // The guard is our child, but a "clone child" (exit signal 0): waitid and
  // waitpid without __WALL do not see it, so no reaping loop over the
  // call's children collects it or waits for it, and we reap it ourselves
  // on a normal end. If we die it is reparented like any orphan (the kernel
  // resets its exit signal to SIGCHLD), and whoever adopts it reaps it.
  //
  // It shares our memory (no page tables copied: a fork of pmon would cost
  // a quarter of a millisecond per start), and keeps it alive when we die.
  // Where that is not available, a fork.
  sys::CloneRequest req;
  req.exit_signal = 0;
  // Memory::own: a fork (its page tables are copied once, while we are small).
  Result<sys::CloneResult> guard = fail(ENOSYS);
  if (memory == Memory::shared) guard = sys::clone3_shared(req, guard_main, plan, stack, kGuardStack);
  if (!guard && guard.error().value() == ENOSYS) {
    guard = sys::clone3_fork(req);
    if (guard && guard->pid == 0) guard_main(plan);
  }
  if (!guard) return std::unexpected(guard.error());
  register_helper(guard->pid);
  std::unique_ptr<CgroupGuard> g(new CgroupGuard(std::move(quit_w), std::move(guard->pidfd), guard->pid, ::getpid(),
                                                 memory == Memory::own, std::move(mapping)));
  // Memory of its own: never the OOM killer's pick (where allowed), the
  // supervisor it guards is. Set from here, so a refusal can be said.
  if (memory == Memory::own) g->oom_errno_ = shield_from_oom(g->pid_);
  return g;
}

int shield_from_oom(pid_t pid) noexcept {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/oom_score_adj", static_cast<int>(pid));
  Fd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  if (::write(fd.get(), "-1000", 5) != 5) return errno;
  return 0;
}

std::string oom_shield_words(int err) {
  std::string why = std::strerror(err);
  if (err == EACCES || err == EPERM) why += "; it needs CAP_SYS_RESOURCE";
  else why += "; this kernel or sandbox refuses it";
  return "the crash guard cannot be shielded from the OOM killer (oom_score_adj -1000: " + why +
         "): an out-of-memory kill may take it before the service, and then jobs outlive the service";
}

CgroupGuard::StackMapping::~StackMapping() {
  if (p_ != nullptr) (void)::munmap(p_, n_);
}

void CgroupGuard::dismiss() noexcept {
  if (dismissed_ || !quit_ || ::getpid() != owner_) return;
  dismissed_ = sys::pidfd_send_signal(pidfd_.get(), SIGKILL) == 0;
}

CgroupGuard::~CgroupGuard() {
  if (!quit_ || ::getpid() != owner_) return;  // a forked copy of us
  unregister_helper(pid_);
  if (dismissed_) {
    // SIGKILLed: it is gone or going; waiting for it costs no wake-up of its
    // own, unlike the word through the pipe below.
    siginfo_t si{};
    if (retry_eintr([&] {
          return sys::waitid_raw(P_PIDFD, static_cast<id_t>(pidfd_.get()), &si, WEXITED | __WALL, nullptr);
        }) == 0)
      return;
    stack_.release();
    return;
  }
  // A guard that is already gone (killed) must not cost us a SIGPIPE.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  (void)::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  if (::write(quit_.get(), "q", 1) < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE)) {
    timespec zero{0, 0};
    (void)::sigtimedwait(&pipe_only, nullptr, &zero);
  }
  (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // Reap it, so nothing of ours is left unreaped; it exits at once.
  pollfd p{pidfd_.get(), POLLIN, 0};
  siginfo_t si{};
  if (retry_eintr([&] { return ::poll(&p, 1, 2000); }) == 1 &&
      sys::waitid_raw(P_PIDFD, static_cast<id_t>(pidfd_.get()), &si, WEXITED | WNOHANG | __WALL, nullptr) == 0 &&
      si.si_pid != 0)
    return;  // its stack goes with stack_
  // Not gone (it should be: it exits on the word): it may still be on its
  // stack, which must then stay mapped.
  stack_.release();
}

}  // namespace pmon::confine
