// SPDX-License-Identifier: Apache-2.0
// pdeathsig_probe [--mark FILE] [--wait]
// Prints "pdeathsig=N" (PR_GET_PDEATHSIG as this exec'd image sees it).
// --mark: creates FILE first ("useful work" a stopped child must not do).
// --wait: then answers each line on stdin with "alive", until EOF.
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  bool wait = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--wait") == 0) {
      wait = true;
    } else if (std::strcmp(argv[i], "--mark") == 0 && i + 1 < argc) {
      int fd = ::open(argv[++i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) ::close(fd);
    }
  }
  int sig = -1;
  if (::prctl(PR_GET_PDEATHSIG, &sig, 0UL, 0UL, 0UL) != 0) return 2;
  std::printf("pdeathsig=%d\n", sig);
  std::fflush(stdout);
  if (!wait) return 0;
  char line[256];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    std::puts("alive");
    std::fflush(stdout);
  }
  return 0;
}
