// SPDX-License-Identifier: Apache-2.0
// What a process inherited, for the fd-leak and signal-reset tests.
//
//   list_fds OUT            writes "fd target" for every open fd, then the
//                           SigBlk/SigIgn lines of /proc/self/status, to OUT
//   list_fds --hostile -- CMD [ARG...]
//                           blocks every signal and ignores SIGPIPE, SIGINT
//                           and SIGQUIT, then execs CMD: a careless caller
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The listing is taken before OUT is opened, so OUT itself is not in it.
std::string list_open_fds() {
  std::string out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    std::perror("list_fds: /proc/self/fd");
    std::exit(2);
  }
  const int own = ::dirfd(dir);
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    char target[PATH_MAX];
    std::string link = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    target[n < 0 ? 0 : n] = '\0';
    out += std::to_string(fd) + " " + target + "\n";
  }
  ::closedir(dir);
  return out;
}

std::string signal_lines() {
  std::string out;
  FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "SigBlk:", 7) == 0 || std::strncmp(line, "SigIgn:", 7) == 0) out += line;
  std::fclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--hostile") == 0 && std::strcmp(argv[2], "--") == 0) {
    sigset_t all;
    sigfillset(&all);
    (void)sigprocmask(SIG_BLOCK, &all, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGQUIT}) (void)signal(sig, SIG_IGN);
    ::execvp(argv[3], argv + 3);
    std::perror("list_fds: exec");
    return 127;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: list_fds OUT | list_fds --hostile -- CMD [ARG...]\n");
    return 2;
  }
  std::string text = list_open_fds() + signal_lines();
  FILE* out = std::fopen(argv[1], "we");
  if (out == nullptr || std::fputs(text.c_str(), out) < 0 || std::fclose(out) != 0) {
    std::perror("list_fds: write");
    return 2;
  }
  return 0;
}
