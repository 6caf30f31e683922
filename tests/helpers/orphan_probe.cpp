// SPDX-License-Identifier: Apache-2.0
// orphan_probe OUT -- CMD [ARG...]
//
// Runs CMD (pmon) as a child of a subreaper that never reaps anything but CMD
// until CMD is over. Whatever CMD leaves behind when it exits — live
// processes and zombies it never reaped — is reparented here, and because the
// kernel finishes that reparenting before CMD's exit is reported, the list is
// exact, not a race. Each is written to OUT as "pid start_time state ppid
// cmdline"; then zombies are reaped (live ones are left for the test to kill
// by pid + start time). Exits with CMD's status (128+N for a signal).
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Fields of /proc/PID/stat after the comm: [0] = state (field 3).
bool read_stat(pid_t pid, char* state, pid_t* ppid, unsigned long long* start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  int pp = 0;
  if (std::sscanf(p + 2, "%c %d", state, &pp) != 2) return false;
  *ppid = pp;
  for (int i = 2; i < 22; ++i) {
    p = std::strchr(p + 1, ' ');
    if (!p) return false;
  }
  *start = std::strtoull(p + 1, nullptr, 10);
  return true;
}

std::string cmdline(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return "?";
  char buf[256];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  for (size_t i = 0; i < n; ++i)
    if (buf[i] == '\0' || buf[i] == '\n') buf[i] = ' ';
  buf[n] = '\0';
  return n ? std::string(buf) : "[zombie]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: orphan_probe OUT -- CMD [ARG...]\n");
    return 2;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0) {
    std::perror("orphan_probe: prctl");
    return 2;
  }
  FILE* out = std::fopen(argv[1], "we");
  if (!out) {
    std::perror("orphan_probe: OUT");
    return 2;
  }
  pid_t cmd = fork();
  if (cmd < 0) return 2;
  if (cmd == 0) {
    execvp(argv[3], argv + 3);
    std::perror("orphan_probe: exec");
    _exit(127);
  }
  int status = 0;
  while (waitpid(cmd, &status, 0) < 0) {
    if (errno != EINTR) return 2;
  }
  const pid_t self = getpid();
  DIR* d = opendir("/proc");
  if (!d) return 2;
  std::string zombies;
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    char state = '?';
    pid_t ppid = 0;
    unsigned long long start = 0;
    if (pid <= 0 || !read_stat(pid, &state, &ppid, &start) || ppid != self) continue;
    std::fprintf(out, "%d %llu %c %d %s\n", pid, start, state, ppid, cmdline(pid).c_str());
  }
  closedir(d);
  std::fclose(out);
  // Reap the zombies only (WNOHANG): live leftovers stay for the test.
  siginfo_t si;
  for (;;) {
    si.si_pid = 0;
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) != 0 || si.si_pid == 0) break;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
