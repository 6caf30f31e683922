// SPDX-License-Identifier: Apache-2.0
// init_zombie_storm WAVES PER_WAVE [WITNESS]
// A zombie storm: each wave is a parent that forks PER_WAVE children which
// exit at once, never waits for them, and exits itself, so its zombies are
// reparented to the nearest subreaper or init. Prints how many were forked.
// With WITNESS, each wave also forks one child that waits for its parent to
// exit and appends its new parent's pid (getppid(), as its own pid namespace
// numbers it) to WITNESS before it exits too: who adopted the wave.
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return 2;
  int waves = std::atoi(argv[1]), per = std::atoi(argv[2]);
  const char* witness = argc == 4 ? argv[3] : nullptr;
  int total = 0;
  for (int w = 0; w < waves; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) return 2;
    pid_t p = ::fork();
    if (p < 0) return 2;
    if (p == 0) {
      ::close(fds[0]);
      if (witness != nullptr && ::fork() == 0) {
        pid_t parent = ::getppid();
        const timespec tick{0, 1'000'000};
        for (int i = 0; i < 20000 && ::getppid() == parent; ++i) ::nanosleep(&tick, nullptr);
        std::string line = std::to_string(::getppid()) + "\n";
        int fd = ::open(witness, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
          (void)!::write(fd, line.data(), line.size());
          ::close(fd);
        }
        ::_exit(0);
      }
      int n = 0;
      for (int i = 0; i < per; ++i) {
        pid_t c = ::fork();
        if (c == 0) ::_exit(0);
        if (c > 0) ++n;
      }
      (void)!::write(fds[1], &n, sizeof n);
      ::_exit(0);  // without a single wait()
    }
    ::close(fds[1]);
    int n = 0;
    if (::read(fds[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n)) total += n;
    ::close(fds[0]);
    while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  std::printf("%d\n", total);
  return 0;
}
