#include "confine/cgroup_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <cstring>

#include "confine/scan.h"
#include "sys/clone_spawn.h"
#include "sys/syscalls.h"

namespace pmon::confine {

namespace {

// Everything below runs in the guard after a raw clone3 of a possibly
// multi-threaded process: syscalls only, no allocation, no locks.

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

constexpr unsigned char kDirType = 4;      // DT_DIR
constexpr unsigned char kUnknownType = 0;  // DT_UNKNOWN

// Calls fn(name) for every subdirectory entry of dirfd (not . and ..).
// Returns false when the directory cannot be listed.
template <class F>
bool for_each_subdir(int dirfd, F&& fn) noexcept {
  if (::lseek(dirfd, 0, SEEK_SET) < 0) return false;
  alignas(8) char buf[2048];
  for (;;) {
    long n = ::syscall(SYS_getdents64, dirfd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
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

void sleep_ms(long ms) noexcept {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int64_t now_ms() noexcept { return sys::monotonic_ns() / 1'000'000; }

// "populated 0" in cgroup.events: 1 yes, 0 no, -1 unreadable.
int events_say_empty(int events_fd) noexcept {
  char buf[256];
  ssize_t n = ::pread(events_fd, buf, sizeof buf - 1, 0);
  if (n < 0) return -1;
  buf[n] = '\0';
  const char* p = std::strstr(buf, "populated ");
  if (p == nullptr) return -1;
  return p[10] == '0' ? 1 : 0;
}

// Removes cgroup `name` and every cgroup below it, deepest first (rmdir
// refuses a cgroup with children). A cgroup whose last task is still exiting
// can answer EBUSY for a moment.
int remove_tree(int parent_fd, const char* name, int depth) noexcept {
  if (depth < 32) {
    int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      // Removing entries while listing may skip some: list until none is left.
      for (int pass = 0; pass < 8; ++pass) {
        bool any = false;
        (void)for_each_subdir(fd, [&](const char* sub) {
          any = true;
          (void)remove_tree(fd, sub, depth + 1);
        });
        if (!any) break;
      }
      ::close(fd);
    }
  }
  for (int i = 0; i < 100; ++i) {
    if (::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0) return 0;
    if (errno != EBUSY && errno != EINTR) return errno == ENOENT ? 0 : errno;
    sleep_ms(1);
  }
  return EBUSY;
}

int write_kill(int dirfd) noexcept {
  int fd = ::openat(dirfd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, "1", 1);
  int e = n == 1 ? 0 : errno;
  ::close(fd);
  return e;
}

struct GuardPlan {
  int self_pidfd = -1;
  int quit_r = -1;
  int base_fd = -1;
  char prefix[96] = {};
  size_t prefix_len = 0;
};

bool owned(const GuardPlan& p, const char* name) noexcept {
  if (std::strncmp(name, p.prefix, p.prefix_len) != 0) return false;
  const char* s = name + p.prefix_len;
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// Kills every owned leaf first (the kill is what matters; one write each,
// before any waiting), then waits for each and removes it.
void clean_up(const GuardPlan& p) noexcept {
  for (int pass = 0; pass < 5; ++pass) {
    bool any = false;
    (void)for_each_subdir(p.base_fd, [&](const char* name) {
      if (!owned(p, name)) return;
      any = true;
      int fd = ::openat(p.base_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return;
      (void)write_kill(fd);
      ::close(fd);
    });
    if (!any) return;
    (void)for_each_subdir(p.base_fd, [&](const char* name) {
      if (owned(p, name)) (void)kill_and_remove_cgroup(p.base_fd, name, 2000);
    });
  }
}

[[noreturn]] void guard_main(const GuardPlan& p) noexcept {
  // Only SIGKILL ends the guard: a signal to the supervisor's process group
  // or a stray TERM must not take the E11 promise away.
  sigset_t all;
  sigfillset(&all);
  (void)::sigprocmask(SIG_SETMASK, &all, nullptr);
  (void)::setsid();
  (void)::prctl(PR_SET_NAME, reinterpret_cast<unsigned long>("pmon-guard"), 0UL, 0UL, 0UL);
  (void)::prctl(PR_SET_PDEATHSIG, 0UL, 0UL, 0UL, 0UL);
  (void)::chdir("/");

  // No fd of the supervisor's but the three we need: a pipe or a socket a
  // caller waits on for EOF must not stay open in us.
  int keep[3] = {p.self_pidfd, p.quit_r, p.base_fd};
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      if (keep[j] < keep[i]) std::swap(keep[i], keep[j]);
  unsigned lo = 0;
  for (int k : keep) {
    if (static_cast<unsigned>(k) > lo) (void)::syscall(SYS_close_range, lo, static_cast<unsigned>(k) - 1, 0);
    lo = static_cast<unsigned>(k) + 1;
  }
  (void)::syscall(SYS_close_range, lo, ~0U, 0);
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0)
    for (int fd = 0; fd < 3; ++fd)
      if (fd != keep[0] && fd != keep[1] && fd != keep[2]) (void)::dup2(null, fd);

  pollfd fds[2] = {{p.self_pidfd, POLLIN, 0}, {p.quit_r, POLLIN, 0}};
  for (;;) {
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      char c;
      if (::read(p.quit_r, &c, 1) == 1) ::_exit(0);  // told to go: a normal end
      break;                                          // EOF: the supervisor is gone
    }
    if (fds[1].revents & (POLLHUP | POLLERR)) break;
    if (fds[0].revents != 0) break;
  }
  clean_up(p);
  ::_exit(0);
}

}  // namespace

int kill_and_remove_cgroup(int parent_fd, const char* name, int timeout_ms) noexcept {
  int dir = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno == ENOENT ? 0 : errno;
  int events = ::openat(dir, "cgroup.events", O_RDONLY | O_CLOEXEC);
  int err = write_kill(dir);
  if (events >= 0 && err == 0) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
      int e = events_say_empty(events);
      if (e == 1) break;
      int64_t left = deadline - now_ms();
      if (e < 0 || left <= 0) {
        err = e < 0 ? EIO : ETIMEDOUT;
        break;
      }
      // POLLPRI fires on every change of cgroup.events.
      pollfd pf{events, POLLPRI, 0};
      (void)::poll(&pf, 1, static_cast<int>(left < 100 ? left : 100));
    }
  } else if (events < 0 && err == 0) {
    err = errno;
  }
  if (events >= 0) ::close(events);
  ::close(dir);
  if (err != 0) return err;
  return remove_tree(parent_fd, name, 0);
}

Result<std::unique_ptr<CgroupGuard>> CgroupGuard::start(int base_fd, const std::string& prefix) noexcept {
  GuardPlan plan;
  if (prefix.size() >= sizeof plan.prefix) return fail(ENAMETOOLONG);
  std::memcpy(plan.prefix, prefix.data(), prefix.size());
  plan.prefix_len = prefix.size();
  plan.base_fd = base_fd;

  auto self = sys::pidfd_open(::getpid());
  if (!self) return std::unexpected(self.error());
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return fail_errno();
  Fd quit_r(pipefd[0]), quit_w(pipefd[1]);
  plan.self_pidfd = self->get();
  plan.quit_r = quit_r.get();

  // The guard is our child, but a "clone child" (exit signal 0): waitid and
  // waitpid without __WALL do not see it, so no reaping loop over the
  // call's children collects it or waits for it, and we reap it ourselves
  // on a normal end. If we die it is reparented like any orphan (the kernel
  // resets its exit signal to SIGCHLD), and whoever adopts it reaps it.
  sys::CloneRequest req;
  req.exit_signal = 0;
  auto guard = sys::clone3_fork(req);
  if (!guard) return std::unexpected(guard.error());
  if (guard->pid == 0) guard_main(plan);
  register_helper(guard->pid);
  return std::unique_ptr<CgroupGuard>(
      new CgroupGuard(std::move(quit_w), std::move(guard->pidfd), guard->pid, ::getpid()));
}

CgroupGuard::~CgroupGuard() {
  if (!quit_ || ::getpid() != owner_) return;  // a forked copy of us
  unregister_helper(pid_);
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
  if (retry_eintr([&] { return ::poll(&p, 1, 2000); }) == 1) {
    siginfo_t si{};
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(pidfd_.get()), &si, WEXITED | WNOHANG | __WALL, nullptr);
  }
}

}  // namespace pmon::confine
