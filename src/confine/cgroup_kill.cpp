// SPDX-License-Identifier: Apache-2.0
// See cgroup_kill.h. Runs in the E11 guard too: raw syscalls, no errno, no
// allocation, built without the stack protector (its canary is
// thread-local).
#include "confine/cgroup_kill.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine/raw_dir.h"

namespace pmon::confine {

namespace {

using sys::raw_syscall;

// cgroup.procs is read this many pids at a time: one batch of pidfds is
// opened, then the file is read again to verify them.
constexpr int kBatch = 256;
// How deep kill_cgroup follows cgroups a call made below its leaf.
constexpr int kMaxDepth = 32;
// While a cgroup stays populated, kill_cgroup_until_empty kills again at
// least this often (a survivor's fork after our pass changes nothing in
// cgroup.events).
constexpr int kRekillMs = 10;

int write_kill(int dirfd) noexcept {
  long fd = raw::openat(dirfd, "cgroup.kill", O_WRONLY);
  if (fd < 0) return static_cast<int>(-fd);
  long n = raw_syscall(SYS_write, fd, reinterpret_cast<long>("1"), 1);
  raw::close(fd);
  return n == 1 ? 0 : n < 0 ? static_cast<int>(-n) : EIO;
}

// Calls fn(pid) for each pid in cgroup.procs of dirfd, in the order listed,
// until fn returns false. False when the file cannot be read.
template <class F>
bool for_each_listed(int dirfd, F&& fn) noexcept {
  long fd = raw::openat(dirfd, "cgroup.procs", O_RDONLY);
  if (fd < 0) return false;
  char buf[4096];
  long v = -1;  // the number being read, -1 between numbers
  bool more = true;
  while (more) {
    long n = raw_syscall(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long i = 0; i < n && more; ++i) {
      char c = buf[i];
      if (c >= '0' && c <= '9') {
        v = (v < 0 ? 0 : v * 10) + (c - '0');
      } else if (v >= 0) {
        more = fn(static_cast<pid_t>(v));
        v = -1;
      }
    }
  }
  if (more && v >= 0) (void)fn(static_cast<pid_t>(v));
  raw::close(fd);
  return true;
}

// SIGKILL through a verified pidfd to each process cgroup.procs of dirfd
// lists (this cgroup only).
void kill_listed(int dirfd) noexcept {
  int done = 0;  // pids of earlier batches (the list may shift: callers repeat)
  for (int round = 0; round < 64; ++round) {
    pid_t pids[kBatch];
    int fds[kBatch];
    bool listed[kBatch];
    int n = 0, seen = 0;
    (void)for_each_listed(dirfd, [&](pid_t pid) {
      if (seen++ < done) return true;
      long fd = raw_syscall(SYS_pidfd_open, pid, 0);
      pids[n] = pid;
      fds[n] = fd < 0 ? -1 : static_cast<int>(fd);
      listed[n] = false;
      ++n;
      return n < kBatch;
    });
    if (n == 0) return;
    (void)for_each_listed(dirfd, [&](pid_t pid) {
      for (int i = 0; i < n; ++i)
        if (pids[i] == pid) listed[i] = true;
      return true;
    });
    for (int i = 0; i < n; ++i) {
      if (fds[i] < 0) continue;
      if (listed[i]) (void)raw_syscall(SYS_pidfd_send_signal, fds[i], SIGKILL, 0, 0);
      raw::close(fds[i]);
    }
    if (n < kBatch) return;
    done += n;
  }
}

// kernfs counts a cgroup's children in its link count (2 + subdirectories):
// one fstat instead of reading the directory of a leaf that has none.
bool may_have_children(int dirfd) noexcept {
  struct stat st;
  if (raw_syscall(SYS_fstat, dirfd, reinterpret_cast<long>(&st)) != 0 || st.st_nlink < 2) return true;
  return st.st_nlink > 2;
}

void kill_listed_tree(int dirfd, int depth) noexcept {
  kill_listed(dirfd);
  if (depth >= kMaxDepth || !may_have_children(dirfd)) return;
  (void)raw::for_each_subdir(dirfd, [&](const char* name) {
    long fd = raw::openat(dirfd, name, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    kill_listed_tree(static_cast<int>(fd), depth + 1);
    raw::close(fd);
  });
}

// Removes cgroup `name` and every cgroup below it, deepest first (rmdir
// refuses a cgroup with children). A cgroup whose last task is still exiting
// can answer EBUSY for a moment.
int remove_tree(int parent_fd, const char* name, int depth) noexcept {
  if (depth < kMaxDepth) {
    long fd = raw::openat(parent_fd, name, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
      // Removing entries while listing may skip some: list until none is left.
      for (int pass = 0; pass < 8; ++pass) {
        bool any = false;
        (void)raw::for_each_subdir(static_cast<int>(fd), [&](const char* sub) {
          any = true;
          (void)remove_tree(static_cast<int>(fd), sub, depth + 1);
        });
        if (!any) break;
      }
      raw::close(fd);
    }
  }
  for (int i = 0; i < 100; ++i) {
    long r = raw_syscall(SYS_unlinkat, parent_fd, reinterpret_cast<long>(name), AT_REMOVEDIR);
    if (r == 0 || r == -ENOENT) return 0;
    if (r != -EBUSY && r != -EINTR) return static_cast<int>(-r);
    raw::sleep_ms(1);
  }
  return EBUSY;
}

}  // namespace

int kill_cgroup(int dirfd) noexcept {
  // cgroup.kill first: it is atomic against forks, and all a process needs
  // unless its main thread has exited.
  int err = write_kill(dirfd);
  kill_listed_tree(dirfd, 0);
  return err;
}

int kill_cgroup_at_once(int dirfd) noexcept {
  int err = write_kill(dirfd);
  if (err != 0) kill_listed_tree(dirfd, 0);
  return err;
}

int thaw_cgroup(int dirfd) noexcept {
  long fd = raw::openat(dirfd, "cgroup.freeze", O_WRONLY);
  if (fd < 0) return static_cast<int>(-fd);
  long n = raw_syscall(SYS_write, fd, reinterpret_cast<long>("0"), 1);
  raw::close(fd);
  return n == 1 ? 0 : n < 0 ? static_cast<int>(-n) : EIO;
}

int cgroup_events_empty(int events_fd) noexcept {
  char buf[256];
  long n = raw_syscall(SYS_pread64, events_fd, reinterpret_cast<long>(buf), sizeof buf - 1, 0);
  if (n < 0) return -1;
  buf[n] = '\0';
  constexpr char kKey[] = "populated ";
  constexpr size_t kLen = sizeof kKey - 1;
  for (long i = 0; i + static_cast<long>(kLen) < n; ++i)
    if ((i == 0 || buf[i - 1] == '\n') && raw::starts_with(buf + i, kKey, kLen)) return buf[i + kLen] == '0' ? 1 : 0;
  return -1;
}

int kill_cgroup_until_empty(int dirfd, int events_fd, int timeout_ms) noexcept {
  const int64_t deadline = raw::now_ms() + timeout_ms;
  for (bool first = true;; first = false) {
    int err = first ? kill_cgroup_at_once(dirfd) : kill_cgroup(dirfd);
    if (err != 0 && err != ENOENT) return err;
    int e = cgroup_events_empty(events_fd);
    if (e == 1) return 0;
    if (e < 0) return EIO;
    int64_t left = deadline - raw::now_ms();
    if (left <= 0) return ETIMEDOUT;
    // POLLPRI fires on every change of cgroup.events.
    pollfd pf{events_fd, POLLPRI, 0};
    int64_t wait = left < kRekillMs ? left : kRekillMs;
    timespec ts{0, static_cast<long>(wait) * 1'000'000};
    (void)raw_syscall(SYS_ppoll, reinterpret_cast<long>(&pf), 1, reinterpret_cast<long>(&ts), 0, 0);
    if (cgroup_events_empty(events_fd) == 1) return 0;
  }
}

int kill_and_remove_cgroup(int parent_fd, const char* name, int timeout_ms) noexcept {
  long dir = raw::openat(parent_fd, name, O_RDONLY | O_DIRECTORY);
  if (dir < 0) return dir == -ENOENT ? 0 : static_cast<int>(-dir);
  long events = raw::openat(static_cast<int>(dir), "cgroup.events", O_RDONLY);
  int err = 0;
  if (events < 0) {
    (void)kill_cgroup(static_cast<int>(dir));  // killed all the same, though not confirmed
    err = static_cast<int>(-events);
  } else {
    err = kill_cgroup_until_empty(static_cast<int>(dir), static_cast<int>(events), timeout_ms);
    (void)thaw_cgroup(static_cast<int>(dir));
  }
  if (events >= 0) raw::close(events);
  raw::close(dir);
  if (err != 0) return err;
  return remove_tree(parent_fd, name, 0);
}

}  // namespace pmon::confine
