// SPDX-License-Identifier: Apache-2.0
// The floor of a call in a cgroup leaf of its own, for bench_wall_time:
// what `tini -s -- CMD` does (become a subreaper, start CMD, wait for it),
// plus the bare system calls a leaf needs and nothing else: find our own
// cgroup (/proc/self/cgroup and the cgroup2 mount), mkdir the leaf, start
// CMD into it (clone3 with CLONE_INTO_CGROUP, a fork as tini's), and rmdir
// the leaf once CMD is reaped. No guard, no checks, no report: what is left
// between this and `pmon run --confine cgroup` is pmon's own.
//
//   bench_cgroup_floor [ANYTHING...] -- CMD [ARG...]
//
// (Whatever comes before "--" is ignored, so bench_wall_time's --alt can run
// it as it runs a pmon binary.) Plain libc only, linked as tini is.
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int main(int argc, char** argv) {
  int cmd = 1;
  while (cmd < argc && std::strcmp(argv[cmd], "--") != 0) ++cmd;
  if (++cmd >= argc) {
    std::fputs("usage: bench_cgroup_floor [ANYTHING...] -- CMD [ARG...]\n", stderr);
    return 125;
  }
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);

  // Our cgroup: the "0::" line of /proc/self/cgroup, below the cgroup2 mount.
  char self[4096];
  int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, self, sizeof self - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) return 125;
  self[n] = '\0';
  char* own = std::strstr(self, "0::");
  if (own == nullptr || (own != self && own[-1] != '\n')) return 125;
  own += 3;
  own[std::strcspn(own, "\n")] = '\0';
  struct statfs sf;
  const char* mount = "/sys/fs/cgroup/unified";
  if (statfs(mount, &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC) mount = "/sys/fs/cgroup";
  char leaf[4096 + 64];
  std::snprintf(leaf, sizeof leaf, "%s%s/floor-%d", mount, std::strcmp(own, "/") == 0 ? "" : own,
                static_cast<int>(getpid()));
  if (mkdir(leaf, 0755) != 0) {
    std::perror("mkdir");
    return 125;
  }
  int leaf_fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  clone_args ca{};
  ca.flags = CLONE_INTO_CGROUP;
  ca.exit_signal = SIGCHLD;
  ca.cgroup = static_cast<__u64>(leaf_fd);
  long pid = syscall(SYS_clone3, &ca, sizeof ca);
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execv(argv[cmd], argv + cmd);
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  int code = 125;
  if (pid > 0) {
    for (;;) {
      int st;
      pid_t r = waitpid(-1, &st, 0);
      if (r < 0) break;
      if (r == pid) code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
  }
  close(leaf_fd);
  (void)rmdir(leaf);
  return code;
}
