// SPDX-License-Identifier: Apache-2.0
// pid_recycler PID START OUT [DEADLINE_MS]
//
// An outside process that steals a recycled pid. It waits for the process
// (PID, START) to die and be reaped, then creates a "stranger" that holds the
// same number: with clone3(set_tid) where it may (root in the pid namespace),
// else by forking until the kernel hands out PID again (pid_max wraps). The
// stranger calls setsid(), so its pid, process group and session all carry
// the recycled number, then sleeps. Once it exists, OUT gets
// "pid start_time realtime_ns method" (atomically, via rename). The recycler
// then waits for the stranger; the test kills it by pid + start time.
// Exit: 0 stranger made (and later ended), 3 deadline passed, 2 error.
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

unsigned long long start_time_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  for (int i = 2; i < 22; ++i) {
    p = std::strchr(p + 1, ' ');
    if (!p) return 0;
  }
  return std::strtoull(p + 1, nullptr, 10);
}

int64_t now_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

[[noreturn]] void be_stranger() {
  (void)setsid();
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; fd >= 0 && i < 3; ++i) dup2(fd, i);
  timespec ts{600, 0};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  _exit(0);
}

// clone3 with set_tid: exactly `target`, or an error (EEXIST while the number
// is still taken, EPERM without CAP_CHECKPOINT_RESTORE).
pid_t clone_at(pid_t target) {
  clone_args args{};
  pid_t tid = target;
  args.exit_signal = SIGCHLD;
  args.set_tid = reinterpret_cast<uintptr_t>(&tid);
  args.set_tid_size = 1;
  long r = syscall(SYS_clone3, &args, sizeof args);
  if (r == 0) be_stranger();
  return static_cast<pid_t>(r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pid_recycler PID START OUT [DEADLINE_MS]\n");
    return 2;
  }
  const pid_t target = static_cast<pid_t>(std::atoi(argv[1]));
  const unsigned long long start = std::strtoull(argv[2], nullptr, 10);
  const std::string out = argv[3];
  const int64_t deadline =
      now_ns(CLOCK_MONOTONIC) + (argc > 4 ? std::atoll(argv[4]) : 10000) * 1'000'000LL;

  // Wait for the original to die; its pidfd is readable once it has exited.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, target, 0));
  if (pidfd >= 0 && start_time_of(target) == start) {
    pollfd p{pidfd, POLLIN, 0};
    while (poll(&p, 1, 10) == 0 || (p.revents == 0)) {
      if (now_ns(CLOCK_MONOTONIC) > deadline) return 3;
    }
  }
  if (pidfd >= 0) close(pidfd);

  pid_t stranger = -1;
  const char* method = "set_tid";
  bool use_fork = false;
  while (stranger < 0) {
    if (now_ns(CLOCK_MONOTONIC) > deadline) return 3;
    if (!use_fork) {
      pid_t r = clone_at(target);
      if (r > 0) {
        stranger = r;
        break;
      }
      if (errno == EEXIST) {  // still a zombie somewhere: not reaped yet
        usleep(200);
        continue;
      }
      use_fork = true;
      method = "fork-cycle";
    }
    // Fork until the kernel hands out `target`; every other child leaves at once.
    pid_t r = fork();
    if (r < 0) {
      usleep(1000);
      continue;
    }
    if (r == 0) {
      if (getpid() == target) be_stranger();
      _exit(0);
    }
    if (r == target) {
      stranger = r;
      break;
    }
    (void)waitpid(r, nullptr, 0);
  }
  unsigned long long st = 0;
  for (int i = 0; i < 1000 && st == 0; ++i) st = start_time_of(stranger);
  std::string line = std::to_string(stranger) + " " + std::to_string(st) + " " +
                     std::to_string(now_ns(CLOCK_REALTIME)) + " " + method + "\n";
  std::string tmp = out + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "we");
  if (!f) return 2;
  std::fputs(line.c_str(), f);
  std::fclose(f);
  if (std::rename(tmp.c_str(), out.c_str()) != 0) return 2;
  while (waitpid(stranger, nullptr, 0) < 0 && errno == EINTR) {
  }
  return 0;
}
